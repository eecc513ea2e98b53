#include "core/replay/decision.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dedupctl::core {
namespace {

struct Row {
  const char* name;
  DecisionFacts facts;
  Decision decision;
  DecisionWhy why;
  bool publish;
};

DecisionFacts plan(Claim claim) { return DecisionFacts{true, true, claim, false, false, false}; }
DecisionFacts run(Claim claim, bool delivered, bool found_in_sink = false) {
  return DecisionFacts{true, true, claim, true, delivered, found_in_sink};
}

void expect_rows(const std::vector<Row>& rows) {
  for (const auto& row : rows) {
    auto outcome = decide_replay(row.facts);
    EXPECT_EQ(outcome.decision, row.decision) << row.name << ": " << to_string(outcome.decision);
    EXPECT_EQ(outcome.why, row.why) << row.name;
    EXPECT_EQ(outcome.publish, row.publish) << row.name;
  }
}

// Every row of the replay protocol's decision (docs/design.md "Replay protocol"), in a plan and in a
// run: what is decided, why, and whether the event is (or would be) published.
TEST(ReplayDecision, EveryRowOfTheTable) {
  DecisionFacts no_id = plan(Claim::Claimed);
  no_id.has_id = false;
  DecisionFacts no_id_run = run(Claim::Claimed, true);
  no_id_run.has_id = false;
  DecisionFacts later = plan(Claim::Claimed);
  later.first_of_key = false;
  DecisionFacts later_run = run(Claim::Claimed, true);
  later_run.first_of_key = false;
  const std::vector<Row> rows{
      {"no id (plan)", no_id, Decision::NoId, DecisionWhy::NoId, false},
      {"no id (run)", no_id_run, Decision::NoId, DecisionWhy::NoId, false},
      {"key earlier in the range (plan)", later, Decision::WouldSkip, DecisionWhy::KeyEarlier, false},
      {"key earlier in the range (run)", later_run, Decision::SkippedDuplicate, DecisionWhy::KeyEarlier, false},
      {"unfit (plan)", plan(Claim::Unfit), Decision::IdUnfit, DecisionWhy::Unfit, false},
      {"unfit (run)", run(Claim::Unfit, false), Decision::IdUnfit, DecisionWhy::Unfit, false},
      {"claimed by another (plan)", plan(Claim::HeldByOther), Decision::WouldSkip, DecisionWhy::ClaimedElsewhere,
       false},
      {"claimed by another (run)", run(Claim::HeldByOther, false), Decision::SkippedClaimed,
       DecisionWhy::ClaimedElsewhere, false},
      {"a record exists (plan)", plan(Claim::Done), Decision::WouldSkip, DecisionWhy::RecordExists, false},
      {"a record exists (run)", run(Claim::Done, false), Decision::SkippedDuplicate, DecisionWhy::RecordExists, false},
      {"no record (plan)", plan(Claim::Claimed), Decision::WouldReplay, DecisionWhy::NoRecord, true},
      {"own stale claim (plan)", plan(Claim::OwnStale), Decision::WouldReplay, DecisionWhy::OwnStale, true},
      {"published", run(Claim::Claimed, true), Decision::Replayed, DecisionWhy::Published, true},
      {"own stale claim, published", run(Claim::OwnStale, true), Decision::Replayed, DecisionWhy::PublishedRetried,
       true},
      {"already in the sink", run(Claim::Claimed, true, true), Decision::Replayed, DecisionWhy::AlreadyInSink, true},
      {"own stale claim, already in the sink", run(Claim::OwnStale, true, true), Decision::Replayed,
       DecisionWhy::AlreadyInSink, true},
      {"delivery failed", run(Claim::Claimed, false), Decision::Failed, DecisionWhy::DeliveryFailed, false},
      {"own stale claim, delivery failed", run(Claim::OwnStale, false), Decision::Failed, DecisionWhy::DeliveryFailed,
       false},
  };
  expect_rows(rows);
}

// An event without an id is decided by that alone, whatever else is set.
TEST(ReplayDecision, NoIdComesBeforeEverythingElse) {
  for (Claim claim : {Claim::Claimed, Claim::Done, Claim::HeldByOther, Claim::OwnStale, Claim::Unfit}) {
    for (bool execute : {false, true}) {
      DecisionFacts facts{false, false, claim, execute, true, true};
      EXPECT_EQ(decide_replay(facts).decision, Decision::NoId);
    }
  }
}

// A key that came earlier in the range is skipped before its claim is looked at: only the first
// event of a key is ever published.
TEST(ReplayDecision, AKeyIsPublishedForItsFirstEventOnly) {
  for (Claim claim : {Claim::Claimed, Claim::OwnStale, Claim::Unfit, Claim::HeldByOther}) {
    DecisionFacts facts = run(claim, true);
    facts.first_of_key = false;
    auto outcome = decide_replay(facts);
    EXPECT_EQ(outcome.why, DecisionWhy::KeyEarlier);
    EXPECT_FALSE(outcome.publish);
  }
}

// --repair-lost: a lost event (Claimed) is published and said so; what is not lost, or changed since
// it was read, is left as it is.
TEST(ReplayDecision, ARepairsRows) {
  auto repair = [](DecisionFacts facts) {
    facts.repair = true;
    return facts;
  };
  const std::vector<Row> rows{
      {"lost (plan)", repair(plan(Claim::Claimed)), Decision::WouldReplay, DecisionWhy::Lost, true},
      {"lost, released, published", repair(run(Claim::Claimed, true)), Decision::Replayed, DecisionWhy::Repaired, true},
      {"lost, delivery failed", repair(run(Claim::Claimed, false)), Decision::Failed, DecisionWhy::DeliveryFailed,
       false},
      {"not lost (plan)", repair(plan(Claim::NotLost)), Decision::WouldSkip, DecisionWhy::NotLost, false},
      {"not lost (run)", repair(run(Claim::NotLost, false)), Decision::SkippedNotLost, DecisionWhy::NotLost, false},
      {"changed since read", repair(run(Claim::Changed, false)), Decision::SkippedChanged, DecisionWhy::RecordChanged,
       false},
  };
  expect_rows(rows);
  EXPECT_EQ(to_string(Decision::SkippedNotLost), "skipped-not-lost");
  EXPECT_EQ(to_string(Decision::SkippedChanged), "skipped-changed");
}

// --via a version guard: an event it applies (Claimed) is published, one it drops (Done) skipped, each
// said as the guard's; what it cannot judge (Unfit) is never published.
TEST(ReplayDecision, AVersionGuardsRows) {
  auto guard = [](DecisionFacts facts) {
    facts.guard = true;
    return facts;
  };
  const std::vector<Row> rows{
      {"applies (plan)", guard(plan(Claim::Claimed)), Decision::WouldReplay, DecisionWhy::GuardApplies, true},
      {"applies, published", guard(run(Claim::Claimed, true)), Decision::Replayed, DecisionWhy::Published, true},
      {"applies, delivery failed", guard(run(Claim::Claimed, false)), Decision::Failed, DecisionWhy::DeliveryFailed,
       false},
      {"drops (plan)", guard(plan(Claim::Done)), Decision::WouldSkip, DecisionWhy::GuardDrops, false},
      {"drops (run)", guard(run(Claim::Done, false)), Decision::SkippedDuplicate, DecisionWhy::GuardDrops, false},
      {"not judged", guard(run(Claim::Unfit, false)), Decision::IdUnfit, DecisionWhy::Unfit, false},
  };
  expect_rows(rows);
  EXPECT_EQ(reason_text(DecisionWhy::GuardDrops),
            "a version guard drops it: the projection, or a version published before it, is at or above its own");
}

TEST(ReplayDecision, TheFixedReasonsAreWords) {
  EXPECT_EQ(reason_text(DecisionWhy::KeyEarlier), "its key came earlier in the range");
  EXPECT_EQ(reason_text(DecisionWhy::ClaimedElsewhere), "claimed in progress by another run or the consumer");
  EXPECT_EQ(reason_text(DecisionWhy::RecordExists), "a dedup record exists");
  EXPECT_EQ(reason_text(DecisionWhy::NoRecord), "no dedup record");
  EXPECT_EQ(reason_text(DecisionWhy::OwnStale), "this run's unfinished claim");
  EXPECT_EQ(reason_text(DecisionWhy::Published), "published");
  EXPECT_EQ(reason_text(DecisionWhy::PublishedRetried), "published; this run's unfinished claim retried");
  EXPECT_EQ(reason_text(DecisionWhy::AlreadyInSink), "already in the sink from the interrupted run");
  // The runner words these from what it knows: the id's trouble, the placement, the sink's error.
  EXPECT_EQ(reason_text(DecisionWhy::NoId), "");
  EXPECT_EQ(reason_text(DecisionWhy::Unfit), "");
  EXPECT_EQ(reason_text(DecisionWhy::DeliveryFailed), "");
}

} // namespace
} // namespace dedupctl::core
