#include "core/store/snapshot_line.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

TEST(SnapshotLine, TheHeaderRoundTripsAndNamesItsFields) {
  SnapshotHeader header{1'795'305'600'000, "redis://app:***@cache:6379", "dedup:\t*", ""};
  std::string line = format_snapshot_header(header);
  EXPECT_EQ(line, "# dedupctl-snapshot v1\ttaken_at=1795305600000\tstore=redis://app:***@cache:6379\tmatch=dedup:\\t*");
  SnapshotHeader back;
  std::string error;
  ASSERT_TRUE(parse_snapshot_header(line, back, error)) << error;
  EXPECT_EQ(back.taken_at_ms, header.taken_at_ms);
  EXPECT_EQ(back.store, header.store);
  EXPECT_EQ(back.match, header.match);
  // A cluster's snapshot names every master it scanned; an older file without the field still reads.
  header.nodes = "10.0.0.1:7000,10.0.0.2:7001";
  line = format_snapshot_header(header);
  EXPECT_NE(line.find("\tnodes=10.0.0.1:7000,10.0.0.2:7001"), std::string::npos) << line;
  ASSERT_TRUE(parse_snapshot_header(line, back, error)) << error;
  EXPECT_EQ(back.nodes, header.nodes);
}

TEST(SnapshotLine, AHeaderWithoutItsMagicOrTimeIsRefusedWithAReason) {
  SnapshotHeader header;
  std::string error;
  EXPECT_FALSE(parse_snapshot_header("key\t1\tv", header, error));
  EXPECT_NE(error.find("not a dedupctl snapshot"), std::string::npos);
  EXPECT_FALSE(parse_snapshot_header("# dedupctl-snapshot v1\ttaken_at=soon", header, error));
  EXPECT_NE(error.find("taken_at"), std::string::npos);
}

TEST(SnapshotLine, AnyBinaryKeyAndValueSurviveTheRoundTrip) {
  const char raw[] = "k\t\n\r\\\x01\x7f\xff end";
  std::string binary(raw, sizeof raw - 1);
  for (const auto& entry : {SnapshotEntry{"dedup:e-1", 3'600'000, "done"}, SnapshotEntry{"dedup:e-2", std::nullopt, ""},
                            SnapshotEntry{binary, 0, binary}}) {
    std::string line = format_snapshot_entry(entry);
    EXPECT_EQ(std::count(line.begin(), line.end(), '\t'), 2) << "exactly the two separators: " << line;
    EXPECT_EQ(line.find('\n'), std::string::npos);
    SnapshotEntry back;
    std::string error;
    ASSERT_TRUE(parse_snapshot_entry(line, back, error)) << error;
    EXPECT_EQ(back.key, entry.key);
    EXPECT_EQ(back.pttl_ms, entry.pttl_ms);
    EXPECT_EQ(back.value, entry.value);
  }
  EXPECT_EQ(format_snapshot_entry({"dedup:e-2", std::nullopt, "done"}), "dedup:e-2\t-\tdone");
}

TEST(SnapshotLine, BadEntriesSayWhatIsWrong) {
  SnapshotEntry entry;
  std::string error;
  EXPECT_FALSE(parse_snapshot_entry("only-a-key", entry, error));
  EXPECT_EQ(error, "expected KEY<TAB>PTTL<TAB>VALUE");
  EXPECT_FALSE(parse_snapshot_entry("k\t-5\tv", entry, error));
  EXPECT_EQ(error, "'-5' is not a remaining TTL in ms (or -)");
  EXPECT_FALSE(parse_snapshot_entry("k\tsoon\tv", entry, error));
  EXPECT_FALSE(parse_snapshot_entry("k\\q\t1\tv", entry, error));
  EXPECT_EQ(error, "a bad escape sequence");
  EXPECT_FALSE(parse_snapshot_entry("k\\x4\t1\tv", entry, error)) << "a truncated \\xHH";
  EXPECT_FALSE(parse_snapshot_entry("k\\\t1\tv", entry, error)) << "a lone backslash ends the key";
  EXPECT_FALSE(parse_snapshot_entry("k\t1\tv\\", entry, error)) << "a lone backslash ends the value";
  EXPECT_FALSE(parse_snapshot_entry("k\\xzz\t1\tv", entry, error)) << "\\x without hex digits";
  // Runs between escapes are copied whole, around escapes at either end.
  ASSERT_TRUE(parse_snapshot_entry("\\x41BC\\tD\t1\tE\\\\", entry, error)) << error;
  EXPECT_EQ(entry.key, "ABC\tD");
  EXPECT_EQ(entry.value, "E\\");
}

} // namespace
} // namespace dedupctl::core
