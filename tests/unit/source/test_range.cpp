#include "core/source/offset_spec.hpp"
#include "core/source/range.hpp"
#include "core/source/source_info.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

TEST(PartitionCursor, AdmitsTheHalfOpenRangeAndKnowsWhenItIsDone) {
  PartitionPlan plan;
  plan.start = 5;
  plan.end = 8;
  PartitionCursor cursor(plan);
  EXPECT_FALSE(cursor.admit(4, 0));
  EXPECT_TRUE(cursor.admit(5, 0));
  EXPECT_TRUE(cursor.admit(6, 0));
  EXPECT_FALSE(cursor.done());
  EXPECT_TRUE(cursor.admit(7, 0));
  EXPECT_TRUE(cursor.done());
  EXPECT_FALSE(cursor.admit(8, 0));
  EXPECT_EQ(cursor.position().events, 3);
  EXPECT_EQ(cursor.position().first_offset, 5);
  EXPECT_EQ(cursor.position().last_offset, 7);
}

TEST(PartitionCursor, AnEmptyRangeIsDoneAtOnce) {
  PartitionPlan plan;
  plan.start = 8;
  plan.end = 8;
  EXPECT_TRUE(PartitionCursor(plan).done());
}

TEST(PartitionCursor, SkipsUntilTheFirstEventAtTheTimeThenKeepsEverything) {
  PartitionPlan plan;
  plan.skip_before_ts = 100;
  PartitionCursor cursor(plan);
  EXPECT_FALSE(cursor.admit(0, 50));
  EXPECT_TRUE(cursor.admit(1, 100));
  EXPECT_TRUE(cursor.admit(2, 90)); // out of order after the start: still in range, as in Kafka
  EXPECT_EQ(cursor.position().first_offset, 1);
}

TEST(PartitionCursor, StopsAtTheFirstEventAtTheEndTime) {
  PartitionPlan plan;
  plan.stop_at_ts = 100;
  PartitionCursor cursor(plan);
  EXPECT_TRUE(cursor.admit(0, 99));
  EXPECT_FALSE(cursor.admit(1, 100));
  EXPECT_TRUE(cursor.done());
  EXPECT_EQ(cursor.position().stopped_at, 1);
}

TEST(PlanWithoutBroker, OffsetsAndTimesFilterAndBrokerOnlySpecsAreRefused) {
  auto spec = [](const char* text) { return parse_offset_spec(text, "--from"); };
  auto plan = plan_without_broker(spec("10"), spec("20"), 0);
  EXPECT_EQ(plan.start, 10);
  EXPECT_EQ(plan.end, 20);
  plan = plan_without_broker(spec("-1h"), spec("latest"), 7'200'000);
  EXPECT_EQ(plan.skip_before_ts, 3'600'000);
  EXPECT_EQ(plan.end, k_offset_max);
  EXPECT_THROW(plan_without_broker(spec("-100"), spec("latest"), 0), UsageError);
  EXPECT_THROW(plan_without_broker(spec("committed"), spec("latest"), 0), UsageError);
}

TEST(FinalizeSource, FileSourcesGetOneRangePerPartitionSeen) {
  SourceInfo info;
  info.kind = core::SourceKind::File;
  PartitionPosition p1{"orders", 1, 3, 10, 12, 1000, 3000, std::nullopt};
  PartitionPosition p0{"orders", 0, 2, 0, 1, 500, 600, std::nullopt};
  finalize_source(info, {p1, p0});
  ASSERT_EQ(info.partitions.size(), 2u);
  EXPECT_EQ(info.partitions[0].partition, 0);
  EXPECT_EQ(info.partitions[1].from, 10);
  EXPECT_EQ(info.partitions[1].to, 13);
  EXPECT_EQ(info.partitions[1].events, 3);
  EXPECT_EQ(info.topics, std::vector<std::string>{"orders"});
}

// A dump audited with --seek has its partitions (from --committed) before it is read: the dump
// decides their offsets, and a seek outside what it holds falls on its first offset or its end.
TEST(FinalizeSource, ADumpsCommittedPartitionsTakeTheirOffsetsFromTheDump) {
  SourceInfo info;
  info.kind = core::SourceKind::File;
  for (std::int64_t seek : {std::int64_t{3}, std::int64_t{15}, k_offset_max}) {
    PartitionRange range;
    range.topic = "orders";
    range.partition = static_cast<std::int32_t>(info.partitions.size());
    range.committed = 14;
    range.seek = seek;
    info.partitions.push_back(range);
  }
  PartitionRange empty;
  empty.topic = "orders";
  empty.partition = 3;
  empty.committed = 0;
  empty.seek = 0;
  info.partitions.push_back(empty);
  std::vector<PartitionPosition> read;
  for (std::int32_t p = 0; p < 3; ++p) {
    read.push_back(PartitionPosition{"orders", p, 5, 10, 14, 1000, 3000, std::nullopt});
  }
  finalize_source(info, read);
  ASSERT_EQ(info.partitions.size(), 4U);
  EXPECT_EQ(info.partitions[0].from, 10);
  EXPECT_EQ(info.partitions[0].to, 15);
  EXPECT_EQ(info.partitions[0].seek, 10) << "before the dump's first offset: its first offset";
  EXPECT_EQ(info.partitions[1].seek, 15);
  EXPECT_EQ(info.partitions[2].seek, 15) << "latest: the dump's end";
  EXPECT_EQ(info.partitions[3].events, 0);
  EXPECT_EQ(info.partitions[3].from, 0);
  EXPECT_EQ(info.partitions[3].to, 0);
}

TEST(FinalizeSource, ATimeStartThatLandsOnATruncatedLogStartIsClamped) {
  SourceInfo info;
  PartitionRange range;
  range.topic = "orders";
  range.from = 100;
  range.to = 500;
  range.log_start = 100;
  range.log_end = 500;
  range.from_timestamp = 42;
  info.partitions.push_back(range);
  finalize_source(info, {PartitionPosition{"orders", 0, 400, 100, 499, 50, 90, std::nullopt}});
  EXPECT_TRUE(info.partitions[0].clamped);
  auto finding = range_clamped_finding(info, 5);
  ASSERT_TRUE(finding.has_value());
  EXPECT_EQ(finding->id, "range-clamped");
  EXPECT_EQ(finding->severity, Severity::Warning);
  EXPECT_EQ(finding->count, 1);

  // A time start inside the retained log is not clamped.
  info.partitions[0].clamped = false;
  finalize_source(info, {PartitionPosition{"orders", 0, 300, 200, 499, 50, 90, std::nullopt}});
  EXPECT_FALSE(info.partitions[0].clamped);
  EXPECT_EQ(info.partitions[0].from, 200);
  EXPECT_FALSE(range_clamped_finding(info, 5).has_value());
}

TEST(CanonicalOrder, RoundsOfBlocksThenRankThenOffset) {
  PartitionPlan a;
  a.rank = 0;
  a.ranks = 3;
  a.order_base = 100;
  PartitionPlan c = a;
  c.rank = 2;
  c.order_base = 0;
  // a's offsets 100..1123 are round 0, before c's round 0; c's offset 5 is before a's 1124 (round 1).
  EXPECT_LT(canonical_seq(a, 100), canonical_seq(a, 1123));
  EXPECT_LT(canonical_seq(a, 1123), canonical_seq(c, 0));
  EXPECT_LT(canonical_seq(c, 1023), canonical_seq(a, 1124));
  EXPECT_LT(canonical_seq(a, 1124), canonical_seq(c, 1024));
  EXPECT_EQ(canonical_seq(a, 100), 0u);
  EXPECT_EQ(canonical_seq(c, 5), 2u * 1024 + 5);
}

TEST(CanonicalOrder, TheBlockShrinksAsPartitionsGrow) {
  EXPECT_EQ(order_block(1), 1024);
  EXPECT_EQ(order_block(64), 1024);
  EXPECT_EQ(order_block(128), 512);
  EXPECT_EQ(order_block(512), 128);
  EXPECT_EQ(order_block(4096), 16);
  EXPECT_EQ(order_block(100000), 16);
}
