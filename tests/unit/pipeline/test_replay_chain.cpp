// replay --via a chain of tiers: the claims go to one tier, the others are only read, each by its own
// key, and an event any of them holds is skipped as the consumer would skip it.
#include "commands/pipeline/replay.hpp"
#include "core/replay/chain.hpp"
#include "tests/unit/fakes.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

namespace dedupctl::commands {
namespace {

using dedupctl::testing::summary;
using testing::FakeDedupStore;
using testing::FakeEventSource;
using testing::FakeJournal;
using testing::FakePlacement;
using testing::FakeSink;
using testing::with_header_id;

ReplayRequest chain_request(bool execute, FakeJournal& journal) {
  ReplayRequest r;
  r.execute = execute;
  r.run_id = "run-1";
  r.key_template = core::KeyTemplate::parse("dedup:{event_id}");     // the claiming tier's (Redis)
  r.second_key_templates = {core::KeyTemplate::parse("{event_id}")}; // the inbox's, read only
  r.journal = &journal;
  return r;
}

core::ChainPlacement::Reader inbox_reader(FakeDedupStore& inbox) {
  return {"tier 2 (postgresql://db/app)", &inbox,
          [](const core::RecordState& record) { return core::plan_claim(record, {"processing"}); }};
}

std::vector<testing::OwnedEvent> log_of(std::initializer_list<const char*> ids) {
  std::vector<testing::OwnedEvent> out;
  std::int64_t offset = 0;
  for (const char* id : ids) {
    out.push_back(with_header_id(0, offset, 1000 + offset, id, "{}"));
    ++offset;
  }
  return out;
}

TEST(ReplayChain, AnEventAReadTierHoldsIsSkippedAndOnlyTheRestIsClaimedInTheClaimingTier) {
  FakePlacement redis;
  redis.records["dedup:d"] = "done"; // the claiming tier's own record
  FakeDedupStore inbox;
  inbox.records["b"] = {std::nullopt, "done"};
  inbox.records["c"] = {std::nullopt, "processing"}; // the consumer's claim: held, not replayed
  core::ChainPlacement chain(redis, "tier 1 (redis://cache:6379)", {inbox_reader(inbox)});
  FakeEventSource source(log_of({"a", "b", "c", "d", "e"}));
  FakeSink sink;
  FakeJournal journal;
  auto report = run_replay(chain_request(true, journal), source, chain, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(report.exit_code, 0) << "c is held by the consumer's claim: a warning";
  EXPECT_EQ(summary(report, "replayed"), 2);
  EXPECT_EQ(summary(report, "skipped_duplicate"), 2) << "b in the inbox, d in Redis";
  EXPECT_EQ(summary(report, "skipped_claimed"), 1);
  EXPECT_EQ(sink.ids(), (std::multiset<std::string>{"a", "e"}));
  EXPECT_EQ(redis.claims, 3) << "a, d and e reach the claiming tier; b and c never do";
  EXPECT_EQ(redis.records.count("dedup:b"), 0u) << "a read tier's event is not recorded in the claiming one";
  EXPECT_EQ(redis.records.at("dedup:a"), "done");
  EXPECT_EQ(inbox.records.size(), 2u) << "a read tier is never written";
  EXPECT_EQ(inbox.batch_sizes, (std::vector<std::size_t>{2, 2, 1}))
      << "one lookup a chunk (the source reads 2 events a batch)";
  EXPECT_EQ(chain.held_by_readers(), (std::vector<std::int64_t>{2}));
  const core::Finding* note = nullptr;
  for (const auto& f : report.findings) {
    note = f.id == "replay-via-chain" ? &f : note;
  }
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->severity, core::Severity::Info);
  EXPECT_NE(note->title.find("claims in tier 1 (redis://cache:6379)"), std::string::npos) << note->title;
  EXPECT_NE(note->title.find("tier 2 (postgresql://db/app) held 2"), std::string::npos) << note->title;
}

TEST(ReplayChain, APlanSaysWhatTheChainWouldSkipAndChangesNothing) {
  FakePlacement redis;
  FakeDedupStore inbox;
  inbox.records["b"] = {std::nullopt, "done"};
  core::ChainPlacement chain(redis, "tier 1 (redis://cache:6379)", {inbox_reader(inbox)});
  FakeEventSource source(log_of({"a", "b", "c"}));
  FakeJournal journal;
  auto report = run_replay(chain_request(false, journal), source, chain, nullptr, core::SourceInfo{}, 0);
  EXPECT_EQ(summary(report, "would_replay"), 2);
  EXPECT_EQ(summary(report, "would_skip"), 1);
  EXPECT_EQ(redis.claims, 0);
  EXPECT_TRUE(redis.records.empty());
}

TEST(ReplayChain, AChunkEveryEventOfWhichAReadTierHoldsNeverReachesTheClaimingTier) {
  FakePlacement redis;
  FakeDedupStore inbox;
  inbox.records["a"] = {std::nullopt, "done"};
  inbox.records["b"] = {std::nullopt, "done"};
  core::ChainPlacement chain(redis, "tier 1 (redis://cache:6379)", {inbox_reader(inbox)});
  FakeEventSource source(log_of({"a", "b"}));
  FakeSink sink;
  FakeJournal journal;
  auto report = run_replay(chain_request(true, journal), source, chain, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(report.exit_code, 0);
  EXPECT_EQ(summary(report, "replayed"), 0);
  EXPECT_EQ(redis.claims, 0) << "nothing was claimed there";
  EXPECT_EQ(redis.settles, 0) << "nor settled: the tier was never asked";
  EXPECT_TRUE(redis.records.empty());
}

TEST(ReplayChain, OnlyTheChunksTheClaimingTierWasAskedAreSettledThere) {
  FakePlacement redis;
  FakeDedupStore inbox;
  inbox.records["a"] = {std::nullopt, "done"};
  inbox.records["b"] = {std::nullopt, "done"};
  core::ChainPlacement chain(redis, "tier 1 (redis://cache:6379)", {inbox_reader(inbox)});
  FakeEventSource source(log_of({"a", "b", "c", "d", "e", "f"})); // chunks [a b] held, [c d], [e f]
  FakeSink sink;
  FakeJournal journal;
  auto report = run_replay(chain_request(true, journal), source, chain, &sink, core::SourceInfo{}, 0);
  EXPECT_EQ(summary(report, "replayed"), 4);
  EXPECT_EQ(redis.settled, (std::vector<std::vector<std::string>>{{"dedup:c", "dedup:d"}, {"dedup:e", "dedup:f"}}))
      << "the first chunk, which the inbox held whole, is not the claiming tier's to settle";
  EXPECT_EQ(redis.records.at("dedup:f"), "done");
}

TEST(ReplayChain, AReadTierThatCannotBeReachedStopsTheRunWithNothingPublished) {
  FakePlacement redis;
  FakeDedupStore inbox;
  inbox.fail_on_batch = 0;
  core::ChainPlacement chain(redis, "tier 1 (redis://cache:6379)", {inbox_reader(inbox)});
  FakeEventSource source(log_of({"a", "b"}));
  FakeSink sink;
  FakeJournal journal;
  auto report = run_replay(chain_request(true, journal), source, chain, &sink, core::SourceInfo{}, 0);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_TRUE(sink.ids().empty());
  EXPECT_EQ(redis.claims, 0);
}

} // namespace
} // namespace dedupctl::commands
