#include "commands/pipeline/scan.hpp"
#include "core/util/errors.hpp"
#include "tests/unit/fakes.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::commands;
using dedupctl::testing::FakeEventSource;
using dedupctl::testing::OwnedEvent;
using dedupctl::testing::with_header_id;

namespace {

std::vector<OwnedEvent> planted() {
  // Partition 0: a producer retry of e-1, and e-2 reused with another payload.
  // Partition 1: e-10 and a retry with the new id e-11 a minute later; one event without id.
  std::vector<OwnedEvent> events{
      with_header_id(0, 0, 1000, "e-1", R"({"amount":1})"),  with_header_id(0, 1, 2000, "e-1", R"({"amount":1})"),
      with_header_id(0, 2, 3000, "e-2", R"({"amount":2})"),  with_header_id(0, 3, 4000, "e-2", R"({"amount":3})"),
      with_header_id(1, 0, 1000, "e-10", R"({"amount":9})"), with_header_id(1, 1, 61000, "e-11", R"({"amount":9})")};
  OwnedEvent no_id;
  no_id.partition = 1;
  no_id.offset = 2;
  no_id.timestamp_ms = 62000;
  no_id.payload = "binary";
  events.push_back(no_id);
  return events;
}

using dedupctl::testing::summary;

} // namespace

TEST(ScanPipeline, CountsEveryLogProblemAndFailsOnErrors) {
  FakeEventSource source(planted());
  ScanRequest request;
  auto report = run_scan(request, source, core::SourceInfo{}, 5000);
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(summary(report, "events"), 7);
  EXPECT_EQ(summary(report, "no_id"), 1);
  EXPECT_EQ(summary(report, "log_duplicates"), 1);
  EXPECT_EQ(summary(report, "id_reuse"), 1);
  EXPECT_EQ(summary(report, "semantic_duplicates"), 1);
  ASSERT_EQ(report.findings.size(), 4u);
  EXPECT_EQ(report.findings[0].id, "id-reuse"); // errors first
  EXPECT_EQ(report.exit_code, 1);
  ASSERT_EQ(report.source->partitions.size(), 2u);
  EXPECT_EQ(report.source->partitions[1].events, 3);
  EXPECT_GT(source.batches_served, 1) << "the pipeline must work batch by batch";
}

TEST(ScanPipeline, FailOnNoneExitsZeroOverTheSameFindings) {
  FakeEventSource source(planted());
  ScanRequest request;
  request.fail_on = core::parse_fail_on("none");
  auto report = run_scan(request, source, core::SourceInfo{}, 5000);
  EXPECT_EQ(report.findings.size(), 4u);
  EXPECT_EQ(report.exit_code, 0);
}

TEST(ScanPipeline, ASourceThatFailsMidwayGivesAnIncompleteReportWithExit3) {
  FakeEventSource source(planted(), 2);
  source.fail_after_batches = 2;
  auto report = run_scan(ScanRequest{}, source, core::SourceInfo{}, 5000);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  ASSERT_TRUE(report.error.has_value());
  EXPECT_NE(report.error->find("fake:9092"), std::string::npos);
  EXPECT_EQ(summary(report, "events"), 4); // what was read, and said to be partial
}

TEST(ScanPipeline, AnInterruptGivesExit130) {
  FakeEventSource source(planted(), 2);
  source.fail_after_batches = 1;
  source.fail_with_interrupt = true;
  auto report = run_scan(ScanRequest{}, source, core::SourceInfo{}, 5000);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 130);
}

TEST(ScanPipeline, ProgressIsReportedPerBatch) {
  FakeEventSource source(planted(), 3);
  ScanRequest request;
  std::vector<std::int64_t> seen;
  request.progress = [&](std::int64_t events) { seen.push_back(events); };
  run_scan(request, source, core::SourceInfo{}, 5000);
  EXPECT_EQ(seen, (std::vector<std::int64_t>{3, 6, 7}));
}
