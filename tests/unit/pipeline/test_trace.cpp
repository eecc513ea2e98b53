// run_trace against in-memory fakes: occurrences, the record looked up once per found id, the
// verdicts and their findings, and a store or source that fails.
#include "commands/pipeline/trace.hpp"
#include "core/window/window_store.hpp"
#include "tests/unit/fakes.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

namespace dedupctl::commands {
namespace {

using testing::FakeDedupStore;
using testing::FakeEventSource;
using testing::with_header_id;

constexpr std::int64_t k_hour = 3'600'000;
constexpr std::int64_t k_now = 1000 * k_hour;

using dedupctl::testing::summary;

const core::Finding* finding(const reports::Report& report, const std::string& id) {
  for (const auto& f : report.findings) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

TraceRequest request_for(std::vector<std::string> ids) {
  TraceRequest request;
  request.ids = std::move(ids);
  request.key_template = core::KeyTemplate::parse("dedup:{event_id}");
  request.placement.ttl = core::declared_ttl(core::Span::finite(k_hour));
  return request;
}

TEST(TracePipeline, FindsEveryCopyLooksTheRecordUpOnceAndDecides) {
  // "twice": two copies 3 h apart with a 1 h TTL and no record; "held": one copy, record present.
  FakeEventSource source({with_header_id(0, 0, k_now - 4 * k_hour, "twice", "{\"a\":1}"),
                          with_header_id(1, 5, k_now - 1 * k_hour, "twice", "{\"a\":1}"),
                          with_header_id(0, 1, k_now - 10 * 60'000, "held", "{}"),
                          with_header_id(0, 2, k_now, "other", "{}")});
  FakeDedupStore store;
  store.records["dedup:held"] = {50 * 60'000, "done"};
  core::SourceInfo info;
  info.group = "billing"; // both copies below committed: consumed
  info.partitions = {core::PartitionRange{}, core::PartitionRange{}};
  info.partitions[0].topic = info.partitions[1].topic = "orders";
  info.partitions[1].partition = 1;
  info.partitions[0].committed = 10;
  info.partitions[1].committed = 10;
  auto report = run_trace(request_for({"twice", "held", "absent-id"}), source, store, info, k_now);
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(store.batch_sizes, (std::vector<std::size_t>{2})) << "one lookup, the first key of each found id";
  EXPECT_EQ(summary(report, "events"), 4);
  EXPECT_EQ(summary(report, "found"), 2);
  EXPECT_EQ(summary(report, "not_found"), 1);
  EXPECT_EQ(summary(report, "occurrences"), 3);
  ASSERT_EQ(report.traces.size(), 3u);
  EXPECT_EQ(report.traces[0].occurrences.size(), 2u);
  EXPECT_EQ(report.traces[0].verdict.id, "applied-twice");
  EXPECT_EQ(report.traces[1].record.state, core::TraceRecord::State::Present);
  EXPECT_EQ(report.traces[1].record.value, "done");
  EXPECT_EQ(report.traces[1].verdict.id, "protected");
  EXPECT_EQ(report.traces[2].verdict.id, "not-found");
  ASSERT_NE(finding(report, "applied-twice"), nullptr);
  EXPECT_EQ(finding(report, "applied-twice")->severity, core::Severity::Error);
  EXPECT_EQ(finding(report, "applied-twice")->examples[0].event_id, "twice");
  EXPECT_EQ(finding(report, "protected"), nullptr) << "a protected id is no finding";
  EXPECT_EQ(report.exit_code, 1);
}

TEST(TracePipeline, AnIdNotFoundGetsTheLogIdsThatStartWithIt) {
  FakeEventSource source({with_header_id(0, 0, k_now, "order-12345", "{}")});
  FakeDedupStore store;
  auto report = run_trace(request_for({"order-123"}), source, store, core::SourceInfo{}, k_now);
  ASSERT_EQ(report.traces.size(), 1u);
  EXPECT_EQ(report.traces[0].verdict.id, "not-found");
  std::string notes;
  for (const auto& note : report.traces[0].notes) {
    notes += note;
  }
  EXPECT_NE(notes.find("order-12345"), std::string::npos) << notes;
  EXPECT_TRUE(store.batch_sizes.empty()) << "no found id: the store is not asked";
}

TEST(TracePipeline, AStoreThatFailsLeavesTheRecordUnknownAndTheReportIncomplete) {
  FakeEventSource source({with_header_id(0, 0, k_now, "e-1", "{}")});
  FakeDedupStore store;
  store.fail_on_batch = 0;
  auto report = run_trace(request_for({"e-1"}), source, store, core::SourceInfo{}, k_now);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  ASSERT_EQ(report.traces.size(), 1u);
  EXPECT_EQ(report.traces[0].record.state, core::TraceRecord::State::Unknown);
}

TEST(TracePipeline, ASourceThatFailsNeverAsksTheStore) {
  FakeEventSource source({with_header_id(0, 0, k_now, "e-1", "{}"), with_header_id(0, 1, k_now, "e-2", "{}")}, 1);
  source.fail_after_batches = 1;
  FakeDedupStore store;
  auto report = run_trace(request_for({"e-1"}), source, store, core::SourceInfo{}, k_now);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_TRUE(store.batch_sizes.empty());
}

// One partition of "orders", group billing committed at `committed`.
core::SourceInfo one_partition(std::int64_t committed) {
  core::SourceInfo info;
  info.group = "billing";
  info.partitions = {core::PartitionRange{}};
  info.partitions[0].topic = "orders";
  info.partitions[0].committed = committed;
  return info;
}

// A chain (--store repeated): each tier is looked up by its own key, says its verdict alone, and the
// best tier's record decides.
TEST(TracePipeline, AChainListsEachTierAndTheTierThatHoldsTheRecordDecides) {
  FakeEventSource source({with_header_id(0, 0, k_now - 3 * k_hour, "lapsed", "{}"),
                          with_header_id(0, 1, k_now - 3 * k_hour, "nowhere", "{}")});
  FakeDedupStore redis; // a 1 h TTL: both keys gone
  FakeDedupStore inbox; // keyed by the event id, kept 30 days
  inbox.records["lapsed"] = {std::nullopt, "done"};
  TraceRequest request = request_for({"lapsed", "nowhere"});
  request.placement.store = "redis://cache:6379";
  TraceTierRequest second;
  second.name = "tier 2 (postgresql://db/app)";
  second.store = &inbox;
  second.ttl = core::Span::finite(30 * 24 * k_hour);
  request.more_tiers.push_back(second);
  core::SourceInfo info = one_partition(/*committed=*/2);
  auto report = run_trace(request, source, redis, info, k_now);
  ASSERT_TRUE(report.complete);
  ASSERT_EQ(report.traces.size(), 2u);
  const auto& held = report.traces[0];
  ASSERT_EQ(held.tiers.size(), 2u);
  EXPECT_EQ(held.tiers[0].name, "tier 1 (redis://cache:6379)");
  EXPECT_EQ(held.tiers[0].dedup_keys, std::vector<std::string>{"dedup:lapsed"});
  EXPECT_EQ(held.tiers[0].record.state, core::TraceRecord::State::Absent);
  EXPECT_EQ(held.tiers[0].verdict.id, "exposed") << "alone, Redis lets a seek re-apply it";
  EXPECT_EQ(held.tiers[1].dedup_keys, std::vector<std::string>{"lapsed"});
  EXPECT_EQ(held.tiers[1].record.state, core::TraceRecord::State::Present);
  EXPECT_EQ(held.tiers[1].verdict.id, "protected");
  ASSERT_TRUE(held.decided_by.has_value());
  EXPECT_EQ(*held.decided_by, 1u);
  EXPECT_EQ(held.verdict.id, "protected");
  EXPECT_EQ(held.dedup_keys, std::vector<std::string>{"lapsed"}) << "the deciding tier's key";
  const auto& nowhere = report.traces[1];
  EXPECT_FALSE(nowhere.decided_by.has_value());
  EXPECT_EQ(nowhere.verdict.id, "state-lost") << "within the inbox's 30 days and in no tier";
  EXPECT_EQ(redis.batch_sizes, (std::vector<std::size_t>{2}));
  EXPECT_EQ(inbox.batch_sizes, (std::vector<std::size_t>{2}));
  ASSERT_NE(finding(report, "state-lost"), nullptr);
  EXPECT_EQ(finding(report, "exposed"), nullptr) << "a tier's verdict alone is no finding";
}

// A window in memory: simulated from the range's start, each copy says what the window did with it.
TEST(TracePipeline, AWindowSaysWhatItDidWithEachCopyAndAForgottenIdIsAppliedTwice) {
  // An LRU of 2 ids a partition over a b c a a: c evicts a, so a's second copy is applied again and its
  // third skipped.
  FakeEventSource source(
      {with_header_id(0, 0, k_now - 40 * 60'000, "a", "{}"), with_header_id(0, 1, k_now - 30 * 60'000, "b", "{}"),
       with_header_id(0, 2, k_now - 20 * 60'000, "c", "{}"), with_header_id(0, 3, k_now - 10 * 60'000, "a", "{}"),
       with_header_id(0, 4, k_now - 5 * 60'000, "a", "{}")});
  core::WindowStore window;
  TraceRequest request = request_for({"a", "c"});
  request.key_template = core::KeyTemplate::parse("{event_id}");
  request.layout = core::find_layout("lru");
  core::apply_window_option(request.layout.window, "capacity=2");
  request.placement.ttl = core::declared_ttl(core::Span::infinite());
  core::SourceInfo info = one_partition(/*committed=*/5);
  auto report = run_trace(request, source, window, info, k_now);
  ASSERT_EQ(report.traces.size(), 2u);
  const auto& a = report.traces[0];
  ASSERT_EQ(a.occurrences.size(), 3u);
  EXPECT_EQ(a.occurrences[0].window, core::WindowCall::Applied);
  EXPECT_EQ(a.occurrences[1].window, core::WindowCall::Reapplied) << "c evicted a from an LRU of 2";
  EXPECT_EQ(a.occurrences[2].window, core::WindowCall::Skipped);
  EXPECT_EQ(a.verdict.id, "applied-twice");
  EXPECT_NE(a.verdict.text.find("the lru window of 2 ids (a partition) no longer held the id"), std::string::npos)
      << a.verdict.text;
  EXPECT_TRUE(a.tiers.empty()) << "one placement, no tiers";
  EXPECT_EQ(report.traces[1].occurrences[0].window, core::WindowCall::Applied);
  EXPECT_EQ(report.traces[1].verdict.id, "exposed") << "a window holds nothing across a seek";
}

} // namespace
} // namespace dedupctl::commands
