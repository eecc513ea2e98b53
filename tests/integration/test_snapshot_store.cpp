// A snapshot file as the dedup store of an offline audit: every record read back as the file has
// it, a key given twice taking its last line, and many keys sharing a value.
#include "connectors/file/snapshot_store.hpp"
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::testing;

TEST(SnapshotStore, EveryRecordIsReadBackAsTheFileHasItAndALaterLineWins) {
  TempDir dir;
  std::string text = "# dedupctl-snapshot v1\ttaken_at=1795000000000\tstore=redis://test\tmatch=d:*\n"
                     "d:a\t60000\tdone\n"
                     "d:forever\t-\tdone\n"
                     "d:claim\t5000\tprocessing:run-1\n"
                     "d:twice\t1000\tprocessing\n"
                     "\n"
                     "d:twice\t-\tdone\n";
  for (int i = 0; i < 20'000; ++i) { // enough to grow the index several times
    text += fmt::format("d:bulk-{}\t{}\tdone\n", i, 1000 + i);
  }
  write_file(dir.file("keys.tsv"), text);
  connectors::file::SnapshotStore store(dir.file("keys.tsv"));
  EXPECT_EQ(store.size(), 4U + 20'000U);
  EXPECT_EQ(store.header().taken_at_ms, 1'795'000'000'000LL);
  std::vector<std::string> keys{"d:a", "d:forever", "d:claim", "d:twice", "d:absent", "d:bulk-19999", "d:bulk-0"};
  std::vector<core::RecordState> states;
  store.lookup(keys, states);
  ASSERT_EQ(states.size(), keys.size());
  using Kind = core::RecordState::Kind;
  EXPECT_EQ(states[0].kind, Kind::Present);
  EXPECT_EQ(states[0].pttl_ms, 60'000);
  EXPECT_EQ(states[0].value, "done");
  EXPECT_EQ(states[1].kind, Kind::Present);
  EXPECT_FALSE(states[1].pttl_ms.has_value()) << "no expiry";
  EXPECT_EQ(states[2].value, "processing:run-1");
  EXPECT_EQ(states[3].value, "done") << "the later line wins";
  EXPECT_FALSE(states[3].pttl_ms.has_value());
  EXPECT_EQ(states[4].kind, Kind::Absent);
  EXPECT_EQ(states[5].pttl_ms, 1000 + 19'999);
  EXPECT_EQ(states[6].pttl_ms, 1000);
}
