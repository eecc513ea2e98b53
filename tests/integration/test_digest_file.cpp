// The temporary files in TMPDIR, on real files. A shard's digest records: sorted in each order
// through the temporary file's runs exactly as one sort in memory sorts them, whatever the run
// size; the temporary file never shows in TMPDIR; a TMPDIR that cannot be written is named, before
// anything is read or after. The semantic rule's archive: each key found in the newest run that
// has it, as a sorted list in memory finds it; a TMPDIR that cannot hold it leaves the keys in
// memory, and a file cut short under it is an error, not a key missed.
#include "connectors/file/digest_file.hpp"
#include "connectors/file/key_archive.hpp"
#include "connectors/file/record_runs.hpp"
#include "core/util/errors.hpp"
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <map>
#include <optional>
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

// Cuts to half its size the open (unlinked) file whose path starts with `prefix`, through
// /proc/self/fd; false when none is open.
bool cut_open_file_in_half(const std::string& prefix) {
  bool cut = false;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    auto target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind(prefix, 0) == 0) {
      std::filesystem::resize_file(fd.path(), std::filesystem::file_size(fd.path()) / 2);
      cut = true;
    }
  }
  return cut;
}

// Runs the body with files limited to `bytes` (a write past it fails with EFBIG, as on a full disk).
template <typename Body> void with_file_size_limit(rlim_t bytes, Body&& body) {
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit small = old;
  small.rlim_cur = bytes;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  body();
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
}

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
  std::string error;
  with_file_size_limit(64 << 10, [&] {
    try {
      for (const auto& r : random_records(20000, true, 9)) {
        runs.add(r);
      }
    } catch (const UnreachableError& e) {
      error = e.what();
    }
  });
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
  bool cut = cut_open_file_in_half(tmp.path() + "/dedupctl-digest-");
  ASSERT_TRUE(cut) << "the temporary file was not found among the open files";
  try {
    sorted_by_runs(runs, DigestOrder::Semantic);
    FAIL() << "runs cut short were read as whole";
  } catch (const UnreachableError& e) {
    EXPECT_NE(std::string(e.what()).find(tmp.path() + " (TMPDIR)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cut short"), std::string::npos) << e.what();
  }
}

namespace {

using connectors::file::FileKeyArchive;
using Entry = core::KeyArchive::Entry;

// A run of `n` distinct random keys (from a small range, so that runs share keys), sorted.
std::vector<Entry> random_run(std::mt19937_64& rng, std::size_t n, std::uint64_t tag) {
  std::map<std::uint64_t, std::uint64_t> keys;
  while (keys.size() < n) {
    keys.emplace(1 + rng() % 20000, (rng() << 8) | tag);
  }
  std::vector<Entry> run;
  for (const auto& [key, value] : keys) {
    run.push_back({key, value});
  }
  return run;
}

// The newest run's entry of `key`, from the runs in memory.
std::optional<std::uint64_t> newest(const std::vector<std::vector<Entry>>& runs, std::uint64_t key) {
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    for (const auto& e : *run) {
      if (e.key == key) {
        return e.value;
      }
    }
  }
  return std::nullopt;
}

// Archives runs of `sizes` random keys (sharing keys between them), then checks that the file never
// shows in TMPDIR and that every key from 0 to 20,001 is answered from the newest run that has it;
// returns how many of those keys the runs hold.
std::size_t expect_newest_answers(FileKeyArchive& archive, const std::string& tmpdir, std::mt19937_64& rng,
                                  std::initializer_list<std::size_t> sizes) {
  std::vector<std::vector<Entry>> runs;
  std::uint64_t tag = 0;
  for (std::size_t n : sizes) {
    runs.push_back(random_run(rng, n, ++tag));
    EXPECT_TRUE(archive.archive(runs.back())) << "a run of " << n;
  }
  EXPECT_TRUE(entries(tmpdir).empty()) << "the archive shows in TMPDIR";
  std::size_t held = 0;
  for (std::uint64_t key = 0; key <= 20001; ++key) {
    auto want = newest(runs, key);
    if (archive.latest(key) != want) {
      ADD_FAILURE() << "key " << key;
      break;
    }
    held += want ? 1 : 0;
  }
  return held;
}

} // namespace

// Runs of 1, 255, 256, 257 and thousands of keys, sharing keys between them: every key in and
// out of them is answered from the newest run that has it, and the file never shows in TMPDIR.
TEST(FileKeyArchive, EachKeyIsFoundInTheNewestRunThatHasIt) {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  std::mt19937_64 rng(41);
  FileKeyArchive archive;
  std::size_t found = expect_newest_answers(archive, tmp.path(), rng, {1u, 255u, 256u, 257u, 5000u, 12000u, 3u});
  EXPECT_GT(found, 10000u);
  EXPECT_EQ(archive.latest(UINT64_MAX), std::nullopt);
}

// The id rule's archive: the same answers, and its filters spare the reads of keys no run has (the
// id rule asks about every id it does not hold, almost all of them new).
TEST(FileKeyArchive, TheIdArchiveAnswersTheSameAndReadsAlmostOnlyForKeysItHas) {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  std::mt19937_64 rng(43);
  FileKeyArchive archive(FileKeyArchive::Use::Ids);
  std::size_t held = expect_newest_answers(archive, tmp.path(), rng, {1u, 257u, 5000u, 12000u});
  ASSERT_FALSE(HasFailure());
  std::uint64_t reads = archive.reads();
  EXPECT_GE(reads, held);
  EXPECT_LT(reads, held + 20002 / 20) << "a read for most absent keys: the filter is not asked";
  std::uint64_t before = archive.reads();
  for (int i = 0; i < 10000; ++i) {
    EXPECT_EQ(archive.latest(30000 + rng() % (UINT64_MAX / 2)), std::nullopt);
  }
  EXPECT_LT(archive.reads() - before, 10000u * 4 / 50) << "under 2% of absent keys read a run";
}

// A TMPDIR that does not exist: no archive (the analyzer keeps every key in memory), and the
// constructor's error names TMPDIR.
TEST(FileKeyArchive, ATmpdirThatCannotBeWrittenGivesNoArchive) {
  TempDir dir;
  ScopedTmpdir scoped(dir.file("missing"));
  EXPECT_EQ(FileKeyArchive::try_create(false), nullptr);
  try {
    FileKeyArchive archive;
    FAIL() << "an archive was created in a missing TMPDIR";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(dir.file("missing") + " (TMPDIR)"), std::string::npos) << e.what();
  }
}

// The same for the id rule's archive, whose error names its own file.
TEST(FileKeyArchive, ATmpdirThatCannotBeWrittenGivesNoIdArchive) {
  TempDir dir;
  ScopedTmpdir scoped(dir.file("missing"));
  EXPECT_EQ(FileKeyArchive::try_create(false, FileKeyArchive::Use::Ids), nullptr);
  try {
    FileKeyArchive archive(FileKeyArchive::Use::Ids);
    FAIL() << "an archive was created in a missing TMPDIR";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("the id rule's temporary file"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir.file("missing") + " (TMPDIR)"), std::string::npos) << e.what();
  }
}

// A TMPDIR that fills: the run that does not fit is refused whole, and the runs before it still
// answer.
TEST(FileKeyArchive, ARunThatDoesNotFitIsRefusedAndTheEarlierOnesStillAnswer) {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  std::mt19937_64 rng(43);
  FileKeyArchive archive;
  std::vector<std::vector<Entry>> runs{random_run(rng, 1000, 1)};
  ASSERT_TRUE(archive.archive(runs.back()));
  std::vector<Entry> big = random_run(rng, 10000, 2);
  bool kept = true;
  with_file_size_limit(64 << 10, [&] { kept = archive.archive(big); });
  EXPECT_FALSE(kept);
  EXPECT_EQ(archive.runs(), 1u);
  for (const auto& e : runs.back()) {
    ASSERT_EQ(archive.latest(e.key), e.value);
  }
  for (const auto& e : big) {
    ASSERT_EQ(archive.latest(e.key), newest(runs, e.key)) << "a refused run answered";
  }
}

// An archive cut short under the analyzer is an UnreachableError naming it: a key it cannot read
// back is not taken for a key it never had.
TEST(FileKeyArchive, AFileCutShortIsAnUnreachableErrorNotAKeyMissed) {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  std::mt19937_64 rng(47);
  FileKeyArchive archive;
  std::vector<Entry> run = random_run(rng, 4000, 1);
  ASSERT_TRUE(archive.archive(run));
  ASSERT_TRUE(cut_open_file_in_half(tmp.path() + "/dedupctl-semantic-"));
  try {
    archive.latest(run.back().key);
    FAIL() << "a key beyond the cut was answered";
  } catch (const UnreachableError& e) {
    EXPECT_NE(std::string(e.what()).find(tmp.path() + " (TMPDIR)"), std::string::npos) << e.what();
  }
}

// With -v, a run TMPDIR cannot hold is said once, naming TMPDIR, with what follows: the keys stay
// in memory from then on.
TEST(FileKeyArchive, ARefusedRunIsSaidWithVerbose) {
  TempDir tmp;
  ScopedTmpdir scoped(tmp.path());
  std::mt19937_64 rng(59);
  auto archive = FileKeyArchive::try_create(true);
  ASSERT_NE(archive, nullptr);
  std::vector<Entry> big = random_run(rng, 10000, 1);
  bool kept = true;
  ::testing::internal::CaptureStderr();
  with_file_size_limit(64 << 10, [&] { kept = archive->archive(big); });
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(kept);
  EXPECT_NE(err.find("the semantic rule keeps every key in memory from here on: cannot write the semantic rule's "
                     "temporary file in " +
                     tmp.path() + " (TMPDIR)"),
            std::string::npos)
      << err;
}
