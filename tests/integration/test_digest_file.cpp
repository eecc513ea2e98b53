// A shard's digest records on real files: sorted in each order through the temporary file's runs
// exactly as one sort in memory sorts them, whatever the run size; the temporary file never shows
// in TMPDIR; a TMPDIR that cannot be written is named, before anything is read or after.
#include "connectors/file/digest_file.hpp"
#include "connectors/file/record_runs.hpp"
#include "core/errors.hpp"
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <sys/resource.h>

using namespace dedupctl;
using namespace dedupctl::testing;
using connectors::file::RecordRuns;
using core::DigestOrder;
using core::DigestRecord;

namespace {

// Records with few distinct hashes (long groups of one key, decided by seq) and, when `keys`, a
// dedup key on about two thirds of them.
std::vector<DigestRecord> random_records(std::size_t n, bool keys, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<DigestRecord> out;
  for (std::size_t i = 0; i < n; ++i) {
    DigestRecord r;
    r.id_hash = rng() % 97;
    r.semantic_hash = rng() % 13;
    r.key_hash = keys && rng() % 3 != 0 ? 1 + rng() % 29 : 0;
    r.seq = i * 3 + rng() % 3;
    r.timestamp_ms = static_cast<std::int64_t>(rng() % 100000);
    r.payload = static_cast<std::uint32_t>(rng());
    r.partition = static_cast<std::int32_t>(rng() % 8);
    out.push_back(r);
  }
  std::shuffle(out.begin(), out.end(), rng); // seqs out of order within a run too
  return out;
}

std::vector<DigestRecord> sorted_in_memory(std::vector<DigestRecord> records, DigestOrder order) {
  if (order == DigestOrder::Key) {
    std::erase_if(records, [](const DigestRecord& r) { return r.key_hash == 0; });
  }
  std::sort(records.begin(), records.end(),
            [order](const DigestRecord& a, const DigestRecord& b) { return core::digest_before(a, b, order); });
  return records;
}

std::vector<DigestRecord> sorted_by_runs(RecordRuns& runs, DigestOrder order) {
  std::vector<DigestRecord> out;
  runs.write_sorted(order, [&](const void* data, std::size_t size) {
    EXPECT_EQ(size % sizeof(DigestRecord), 0u);
    const auto* first = static_cast<const DigestRecord*>(data);
    out.insert(out.end(), first, first + size / sizeof(DigestRecord));
  });
  return out;
}

bool same(const std::vector<DigestRecord>& a, const std::vector<DigestRecord>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(DigestRecord)) == 0;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      out.emplace_back(e->d_name);
    }
  }
  if (d) {
    ::closedir(d);
  }
  return out;
}

// Sets TMPDIR for the scope.
class ScopedTmpdir {
public:
  explicit ScopedTmpdir(const std::string& dir) {
    if (const char* old = std::getenv("TMPDIR")) {
      m_old = old;
    }
    ::setenv("TMPDIR", dir.c_str(), 1);
  }
  ~ScopedTmpdir() {
    if (m_old) {
      ::setenv("TMPDIR", m_old->c_str(), 1);
    } else {
      ::unsetenv("TMPDIR");
    }
  }

private:
  std::optional<std::string> m_old;
};

} // namespace

TEST(RecordRuns, EachOrderThroughRunsIsTheOrderOfOneSortInMemory) {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  for (bool keys : {false, true}) {
    for (std::size_t run_records : {std::size_t{1}, std::size_t{7}, std::size_t{1000}, std::size_t{5000}}) {
      auto records = random_records(3001, keys, static_cast<std::uint32_t>(run_records) + (keys ? 1U : 0U));
      RecordRuns runs(run_records);
      for (const auto& r : records) {
        runs.add(r);
      }
      std::string what = "runs of " + std::to_string(run_records) + (keys ? ", with keys" : ", no keys");
      // A run goes to the file when the next record finds the buffer full.
      EXPECT_EQ(runs.runs(), (records.size() - 1) / run_records) << what;
      EXPECT_EQ(runs.count(), records.size()) << what;
      for (auto order : {DigestOrder::Id, DigestOrder::Semantic, DigestOrder::Key}) {
        auto truth = sorted_in_memory(records, order);
        EXPECT_EQ(order == DigestOrder::Key ? runs.keyed() : runs.count(), truth.size()) << what;
        EXPECT_TRUE(same(sorted_by_runs(runs, order), truth)) << what << ", order " << static_cast<int>(order);
      }
      EXPECT_TRUE(entries(tmp.path()).empty()) << what << ": the temporary file is unlinked while in use";
    }
  }
}

TEST(RecordRuns, ADigestWrittenThroughRunsReadsBackEachSectionSorted) {
  TempDir dir;
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  auto records = random_records(2500, true, 42);
  std::string path = dir.file("shard.digest");
  {
    connectors::file::DigestWriter writer(path, 64);
    core::Event event;
    event.topic = "orders";
    core::Identity identity;
    identity.has_id = true;
    for (std::size_t i = 0; i < 10; ++i) {
      event.seq = i;
      event.offset = static_cast<std::int64_t>(i);
      std::string id = "evt-" + std::to_string(i);
      identity.id = id;
      writer.add_event(event, identity, "dedup:" + id, nullptr);
    }
    for (auto& r : records) {
      r.key_hash = r.key_hash == 0 ? 7 : r.key_hash; // a digest that compares keys: every record has one
      writer.add_record(r);
    }
    core::DigestHeader header;
    header.command = "scan";
    header.check_keys = true;
    writer.finish(header);
  }
  EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"shard.digest"});
  EXPECT_TRUE(entries(tmp.path()).empty());
  connectors::file::DigestFile file(path);
  for (auto order : {DigestOrder::Id, DigestOrder::Semantic, DigestOrder::Key}) {
    auto stream = file.records(order);
    std::vector<DigestRecord> read;
    DigestRecord r;
    while (stream->next(r)) {
      read.push_back(r);
    }
    EXPECT_TRUE(same(read, sorted_in_memory(records, order))) << "order " << static_cast<int>(order);
  }
}

TEST(RecordRuns, ATmpdirThatCannotBeWrittenIsNamedBeforeAnythingIsRead) {
  TempDir dir;
  std::string missing = dir.file("no-such-dir");
  ScopedTmpdir scoped(missing);
  try {
    connectors::file::DigestWriter writer(dir.file("shard.digest"));
    FAIL() << "a digest was opened with TMPDIR missing";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(missing), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("TMPDIR"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(entries(dir.path()).empty()) << "nothing half-written";
}

TEST(RecordRuns, ATmpdirThatFillsUpMidRunIsAnUnreachableErrorNamingIt) {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  RecordRuns runs(1000);
  // A disk that fills: the file may not grow past 64 KiB (a write past it fails with EFBIG).
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = 64 << 10;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  std::string error;
  try {
    for (const auto& r : random_records(20000, true, 9)) {
      runs.add(r);
    }
  } catch (const UnreachableError& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(error.find(tmp.path()), std::string::npos) << error;
  EXPECT_NE(error.find("TMPDIR"), std::string::npos) << error;
}

// A digest that compares dedup keys holds every record in its key order: a record without a key
// there is a bug, and no digest is written rather than one that would merge wrong.
TEST(RecordRuns, ADigestComparingKeysRefusesARecordWithoutOne) {
  TempDir dir;
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  std::string path = dir.file("shard.digest");
  {
    connectors::file::DigestWriter writer(path);
    DigestRecord keyed;
    keyed.id_hash = 1;
    keyed.key_hash = 5;
    writer.add_record(keyed);
    DigestRecord unkeyed;
    unkeyed.id_hash = 2;
    unkeyed.seq = 1;
    writer.add_record(unkeyed);
    core::DigestHeader header;
    header.command = "audit";
    header.check_keys = true;
    EXPECT_THROW(writer.finish(header), std::logic_error);
  }
  EXPECT_TRUE(entries(dir.path()).empty()) << "a digest or its temporary sibling was left";
}

// Runs that cannot be read back whole (the temporary file cut short under the shard) end the
// sort with an UnreachableError naming the file, not with a digest missing records.
TEST(RecordRuns, RunsCutShortUnderTheShardAreAnUnreachableErrorNamingThem) {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  RecordRuns runs(100);
  for (const auto& r : random_records(1000, false, 3)) {
    runs.add(r);
  }
  ASSERT_GT(runs.runs(), 1u);
  sorted_by_runs(runs, DigestOrder::Id); // the last run written: the file is whole
  // The unlinked file is still reachable through /proc: cut it in half.
  bool cut = false;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind(tmp.path() + "/dedupctl-digest-", 0) == 0) {
      std::filesystem::resize_file(fd.path(), std::filesystem::file_size(fd.path()) / 2);
      cut = true;
    }
  }
  ASSERT_TRUE(cut) << "the temporary file was not found among the open files";
  try {
    sorted_by_runs(runs, DigestOrder::Semantic);
    FAIL() << "runs cut short were read as whole";
  } catch (const UnreachableError& e) {
    EXPECT_NE(std::string(e.what()).find(tmp.path() + " (TMPDIR)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cut short"), std::string::npos) << e.what();
  }
}
