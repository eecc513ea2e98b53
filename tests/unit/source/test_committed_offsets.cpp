// The group's committed offsets for a kcat dump (--committed FILE): the CSV kafka-consumer-groups
// --reset-offsets --export prints, and the replay window a --seek opens on a dump before it is read.
#include "core/source/committed_offsets.hpp"
#include "core/source/offset_spec.hpp"
#include "core/source/range.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;
using dedupctl::UsageError;

namespace {

std::string usage_error(const std::function<void()>& run) {
  try {
    run();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST(CommittedCsv, ReadsTheSingleGroupExportAndTheMultiGroupOneForItsGroup) {
  auto one = parse_committed_csv("pay,0,8\npay,1,13\n\n", "c.csv", "billing");
  ASSERT_EQ(one.size(), 2U);
  EXPECT_EQ(one[1].topic, "pay");
  EXPECT_EQ(one[1].partition, 1);
  EXPECT_EQ(one[1].offset, 13);
  // --group billing --group audit --export: a group column; only billing's rows count.
  auto many = parse_committed_csv("audit,pay,0,3\r\nbilling,pay,0,8\nbilling,pay,1,13\n", "c.csv", "billing");
  ASSERT_EQ(many.size(), 2U);
  EXPECT_EQ(many[0].offset, 8);
  EXPECT_EQ(many[1].offset, 13);
}

TEST(CommittedCsv, BadRowsAreUsageErrorsNamingFileAndLine) {
  EXPECT_EQ(usage_error([] { parse_committed_csv("pay,0,8\npay,x,9\n", "c.csv", "g"); }),
            "--committed c.csv:2: 'x' is not a partition number; expected topic,partition,offset rows as "
            "kafka-consumer-groups --reset-offsets --to-current --dry-run --export prints them");
  EXPECT_NE(usage_error([] { parse_committed_csv("pay,0,-4\n", "c.csv", "g"); }).find("c.csv:1: '-4' is not an offset"),
            std::string::npos);
  EXPECT_NE(usage_error([] { parse_committed_csv("pay 0 8\n", "c.csv", "g"); }).find("c.csv:1: expected"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              parse_committed_csv("pay,0,8\npay,0,9\n", "c.csv", "g");
            }).find("c.csv:2: pay[0] is given twice"),
            std::string::npos);
  EXPECT_NE(usage_error([] { parse_committed_csv("", "c.csv", "g"); }).find("c.csv holds no offsets"),
            std::string::npos);
  EXPECT_NE(usage_error([] {
              parse_committed_csv("audit,pay,0,3\n", "c.csv", "billing");
            }).find("c.csv holds no offsets of group 'billing' (it names audit)"),
            std::string::npos);
}

TEST(DumpSeek, EachSpecResolvesAgainstTheCommittedOffsetWithTheDumpDecidingTheRest) {
  std::vector<CommittedOffset> committed{{"pay", 0, 80}, {"pay", 1, 5}};
  auto resolve = [&](const std::string& text) {
    return dump_seek_ranges(committed, parse_offset_spec(text, "--seek"), 0);
  };
  auto by_offset = resolve("60");
  ASSERT_EQ(by_offset.size(), 2U);
  EXPECT_EQ(by_offset[0].topic, "pay");
  EXPECT_EQ(by_offset[0].committed, 80);
  EXPECT_EQ(by_offset[0].seek, 60);
  EXPECT_EQ(by_offset[1].seek, 60) << "beyond committed: an empty window, as on a broker";
  auto back = resolve("-10");
  EXPECT_EQ(back[0].seek, 70);
  EXPECT_EQ(back[1].seek, 0) << "never before offset 0; the dump's first offset decides after reading";
  EXPECT_FALSE(back[1].clamped) << "the dump cannot say where the log started";
  EXPECT_EQ(resolve("committed")[0].seek, 80);
  EXPECT_EQ(resolve("earliest")[0].seek, 0);
  EXPECT_EQ(resolve("latest")[0].seek, k_offset_max) << "the dump's end, after reading";
  auto by_time = resolve("@2026-11-20T00:00:00Z");
  EXPECT_EQ(by_time[0].seek_timestamp, 1'795'132'800'000LL) << "found while reading, as on the mock";
  EXPECT_EQ(by_time[0].seek, 0);
}

TEST(DumpSeek, PartitionsTheDumpHoldsWithoutAnOffsetAreNamed) {
  SourceInfo info;
  info.group = "billing";
  for (std::int32_t p = 0; p < 8; ++p) {
    PartitionRange range;
    range.topic = "pay";
    range.partition = p;
    range.events = p == 7 ? 0 : 3; // an empty partition needs no offset
    if (p == 0) {
      range.committed = 2;
    }
    info.partitions.push_back(range);
  }
  auto why = dump_partitions_without_offsets(info, "c.csv");
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("--committed c.csv has no offset of group 'billing' for pay[1], pay[2], pay[3], pay[4], pay[5] "
                      "and 1 more (6 of 7 partitions"),
            std::string::npos)
      << *why;
  for (auto& range : info.partitions) {
    range.committed = 1;
  }
  EXPECT_FALSE(dump_partitions_without_offsets(info, "c.csv").has_value());
}
