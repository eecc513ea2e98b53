#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/scan/version_analyzer.hpp"
#include "core/util/flat_map.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace dedupctl::core {

inline constexpr std::int64_t k_default_semantic_window_ms = 5 * 60 * 1000;

// Where the analyzer keeps the keys it no longer holds in memory: runs of entries, each sorted by
// key with every key once; `latest` answers from the newest run that has the key. The semantic rule
// asks only about events whose time could be within the window of an entry it holds, which in a log
// whose partitions are each roughly in time order is almost never; the id rule asks about every id
// it does not hold, so its archive keeps a filter that answers most of them without a read.
// (connectors/file holds them in temporary files; the tests hold them in memory.)
class KeyArchive {
public:
  struct Entry {
    std::uint64_t key = 0;   // the key's place in its table's order (FlatHashMap::order_key)
    std::uint64_t value = 0; // the table's entry (the semantic rule's time and id tag, an id's first payload)
  };
  virtual ~KeyArchive() = default;
  // Keeps one run; false when it could not (nothing of it is kept, and the analyzer holds on).
  virtual bool archive(std::span<const Entry> run) = 0;
  // The entry of the newest run that has `key`; throws UnreachableError when what was kept cannot
  // be read back.
  virtual std::optional<std::uint64_t> latest(std::uint64_t key) = 0;
};

struct LogAnalyzerOptions {
  std::int64_t semantic_window_ms = k_default_semantic_window_ms;
  std::size_t max_examples = 5;
  std::string id_specs = "header:event_id,json:/event_id"; // for advice
  std::size_t expected_events = 1024;                      // sizes the tables up front
  // With an archive, the semantic table holds at most about this many keys: when full, the keys
  // whose latest event is older than every partition still being read by more than the window
  // (and a minute for clocks that disagree) go to the archive, so its memory follows the events
  // within the window, not the range. Without one, every key stays in memory.
  KeyArchive* semantic_archive = nullptr;
  std::size_t semantic_table_limit = std::size_t{1} << 20;
  // With an archive, the id table holds at most this many ids: when full, all of them go to the
  // archive as one run, and an id not in the table is asked there. A log duplicate or reuse can be
  // any distance apart, so the id rule needs every id of the range; this keeps 12 bytes a slot for
  // the latest ones only, and the archive's filter (about 1.5 bytes) for the rest.
  KeyArchive* id_archive = nullptr;
  std::size_t id_table_limit = std::size_t{1} << 20;
  // --version (issue 63): the guard's order; the events' entities and versions are checked too
  // (VersionAnalyzer), their findings among the log's.
  std::optional<VersionOrder> versions;
  // --layout version-guard: the version analyzer keeps every event for the guard's verdicts.
  bool keep_every_event = false;
  // --layout state-guard (with `versions` set): the guard's transitions, which the analyzer walks in
  // place of versions (VersionAnalyzer::use_transitions).
  std::shared_ptr<const TransitionTable> transitions;
};

// Each counter counts events beyond the first of their group (report-v1 "summary").
struct LogCounters {
  std::int64_t events = 0;
  std::int64_t no_id = 0;
  std::int64_t log_duplicates = 0;
  std::int64_t id_reuse = 0;
  std::int64_t semantic_duplicates = 0;
};

// What the log analysis found, in the form shards write down and a merge adds up: the counters and
// one builder per finding.
struct LogTally {
  explicit LogTally(std::size_t max_examples = 5)
      : log_duplicate(max_examples), id_reuse(max_examples), semantic_duplicate(max_examples),
        missing_id(max_examples) {}
  LogCounters counters;
  std::int64_t no_id_binary = 0; // of counters.no_id: a json: spec met a binary payload
  FindingBuilder log_duplicate;
  FindingBuilder id_reuse;
  FindingBuilder semantic_duplicate;
  FindingBuilder missing_id;
};

// The log findings of a tally (one run's, or the merge of shards').
std::vector<Finding> log_findings(const LogTally& tally, const LogAnalyzerOptions& options);

// What the log alone shows: producer retries, reused ids, retries under new ids, events without
// ids. Keeps fingerprints only, never payloads: per id its 64-bit hash and 32 bits of its first
// payload's fingerprint (12 bytes a slot); per semantic key its hash, the latest timestamp
// (40 bits: ms within ±8.7 years of the first event seen) and 24 bits of the latest id's hash (16 bytes).
// A truncated fingerprint can make two different values look equal with probability 2⁻³² (a reuse
// counted as a retry) or 2⁻²⁴ (a semantic duplicate missed); exact counts are otherwise unaffected.
//
// An event whose id was seen before is a log duplicate when its payload matches any earlier
// payload of that id, otherwise an id reuse; either way it is not also a semantic duplicate.
// A semantic duplicate is an event whose semantic key matches the latest earlier event of that key
// under a different id, within the window of its timestamp. Keys moved to the archive are asked
// there, so the verdicts are the same with or without one.
class LogAnalyzer {
public:
  explicit LogAnalyzer(LogAnalyzerOptions options);

  void observe(std::span<const Event> events, std::span<const Identity> identities);
  void observe(const Event& event, const Identity& identity);

  const LogCounters& counters() const { return m_tally.counters; }
  const LogTally& tally() const { return m_tally; }
  // How many semantic keys the table holds now.
  std::size_t semantic_keys() const { return m_semantic.size(); }
  std::vector<Finding> findings() const;
  // --version's findings alone (none without it); the walk over the entities runs once.
  std::vector<Finding> version_findings() const;
  // The version analyzer itself (nullptr without --version): a version guard's audit asks it.
  VersionAnalyzer* versions() const { return m_versions.get(); }

private:
  void observe_log(const Event& event, const Identity& identity); // all but the version analyzer's part
  // (timestamp - m_time_base) << 24 | (id_hash & 0xffffff)
  using SemanticEntry = std::uint64_t;

  // The latest time (relative, as in SemanticEntry) seen on one partition, and the sweep during
  // which it last had an event.
  struct Clock {
    std::int64_t latest = 0;
    std::uint64_t generation = 0;
  };
  void tick(const Event& event, std::int64_t relative);
  void sweep();
  // The id's first payload, from the table or the id archive; inserts `payload` as it when the id
  // is new (`inserted`).
  std::uint32_t first_payload(std::uint64_t id_hash, std::uint32_t payload, bool& inserted);
  void spill_ids();

  LogAnalyzerOptions m_options;
  LogTally m_tally;
  std::unique_ptr<VersionAnalyzer> m_versions;                            // with --version
  FlatHashMap<std::uint32_t> m_first_payload;                             // id → first payload
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> m_reused; // id → later payloads
  std::optional<std::int64_t> m_time_base;
  FlatHashMap<SemanticEntry> m_semantic;
  KeyArchive* m_semantic_archive;
  KeyArchive* m_id_archive;
  std::size_t m_id_limit;
  bool m_ids_archived = false;
  std::size_t m_semantic_limit;
  // Every archived entry's time is below this (relative); none archived: the lowest value.
  std::int64_t m_archived_below = INT64_MIN;
  struct TopicClocks {
    std::string topic;
    std::vector<Clock> partitions; // by partition number
  };
  std::vector<TopicClocks> m_clocks;    // a topic each (few)
  std::size_t m_clock_topic = SIZE_MAX; // the last event's topic's
  std::uint64_t m_generation = 1;
};

// The parts of the semantic rule a merge of shards applies too: 24 bits of the id's hash and the
// timestamp within 40 bits centred on the first event that reached the rule.
struct SemanticStamp {
  static constexpr std::uint64_t k_id_bits = 24;
  static constexpr std::uint64_t k_id_mask = (1ULL << k_id_bits) - 1;
  static std::int64_t relative(std::int64_t timestamp_ms, std::int64_t base_ms);
};
// The note of a semantic duplicate `gap` ms after (or before, negative) the latest earlier event of its key.
std::string semantic_note(std::int64_t gap_ms);
// The note of an id reuse.
std::string reuse_note(std::uint32_t payload, std::uint32_t first_payload);

} // namespace dedupctl::core
