#include "core/identity/identify.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/util/key_filter.hpp"
#include "tests/unit/fakes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::testing::OwnedEvent;
using dedupctl::testing::with_header_id;

namespace {

constexpr std::int64_t k_minute = 60'000;

struct Run {
  LogCounters counters;
  std::vector<Finding> findings;
};

// Identifies each event and hands it to `analyzer`, calling `after()` after each.
template <typename After = void (*)()>
void observe_all(
    LogAnalyzer& analyzer, const std::vector<OwnedEvent>& events, After after = [] {}) {
  Identifier identifier(default_identify_options());
  for (const auto& owned : events) {
    std::vector<Header> headers;
    Event e = dedupctl::testing::view(owned, headers);
    analyzer.observe(e, identifier.identify_one(e));
    after();
  }
}

Run analyze(const std::vector<OwnedEvent>& events, LogAnalyzerOptions analyzer_options = {}) {
  LogAnalyzer analyzer(analyzer_options);
  observe_all(analyzer, events);
  return {analyzer.counters(), analyzer.findings()};
}

const Finding* find(const Run& run, const std::string& id) {
  for (const auto& f : run.findings) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

OwnedEvent ev(std::int64_t offset, std::string id, std::string payload, std::int64_t ts = 0,
              std::int32_t partition = 0) {
  return with_header_id(partition, offset, ts, std::move(id), std::move(payload));
}

} // namespace

TEST(LogAnalyzer, SameIdSamePayloadIsALogDuplicate) {
  auto run = analyze({ev(0, "a", "x"), ev(1, "a", "x"), ev(2, "a", "x"), ev(3, "b", "y")});
  EXPECT_EQ(run.counters.events, 4);
  EXPECT_EQ(run.counters.log_duplicates, 2);
  EXPECT_EQ(run.counters.id_reuse, 0);
  const Finding* f = find(run, "log-duplicate");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Info);
  EXPECT_EQ(f->count, 2);
  ASSERT_EQ(f->examples.size(), 2u);
  EXPECT_EQ(f->examples[0].offset, 1);
  EXPECT_EQ(f->examples[0].event_id, "a");
}

TEST(LogAnalyzer, SameIdDifferentPayloadIsIdReuseWhateverTheOrder) {
  // Payloads A, A, B, A, B under one id: two distinct payloads → 1 reuse, 3 log duplicates.
  std::vector<OwnedEvent> events{ev(0, "a", "A"), ev(1, "a", "A"), ev(2, "a", "B"), ev(3, "a", "A"), ev(4, "a", "B")};
  auto run = analyze(events);
  EXPECT_EQ(run.counters.id_reuse, 1);
  EXPECT_EQ(run.counters.log_duplicates, 3);
  std::reverse(events.begin(), events.end());
  auto reversed = analyze(events);
  EXPECT_EQ(reversed.counters.id_reuse, 1);
  EXPECT_EQ(reversed.counters.log_duplicates, 3);
  const Finding* f = find(run, "id-reuse");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_EQ(f->examples[0].offset, 2);
  EXPECT_NE(f->examples[0].note.find("differs from the first payload"), std::string::npos);
}

TEST(LogAnalyzer, ANewIdForTheSameIntentWithinTheWindowIsASemanticDuplicate) {
  auto run = analyze({ev(0, "e-1", R"({"type":"Charge","order":"o-1","amount":5})", 0),
                      ev(1, "e-2", R"({"type":"Charge","order":"o-1","amount":5})", 4 * k_minute),
                      ev(2, "e-3", R"({"type":"Charge","order":"o-1","amount":5})", 10 * k_minute),
                      ev(3, "e-4", R"({"type":"Charge","order":"o-2","amount":5})", 10 * k_minute)});
  // e-2 is 4 min after e-1 (inside 5m); e-3 is 6 min after e-2 (outside); e-4 is another intent.
  EXPECT_EQ(run.counters.semantic_duplicates, 1);
  const Finding* f = find(run, "semantic-duplicate");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->examples[0].event_id, "e-2");
  EXPECT_EQ(f->examples[0].note, "same semantic key as an event with another id 4m earlier");
}

TEST(LogAnalyzer, TheWindowBoundaryIsInclusive) {
  LogAnalyzerOptions options;
  options.semantic_window_ms = 5 * k_minute;
  auto at_edge = analyze(
      {ev(0, "e-1", R"({"event_id":"e-1","v":1})", 0), ev(1, "e-2", R"({"event_id":"e-2","v":1})", 5 * k_minute)},
      options);
  EXPECT_EQ(at_edge.counters.semantic_duplicates, 1);
  auto past = analyze({ev(0, "e-1", R"({"v":1})", 0), ev(1, "e-2", R"({"v":1})", 5 * k_minute + 1)}, options);
  EXPECT_EQ(past.counters.semantic_duplicates, 0);
}

TEST(LogAnalyzer, ALogDuplicateIsNotAlsoASemanticDuplicate) {
  auto run = analyze({ev(0, "e-1", "same", 0), ev(1, "e-2", "same", 1000), ev(2, "e-1", "same", 2000)});
  EXPECT_EQ(run.counters.log_duplicates, 1);
  EXPECT_EQ(run.counters.semantic_duplicates, 1);
}

TEST(LogAnalyzer, EventsWithoutIdsAreCountedWithTheReason) {
  OwnedEvent no_id;
  no_id.offset = 9;
  no_id.partition = 4;
  no_id.payload = "not json";
  auto run = analyze({no_id, ev(1, "a", "x")});
  EXPECT_EQ(run.counters.no_id, 1);
  const Finding* f = find(run, "missing-event-id");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->partitions, std::vector<std::int32_t>{4});
  EXPECT_EQ(f->examples[0].note, "no header event_id, payload is not JSON");
  EXPECT_EQ(f->examples[0].event_id, "");
}

TEST(LogAnalyzer, EventsWithBinaryPayloadsAreCountedApartWithWhatToDo) {
  OwnedEvent binary;
  binary.offset = 9;
  binary.payload = std::string("\x02\x0ae-17\xff", 6);
  OwnedEvent text = binary;
  text.offset = 10;
  text.payload = "not json";
  auto run = analyze({binary, text, binary, ev(1, "a", "x")});
  EXPECT_EQ(run.counters.no_id, 3);
  const Finding* f = find(run, "missing-event-id");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "3 events carry no event id (2 of them have a binary payload that json: specs cannot read)");
  EXPECT_NE(f->advice.find("--id header:event_id"), std::string::npos) << f->advice;
  EXPECT_EQ(f->examples[0].note, "no header event_id, payload is binary, not JSON (Avro or Protobuf? see --registry)");
  auto plain = analyze({text});
  EXPECT_EQ(find(plain, "missing-event-id")->title, "1 events carry no event id");
}

TEST(LogAnalyzer, ExamplesAreBoundedButCountsAreExact) {
  std::vector<OwnedEvent> events;
  for (int i = 0; i < 100; ++i) {
    events.push_back(ev(i, "same", "same", i, i % 7));
  }
  LogAnalyzerOptions options;
  options.max_examples = 3;
  auto run = analyze(events, options);
  const Finding* f = find(run, "log-duplicate");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 99);
  EXPECT_EQ(f->examples.size(), 3u);
  EXPECT_EQ(f->partitions.size(), 7u);
}

TEST(LogAnalyzer, ACleanLogHasNoFindings) {
  auto run = analyze({ev(0, "a", R"({"v":1})", 0), ev(1, "b", R"({"v":2})", 0)});
  EXPECT_TRUE(run.findings.empty());
  EXPECT_EQ(run.counters.events, 2);
}

TEST(LogAnalyzer, AMillionDistinctIdsAreAllDistinct) {
  // The flat tables must neither lose nor merge ids as they grow.
  LogAnalyzer analyzer(LogAnalyzerOptions{});
  Event e;
  e.topic = "t";
  for (std::uint64_t i = 0; i < 1'000'000; ++i) {
    Identity id;
    id.has_id = true;
    id.id_hash = i * 0x9e3779b97f4a7c15ULL;
    id.payload_fingerprint = i;
    id.semantic_hash = (i + 1) * 0xc2b2ae3d27d4eb4fULL; // hash-like; 0 and 1 share a slot by design
    analyzer.observe(e, id);
  }
  EXPECT_EQ(analyzer.counters().events, 1'000'000);
  EXPECT_EQ(analyzer.counters().log_duplicates + analyzer.counters().id_reuse + analyzer.counters().semantic_duplicates,
            0);
}

namespace {

// The archive in memory: runs of sorted entries, the newest asked first.
class MemoryArchive final : public KeyArchive {
public:
  bool archive(std::span<const Entry> run) override {
    if (refuse) {
      return false;
    }
    EXPECT_TRUE(std::is_sorted(run.begin(), run.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; }));
    runs.emplace_back(run.begin(), run.end());
    archived += run.size();
    return true;
  }
  std::optional<std::uint64_t> latest(std::uint64_t key) override {
    ++asked;
    for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
      auto it =
          std::lower_bound(run->begin(), run->end(), key, [](const Entry& e, std::uint64_t k) { return e.key < k; });
      if (it != run->end() && it->key == key) {
        ++found;
        return it->value;
      }
    }
    return std::nullopt;
  }
  bool refuse = false;
  std::vector<std::vector<Entry>> runs;
  std::size_t archived = 0;
  std::size_t asked = 0;
  std::size_t found = 0;
};

void expect_same_run(const Run& got, const Run& truth, const std::string& what) {
  EXPECT_EQ(got.counters.events, truth.counters.events) << what;
  EXPECT_EQ(got.counters.log_duplicates, truth.counters.log_duplicates) << what;
  EXPECT_EQ(got.counters.id_reuse, truth.counters.id_reuse) << what;
  EXPECT_EQ(got.counters.semantic_duplicates, truth.counters.semantic_duplicates) << what;
  ASSERT_EQ(got.findings.size(), truth.findings.size()) << what;
  for (std::size_t f = 0; f < truth.findings.size(); ++f) {
    const Finding& g = got.findings[f];
    const Finding& t = truth.findings[f];
    EXPECT_EQ(g.id, t.id) << what;
    EXPECT_EQ(g.count, t.count) << what << " " << t.id;
    EXPECT_EQ(g.partitions, t.partitions) << what << " " << t.id;
    ASSERT_EQ(g.examples.size(), t.examples.size()) << what << " " << t.id;
    for (std::size_t i = 0; i < t.examples.size(); ++i) {
      EXPECT_EQ(g.examples[i].event_id, t.examples[i].event_id) << what << " " << t.id << " example " << i;
      EXPECT_EQ(g.examples[i].partition, t.examples[i].partition) << what << " " << t.id << " example " << i;
      EXPECT_EQ(g.examples[i].offset, t.examples[i].offset) << what << " " << t.id << " example " << i;
      EXPECT_EQ(g.examples[i].note, t.examples[i].note) << what << " " << t.id << " example " << i;
    }
  }
}

// A log of `partitions` partitions read a block at a time in turn, each partition's clock moving on
// by up to 4 s an event; one event in `late_every` carries a time up to an hour back (a producer's
// clock behind), so that its key may be archived. Few payloads (the semantic key) at a time and
// some ids repeated, so that every rule fires.
std::vector<OwnedEvent> clocked_log(std::mt19937_64& rng, int partitions, int events, int late_every) {
  std::vector<OwnedEvent> log;
  std::vector<std::int64_t> clock(partitions, 1'700'000'000'000);
  std::vector<std::int64_t> offset(partitions, 0);
  int p = 0;
  while (static_cast<int>(log.size()) < events) {
    int block = 1 + static_cast<int>(rng() % 8);
    for (int b = 0; b < block; ++b) {
      clock[p] += static_cast<std::int64_t>(rng() % 4000);
      std::int64_t ts = clock[p];
      // The intents drift: each is met within a hundred events or so, then no more; a late event
      // (a retry sent again long after) is an old intent.
      std::size_t intent = log.size() / 3 + rng() % 30;
      if (late_every > 0 && rng() % late_every == 0) {
        ts -= static_cast<std::int64_t>(rng() % (60 * k_minute));
        intent -= std::min<std::size_t>(intent, rng() % 300);
      }
      std::string id = rng() % 20 == 0 ? "id-" + std::to_string(rng() % 50) : "id-" + std::to_string(rng());
      std::string payload = "intent-" + std::to_string(intent) + (rng() % 40 == 0 ? "-other" : "");
      log.push_back(ev(offset[p]++, id, payload, ts, p));
    }
    p = (p + 1) % partitions;
  }
  return log;
}

} // namespace

// With a small table that sweeps often, keys moved to the archive are still found there: counts,
// partitions and examples are those of the analyzer that holds every key, over logs in and out of
// time order.
TEST(LogAnalyzer, ArchivingOldSemanticKeysChangesNoVerdict) {
  std::mt19937_64 rng(29);
  std::size_t asked = 0;
  std::size_t found = 0;
  int archived_trials = 0;
  for (int trial = 0; trial < 30; ++trial) {
    int partitions = 1 + static_cast<int>(rng() % 6);
    int late_every = trial % 3 == 0 ? 0 : 20 + static_cast<int>(rng() % 100);
    auto log = clocked_log(rng, partitions, 3000, late_every);
    LogAnalyzerOptions options;
    options.max_examples = 4;
    ::Run truth = analyze(log, options);
    MemoryArchive archive;
    options.semantic_archive = &archive;
    options.semantic_table_limit = 64;
    ::Run got = analyze(log, options);
    std::string what = "trial " + std::to_string(trial);
    expect_same_run(got, truth, what);
    archived_trials += archive.runs.empty() ? 0 : 1;
    asked += archive.asked;
    found += archive.found;
    if (HasFailure()) {
      return;
    }
  }
  EXPECT_GE(archived_trials, 20);
  EXPECT_GT(asked, 100u); // late events met archived keys, and some were within the window
  EXPECT_GT(found, 10u);
  ASSERT_GT(analyze(clocked_log(rng, 3, 3000, 30), {}).counters.semantic_duplicates, 0);
}

// The table holds what the window needs, not the range: 100,000 events ten hours apart from the
// first to the last (about 1,000 within the window and the slack), through a table of 4,096 keys.
TEST(LogAnalyzer, TheSemanticTableFollowsTheWindowNotTheRange) {
  MemoryArchive archive;
  LogAnalyzerOptions options;
  options.semantic_archive = &archive;
  options.semantic_table_limit = 4096;
  std::vector<OwnedEvent> log;
  for (int i = 0; i < 100'000; ++i) {
    log.push_back(
        ev(i / 4, "id-" + std::to_string(i), "intent-" + std::to_string(i), 1'700'000'000'000 + i * 360, i % 4));
  }
  LogAnalyzer analyzer(options);
  std::size_t held = 0;
  observe_all(analyzer, log, [&] { held = std::max(held, analyzer.semantic_keys()); });
  EXPECT_LE(held, 4096u);
  EXPECT_GT(archive.archived, 90'000u);
  EXPECT_EQ(archive.asked, 0u); // in time order nothing is asked back
  EXPECT_EQ(analyzer.counters().semantic_duplicates, 0);
}

// An archive that cannot keep a run (TMPDIR full) leaves every key in memory: the same verdicts,
// for the semantic rule's and for the id rule's.
TEST(LogAnalyzer, AnArchiveThatRefusesKeepsEveryKeyInMemory) {
  std::mt19937_64 rng(37);
  auto log = clocked_log(rng, 3, 3000, 25);
  ::Run truth = analyze(log, {});
  for (bool ids : {false, true}) {
    MemoryArchive archive;
    archive.refuse = true;
    LogAnalyzerOptions options;
    (ids ? options.id_archive : options.semantic_archive) = &archive;
    options.semantic_table_limit = 64;
    options.id_table_limit = 64;
    expect_same_run(analyze(log, options), truth, ids ? "ids refused" : "semantic keys refused");
    EXPECT_TRUE(archive.runs.empty());
    EXPECT_EQ(archive.asked, 0u);
  }
}

// A table whose keys are all within the window frees nothing by a sweep: it grows instead, and
// hands the archive nothing (rather than sweeping, and archiving empty runs, on every insert).
TEST(LogAnalyzer, KeysAllWithinTheWindowGrowTheTableInsteadOfArchiving) {
  std::vector<OwnedEvent> log;
  for (int i = 0; i < 2000; ++i) { // 2,000 intents within two seconds
    log.push_back(ev(i, "id-" + std::to_string(i), "intent-" + std::to_string(i), 1'700'000'000'000 + i, i % 3));
  }
  MemoryArchive archive;
  LogAnalyzerOptions options;
  options.semantic_archive = &archive;
  options.semantic_table_limit = 64;
  LogAnalyzer analyzer(options);
  observe_all(analyzer, log);
  EXPECT_TRUE(archive.runs.empty());
  EXPECT_EQ(analyzer.semantic_keys(), 2000u);
}

// With an id table of 64 ids that goes to the archive whenever full, every id is still found:
// retries and reused ids far apart (ids drawn again from 50 across the whole log) give the counts,
// partitions and examples of the analyzer that holds every id, both rules' archives at once.
TEST(LogAnalyzer, ArchivingIdsChangesNoVerdict) {
  std::mt19937_64 rng(41);
  std::size_t found = 0;
  std::size_t asked = 0;
  for (int trial = 0; trial < 20; ++trial) {
    auto log = clocked_log(rng, 1 + static_cast<int>(rng() % 5), 3000, trial % 2 == 0 ? 0 : 40);
    LogAnalyzerOptions options;
    options.max_examples = 4;
    ::Run truth = analyze(log, options);
    MemoryArchive ids;
    MemoryArchive semantic;
    options.id_archive = &ids;
    options.id_table_limit = 64;
    options.semantic_archive = trial % 4 < 2 ? &semantic : nullptr;
    options.semantic_table_limit = 64;
    expect_same_run(analyze(log, options), truth, "trial " + std::to_string(trial));
    EXPECT_GE(ids.runs.size(), 30u);
    found += ids.found;
    asked += ids.asked;
    if (HasFailure()) {
      return;
    }
  }
  EXPECT_GT(found, 1000u); // repeated ids met their first payload in the archive
  EXPECT_GT(asked, 20'000u);
}
