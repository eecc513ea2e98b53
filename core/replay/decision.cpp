#include "core/replay/decision.hpp"

namespace dedupctl::core {

DecisionOutcome decide_replay(const DecisionFacts& facts) {
  const bool run = facts.execute;
  if (!facts.has_id) {
    return {Decision::NoId, DecisionWhy::NoId, false};
  }
  if (!facts.first_of_key) {
    return {run ? Decision::SkippedDuplicate : Decision::WouldSkip, DecisionWhy::KeyEarlier, false};
  }
  switch (facts.claim) {
  case Claim::Unfit:
    return {Decision::IdUnfit, DecisionWhy::Unfit, false};
  case Claim::HeldByOther:
    return {run ? Decision::SkippedClaimed : Decision::WouldSkip, DecisionWhy::ClaimedElsewhere, false};
  case Claim::Done:
    return {run ? Decision::SkippedDuplicate : Decision::WouldSkip,
            !facts.guard   ? DecisionWhy::RecordExists
            : facts.states ? DecisionWhy::StateDrops
                           : DecisionWhy::GuardDrops,
            false};
  case Claim::NotLost:
    return {run ? Decision::SkippedNotLost : Decision::WouldSkip, DecisionWhy::NotLost, false};
  case Claim::Changed:
    return {Decision::SkippedChanged, DecisionWhy::RecordChanged, false};
  case Claim::Claimed:
  case Claim::OwnStale:
    break;
  }
  const bool stale = facts.claim == Claim::OwnStale;
  if (!run) {
    return {Decision::WouldReplay,
            facts.repair  ? DecisionWhy::Lost
            : facts.guard ? (facts.states ? DecisionWhy::StateApplies : DecisionWhy::GuardApplies)
                          : (stale ? DecisionWhy::OwnStale : DecisionWhy::NoRecord),
            true};
  }
  if (!facts.delivered) {
    return {Decision::Failed, DecisionWhy::DeliveryFailed, false};
  }
  if (facts.found_in_sink) {
    return {Decision::Replayed, DecisionWhy::AlreadyInSink, true};
  }
  if (facts.repair) {
    return {Decision::Replayed, stale ? DecisionWhy::RepairedRetried : DecisionWhy::Repaired, true};
  }
  return {Decision::Replayed, stale ? DecisionWhy::PublishedRetried : DecisionWhy::Published, true};
}

std::string_view reason_text(DecisionWhy why) {
  switch (why) {
  case DecisionWhy::KeyEarlier:
    return "its key came earlier in the range";
  case DecisionWhy::ClaimedElsewhere:
    return "claimed in progress by another run or the consumer";
  case DecisionWhy::RecordExists:
    return "a dedup record exists";
  case DecisionWhy::NoRecord:
    return "no dedup record";
  case DecisionWhy::OwnStale:
    return "this run's unfinished claim";
  case DecisionWhy::Lost:
    return "lost: marked processed, its effect absent; its record would be released and the event published";
  case DecisionWhy::Repaired:
    return "lost: its record released, the event published for the consumer to apply";
  case DecisionWhy::RepairedRetried:
    return "lost: its record released by the interrupted run, the event published (again) for the consumer";
  case DecisionWhy::Published:
    return "published";
  case DecisionWhy::PublishedRetried:
    return "published; this run's unfinished claim retried";
  case DecisionWhy::AlreadyInSink:
    return "already in the sink from the interrupted run";
  case DecisionWhy::NotLost:
    return "not lost: its effect exists, or no record marks it processed";
  case DecisionWhy::RecordChanged:
    return "lost, but its record changed since it was read: left alone";
  case DecisionWhy::GuardApplies:
    return "above its entity's version in the projection and every version published before it: the guard applies "
           "it";
  case DecisionWhy::GuardDrops:
    return "a version guard drops it: the projection, or a version published before it, is at or above its own";
  case DecisionWhy::StateApplies:
    return "its entity is in a state it moves from when the consumer meets it (the projection's, or one a change "
           "published before it reached): the guard applies it";
  case DecisionWhy::StateDrops:
    return "a state guard drops it: its entity is in none of the states it moves from when the consumer meets it";
  case DecisionWhy::NoId:
  case DecisionWhy::Unfit:
  case DecisionWhy::DeliveryFailed:
    break;
  }
  return "";
}

} // namespace dedupctl::core
