#pragma once

#include "core/replay/replay.hpp"

#include <string_view>

// One event's decision in a replay, as a pure table over the facts the runner gathered for it
// (commands/pipeline/replay.cpp counts and logs what it says). docs/design.md "Replay protocol".
namespace dedupctl::core {

struct DecisionFacts {
  bool has_id = true;           // an id was taken (and a key rendered)
  bool first_of_key = true;     // the key's first event in the range, and no earlier chunk in flight has it
  Claim claim = Claim::Claimed; // what claiming the key (or, in a plan, looking at it) found
  bool execute = false;         // --execute; a plan otherwise
  bool delivered = false;       // a run: the sink confirmed the key's record
  bool found_in_sink = false;   // a run: an interrupted run had published it after its checkpoint
  bool repair = false;          // --repair-lost: a Claimed key is a lost event whose record was released
  bool guard = false;           // --via a version guard: Claimed is an event it applies, Done one it drops
  bool states = false;          // with guard: a state guard's (--layout state-guard)
};

// Why, in a word the runner counts by; reason_text gives the words the decisions file shows.
enum class DecisionWhy {
  NoId,             // no event id (the runner says why)
  KeyEarlier,       // its key came earlier in the range
  Unfit,            // the placement cannot hold the id (the runner says what it holds)
  ClaimedElsewhere, // another run or the consumer holds the claim
  RecordExists,     // a dedup record exists
  NoRecord,         // a plan: nothing guards it, it would be published
  Lost,             // --repair-lost, a plan: lost, its record would be released and it published
  Repaired,         // --repair-lost: its record released and the event published
  RepairedRetried,  // --repair-lost: released by the interrupted run (its log), published
  OwnStale,         // a plan: this run's claim from before an interruption, retried
  Published,
  PublishedRetried, // published on this run's unfinished claim
  AlreadyInSink,    // an interrupted run had published it: settled, not published again
  DeliveryFailed,   // the sink refused it; its claim is released (the runner adds the sink's error)
  NotLost,          // --repair-lost: not a lost event
  RecordChanged,    // --repair-lost: its record changed since it was read
  GuardApplies,     // a version guard, a plan: above the projection, it would be published and applied
  GuardDrops,       // a version guard: the projection, or a version applied before it, is at or above its own
  StateApplies,     // a state guard, a plan: its entity is (or will be) in a state it moves from
  StateDrops,       // a state guard: its entity is in no state it moves from when the consumer meets it
};

struct DecisionOutcome {
  Decision decision = Decision::SkippedDuplicate;
  DecisionWhy why = DecisionWhy::RecordExists;
  bool publish = false; // published by this run, or would be by the plan
};

DecisionOutcome decide_replay(const DecisionFacts& facts);

// The words of a reason that needs nothing from the run; "" for NoId, Unfit and DeliveryFailed.
std::string_view reason_text(DecisionWhy why);

} // namespace dedupctl::core
