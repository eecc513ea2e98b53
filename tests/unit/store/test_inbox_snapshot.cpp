#include "core/source/kcat_line.hpp"
#include "core/store/inbox_snapshot.hpp"
#include <gtest/gtest.h>

using namespace dedupctl::core;

TEST(InboxSnapshot, ParsesCopyTextLinesWithNullsAndEscapes) {
  InboxRow row;
  std::string error;
  ASSERT_TRUE(parse_inbox_row("e-1\tbilling\t2026-11-20 08:00:00.250123+00\tprocessing", row, error)) << error;
  EXPECT_EQ(row.event_id, "e-1");
  EXPECT_EQ(row.consumer, "billing");
  EXPECT_EQ(row.processed_at_ms, 1'795'161'600'250LL);
  EXPECT_EQ(row.status, "processing");
  ASSERT_TRUE(parse_inbox_row("tab\\there\t\\N\t\\N\t\\N", row, error)) << error;
  EXPECT_EQ(row.event_id, "tab\there");
  EXPECT_FALSE(row.consumer.has_value());
  EXPECT_FALSE(row.processed_at_ms.has_value());
  EXPECT_FALSE(parse_inbox_row("\\N\tb\t\\N\t\\N", row, error)); // a NULL id
  EXPECT_FALSE(parse_inbox_row("a\tb\tc", row, error));
  EXPECT_NE(error.find("expected 4"), std::string::npos);
  EXPECT_FALSE(parse_inbox_row("a\tb\tyesterday\t\\N", row, error));
  InboxSnapshotHeader header;
  ASSERT_TRUE(
      parse_inbox_snapshot_header(format_inbox_snapshot_header({42, "postgres://***@db", "inbox"}), header, error));
  EXPECT_EQ(header.taken_at_ms, 42);
  EXPECT_EQ(header.table, "inbox");
}

TEST(InboxSnapshot, ParsesTheLoadedColumnsWithEpochMicrosecondsAndNulls) {
  InboxLoadRow row;
  ASSERT_TRUE(parse_inbox_load_row("e-1\t1795161600250999\tprocessing", row));
  EXPECT_EQ(row.event_id, "e-1");
  EXPECT_EQ(row.processed_at_ms, 1'795'161'600'250LL) << "the millisecond it falls in, not the nearest";
  EXPECT_EQ(row.status, "processing");
  ASSERT_TRUE(parse_inbox_load_row("back\\\\slash\\ttab\t\\N\t\\N", row));
  EXPECT_EQ(row.event_id, "back\\slash\ttab");
  EXPECT_FALSE(row.processed_at_ms.has_value());
  EXPECT_EQ(row.status, "");
  ASSERT_TRUE(parse_inbox_load_row("-5\t-1000001\t", row)) << "an empty status is not NULL, and times may precede 1970";
  EXPECT_EQ(row.processed_at_ms, -1001) << "floored before 1970 too";
  ASSERT_TRUE(parse_inbox_load_row("-6\t-1000000\t", row));
  EXPECT_EQ(row.processed_at_ms, -1000);
  EXPECT_FALSE(parse_inbox_load_row("\\N\t1\t\\N", row)) << "a NULL id";
  EXPECT_FALSE(parse_inbox_load_row("a\t1", row)) << "two columns";
  EXPECT_FALSE(parse_inbox_load_row("a\t1\tb\tc", row)) << "four columns";
  EXPECT_FALSE(parse_inbox_load_row("a\t1.5\tb", row)) << "not integer microseconds";
  EXPECT_FALSE(parse_inbox_load_row("a\\\t1\tb", row)) << "a dangling escape";
}
