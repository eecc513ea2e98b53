#include "core/replay/replay.hpp"
#include "core/store/layout.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace dedupctl::core {
namespace {

TEST(Replay, APlanClaimsAbsentKeysAndSkipsRecordsAndOthersClaims) {
  std::vector<std::string> markers{"processing"};
  EXPECT_EQ(plan_claim(RecordState{}, markers), Claim::Claimed);
  RecordState done = present_record(1000, "done");
  EXPECT_EQ(plan_claim(done, markers), Claim::Done);
  RecordState claimed = present_record(1000, "processing:run-7");
  EXPECT_EQ(plan_claim(claimed, markers), Claim::HeldByOther);
}

TEST(Replay, DecisionsAreOneJsonObjectALineWithEscapes) {
  DecisionRecord record{"e-\"1\"\n", "orders", 3, 42, Decision::SkippedDuplicate, "a record exists"};
  std::string line = format_decision(record);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto doc = nlohmann::json::parse(line);
  EXPECT_EQ(doc.at("event_id"), "e-\"1\"\n");
  EXPECT_EQ(doc.at("topic"), "orders");
  EXPECT_EQ(doc.at("partition"), 3);
  EXPECT_EQ(doc.at("offset"), 42);
  EXPECT_EQ(doc.at("decision"), "skipped-duplicate");
  EXPECT_EQ(doc.at("reason"), "a record exists");
}

// An id that is not UTF-8: the line is still JSON, with the id's bytes beside its text.
TEST(Replay, ADecisionOfAnIdThatIsNotUtf8IsStillJsonWithItsBytes) {
  DecisionRecord record{"k-\xc3\x28-\xff", "orders", 0, 1, Decision::WouldReplay, "no record"};
  auto doc = nlohmann::json::parse(format_decision(record)); // throws on invalid UTF-8
  EXPECT_EQ(doc.at("event_id"), "k-\xef\xbf\xbd(-\xef\xbf\xbd");
  EXPECT_EQ(doc.at("event_id_base64"), "ay3DKC3/");
  EXPECT_FALSE(nlohmann::json::parse(format_decision(DecisionRecord{"e-1", "orders", 0, 1, Decision::WouldReplay, ""}))
                   .contains("event_id_base64"));
}

TEST(Replay, ACheckpointRoundTrips) {
  Checkpoint checkpoint;
  checkpoint.run_id = "r-123";
  checkpoint.sink = "kafka:orders-replay";
  checkpoint.sink_position = "0:10,1:7";
  checkpoint.set("orders", 0, 11);
  checkpoint.set("orders", 1, 5);
  checkpoint.set("orders", 0, 12);
  Checkpoint parsed;
  std::string error;
  ASSERT_TRUE(parse_checkpoint(format_checkpoint(checkpoint), parsed, error)) << error;
  EXPECT_EQ(parsed.run_id, "r-123");
  EXPECT_EQ(parsed.sink, "kafka:orders-replay");
  EXPECT_EQ(parsed.sink_position, "0:10,1:7");
  EXPECT_EQ(parsed.next_offset("orders", 0), 12);
  EXPECT_EQ(parsed.next_offset("orders", 1), 5);
  EXPECT_FALSE(parsed.next_offset("orders", 2));
  EXPECT_EQ(parsed.partitions.size(), 2u);
}

TEST(Replay, ABadCheckpointNamesItsLine) {
  Checkpoint parsed;
  std::string error;
  EXPECT_FALSE(parse_checkpoint("", parsed, error));
  EXPECT_FALSE(parse_checkpoint("{\"not\": 1}\n", parsed, error));
  EXPECT_NE(error.find("line 1: not a dedupctl replay checkpoint"), std::string::npos) << error;
  EXPECT_FALSE(parse_checkpoint("# dedupctl-replay-checkpoint v1\nrun\tr\norders\tx\t1\n", parsed, error));
  EXPECT_NE(error.find("line 3"), std::string::npos) << error;
  EXPECT_FALSE(parse_checkpoint("# dedupctl-replay-checkpoint v1\norders\t0\t1\n", parsed, error));
  EXPECT_NE(error.find("no run line"), std::string::npos) << error;
  EXPECT_FALSE(parse_checkpoint("# dedupctl-replay-checkpoint v1\nrun\tr\norders\t0\t-1\n", parsed, error));
}

TEST(Replay, TheMemoryWindowRemembersRecentKeysExactlyAndEvictedOnesInItsFilter) {
  MemoryWindow window(3, 1 << 16);
  EXPECT_FALSE(window.seen_or_add("a"));
  EXPECT_TRUE(window.seen_or_add("a"));
  EXPECT_FALSE(window.seen_or_add("b"));
  EXPECT_FALSE(window.seen_or_add("c"));
  EXPECT_FALSE(window.seen_or_add("d")); // evicts a, the least recently seen
  EXPECT_TRUE(window.seen_or_add("a")) << "evicted into the filter, still seen";
  EXPECT_TRUE(window.seen_or_add("b"));
  EXPECT_GT(window.false_positive_rate(), 0.0);
  EXPECT_LT(window.false_positive_rate(), 1e-6);
}

TEST(Replay, AForgottenKeyIsNewAgainAndTheFilterErrsOnlyTowardsSkipping) {
  MemoryWindow window(100, 1 << 12);
  EXPECT_FALSE(window.seen_or_add("x"));
  window.forget("x");
  EXPECT_FALSE(window.seen_or_add("x"));
  // A tiny filter saturates: every key beyond the window then looks seen (skipped, never published twice).
  MemoryWindow tiny(1, 64);
  int seen = 0;
  for (int i = 0; i < 1000; ++i) {
    seen += tiny.seen_or_add("k" + std::to_string(i)) ? 1 : 0;
  }
  EXPECT_GT(seen, 900);
  EXPECT_GT(tiny.false_positive_rate(), 0.5);
}

} // namespace
} // namespace dedupctl::core

namespace dedupctl::core {
namespace {

TEST(ReplayFindings, OneFindingPerKindOfTroubleWithItsCountAndExamples) {
  ReplayRun run;
  run.sink = "kafka:out";
  run.failed = 2;
  run.id_unfit = 1;
  FindingBuilder failed(5), unfit(5), claimed(5);
  EXPECT_TRUE(replay_findings(run, "uuid", failed, unfit, claimed).empty()) << "nothing counted, nothing found";
  auto example = [](std::string id) {
    Example ex;
    ex.event_id = std::move(id);
    return ex;
  };
  failed.add(0, [&] { return example("a"); });
  failed.add(1, [&] { return example("b"); });
  unfit.add(0, [&] { return example("not-a-uuid"); });
  auto findings = replay_findings(run, "the inbox's id column is uuid", failed, unfit, claimed);
  ASSERT_EQ(findings.size(), 2u);
  EXPECT_EQ(findings[0].id, "replay-failed");
  EXPECT_EQ(findings[0].severity, Severity::Error);
  EXPECT_EQ(findings[0].count, 2);
  EXPECT_EQ(findings[0].title, "2 events could not be delivered to kafka:out; their claims were released");
  EXPECT_EQ(findings[1].id, "replay-id-unfit");
  EXPECT_EQ(findings[1].severity, Severity::Warning);
  EXPECT_NE(findings[1].title.find("(the inbox's id column is uuid)"), std::string::npos);
  EXPECT_EQ(findings[1].examples[0].event_id, "not-a-uuid");
}

TEST(ReplayFindings, ThePlacementNotesSayWhatTheyMiss) {
  EXPECT_EQ(no_dedup_finding().id, "replay-without-dedup");
  EXPECT_EQ(no_dedup_finding().severity, Severity::Warning);
  auto memory = memory_placement_finding(1000, 16u * 8 * 1024 * 1024);
  EXPECT_EQ(memory.id, "memory-placement");
  EXPECT_EQ(memory.title,
            "the memory: placement remembers the last 1000 keys exactly and older ones in a 16 MiB Bloom filter");
}

} // namespace
} // namespace dedupctl::core

namespace dedupctl::core {
namespace {

RecordState powertools(std::string_view value) {
  static RecordLayout layout = find_layout("powertools-python");
  RecordState state = present_record(3600000, value);
  read_record_value(layout, value, state);
  return state;
}

// What Powertools does on finding a record when it claims, the replay does: a completed record is a
// duplicate until its expiration, a claim within its lease another's, this run's claim its own, and
// the rest (expired, lease run out, not its shape) taken over as the library does under KEY:lock.
TEST(Replay, AJsonLayoutsFoundRecordIsJudgedAsTheLibraryJudgesIt) {
  const std::int64_t now = 1795803000000;
  RecordState done = powertools(R"({"data": "{}", "status": "COMPLETED", "expiration": 1795806842})");
  EXPECT_EQ(claim_found(done, false, now), Claim::Done);
  EXPECT_EQ(claim_found(done, false, 1795806843000), Claim::Claimed) << "expired, though the key is there";
  RecordState leased = powertools(R"({"status": "INPROGRESS", "expiration": 1795806846, "in_progress_expiration": )"
                                  R"(1795803251703})");
  EXPECT_EQ(claim_found(leased, false, now), Claim::HeldByOther);
  EXPECT_EQ(claim_found(leased, false, 1795803251703), Claim::Claimed) << "an orphan";
  EXPECT_EQ(claim_found(leased, true, now), Claim::OwnStale);
  RecordState no_lease = powertools(R"({"status": "INPROGRESS", "expiration": 1795806846})");
  EXPECT_EQ(claim_found(no_lease, false, now), Claim::HeldByOther) << "Python waits for the key to expire";
  EXPECT_EQ(claim_found(powertools("not json"), false, now), Claim::Claimed) << "a consistency error: taken over";
  EXPECT_EQ(claim_found(powertools(R"({"status": "EXPIRED", "expiration": 1795806842})"), false, now), Claim::Claimed);
  EXPECT_EQ(claim_found(powertools(R"({"expiration": 1795806842})"), false, now), Claim::HeldByOther)
      << "the library fails on a record without a status: left to it, never taken over";
  EXPECT_EQ(claim_found(powertools(R"({"status": "nonsense", "expiration": 17})"), false, now), Claim::Claimed)
      << "expired first";
  EXPECT_EQ(claim_found(RecordState{}, false, now), Claim::Claimed);
}

} // namespace
} // namespace dedupctl::core
