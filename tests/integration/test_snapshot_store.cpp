// A snapshot file as the dedup store of an offline audit: every record read back as the file has
// it, a key given twice taking its last line, and many keys sharing a value.
#include "connectors/file/snapshot_store.hpp"
#include "core/util/errors.hpp"
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

// Lookups and loads go in groups of prefetched keys: a batch much larger than a group, keys of
// every length from 1 to 40 bytes (records are padded to 8), present and absent keys mixed, and a
// later line for a key loaded in an earlier group.
TEST(SnapshotStore, ABatchOfAnySizeAndKeysOfAnyLengthAreReadBackExactly) {
  TempDir dir;
  std::string text = "# dedupctl-snapshot v1\ttaken_at=1795000000000\tstore=redis://test\tmatch=*\n";
  auto key_of = [](int i) { return fmt::format("{}{}", std::string(static_cast<std::size_t>(i % 40), 'k'), i); };
  for (int i = 0; i < 5'000; ++i) {
    text += fmt::format("{}\t{}\t{}\n", key_of(i), i, i % 3 == 0 ? "processing" : "done");
  }
  text += fmt::format("{}\t-\tdone\n", key_of(7)); // 4993 lines after its first
  write_file(dir.file("keys.tsv"), text);
  connectors::file::SnapshotStore store(dir.file("keys.tsv"));
  EXPECT_EQ(store.size(), 5'000U);
  std::vector<std::string> keys;
  for (int i = 4'999; i >= -1'000; --i) { // 1000 absent keys ("absent-…") among them
    keys.push_back(i >= 0 ? key_of(i) : fmt::format("absent-{}", i));
  }
  std::vector<core::RecordState> states;
  store.lookup(keys, states);
  ASSERT_EQ(states.size(), keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    int i = 4'999 - static_cast<int>(k);
    if (i < 0) {
      EXPECT_EQ(states[k].kind, core::RecordState::Kind::Absent) << keys[k];
      continue;
    }
    ASSERT_EQ(states[k].kind, core::RecordState::Kind::Present) << keys[k];
    if (i == 7) {
      EXPECT_FALSE(states[k].pttl_ms.has_value()) << "the later line wins";
    } else {
      EXPECT_EQ(states[k].pttl_ms, i) << keys[k];
    }
    EXPECT_EQ(states[k].value, i % 3 == 0 && i != 7 ? "processing" : "done") << keys[k];
  }
}

// The file loads beside the reading (an offline audit reads the log meanwhile): its header is
// checked when it is opened, a bad line below it at the first use of the records, named by its
// number, and at every use after.
TEST(SnapshotStore, ABadLineIsNamedByItsNumberWhereverItIs) {
  TempDir dir;
  std::string text = "# dedupctl-snapshot v1\ttaken_at=1795000000000\tstore=redis://test\tmatch=*\n";
  for (int i = 0; i < 100; ++i) {
    text += fmt::format("d:{}\t1000\tdone\n{}", i, i % 10 == 0 ? "\n" : ""); // blank lines count too
  }
  text += "d:bad\tsoon\tdone\n"; // line 1 + 100 + 10 + 1
  write_file(dir.file("keys.tsv"), text);
  connectors::file::SnapshotStore store(dir.file("keys.tsv"));
  EXPECT_EQ(store.header().taken_at_ms, 1'795'000'000'000LL);
  std::vector<core::RecordState> states;
  for (int use = 0; use < 2; ++use) {
    try {
      store.lookup({"d:1"}, states);
      ADD_FAILURE() << "a bad line must be refused";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("keys.tsv:112: 'soon' is not a remaining TTL"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(store.size(), UsageError);
}

TEST(SnapshotStore, AFileThatIsNotASnapshotIsRefusedWhenOpened) {
  TempDir dir;
  write_file(dir.file("keys.tsv"), "d:1\t1000\tdone\n");
  EXPECT_THROW(connectors::file::SnapshotStore(dir.file("keys.tsv")), UsageError);
  EXPECT_THROW(connectors::file::SnapshotStore(dir.file("missing.tsv")), UsageError);
}
