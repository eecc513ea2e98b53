// run_trace against in-memory fakes: occurrences, the record looked up once per found id, the
// verdicts and their findings, and a store or source that fails.
#include "commands/pipeline/trace.hpp"
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

} // namespace
} // namespace dedupctl::commands
