#pragma once

#include "core/audit/audit_analyzer.hpp"
#include "core/audit/coverage.hpp"
#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/source/source_info.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// Sharded runs and their merge (dedupctl merge): what a shard writes down besides its report, and
// how the analyses that span partitions are decided over all shards, exactly as one process over
// the whole range decides them. Pure: the digest files are read and written in connectors/file.
namespace dedupctl::core {

// At most this many shards: a merge reads five sections of each digest at once, each with a file
// descriptor of its own (640 stay under the usual limit of 1,024).
inline constexpr std::uint32_t k_max_shards = 128;

// --shard K/N: partition p of each topic belongs to shard p mod N.
struct ShardSpec {
  std::uint32_t index = 0;
  std::uint32_t count = 1;
  bool owns(std::int32_t partition) const {
    return partition >= 0 && static_cast<std::uint32_t>(partition) % count == index;
  }
};
// "K/N" with 0 <= K < N; throws UsageError naming --shard.
ShardSpec parse_shard(std::string_view text);

// One event with an id, as its shard's digest keeps it for the analyses that span partitions (id
// reuse and log duplicates, semantic duplicates, key collisions): the fingerprints the analyzers
// keep, and where the event stands in the canonical order.
struct DigestRecord {
  std::uint64_t id_hash = 0;
  std::uint64_t semantic_hash = 0;
  std::uint64_t key_hash = 0; // of the dedup key (audits whose key template lacks {event_id}); 0 otherwise
  std::uint64_t seq = 0;
  std::int64_t timestamp_ms = 0;
  std::uint32_t payload = 0; // 32 bits of the payload fingerprint, as LogAnalyzer compares them
  std::int32_t partition = 0;
};
static_assert(sizeof(DigestRecord) == 48);

// The orders a digest holds its records in: each analysis reads the records of one key together.
enum class DigestOrder { Id, Semantic, Key };
// The record's key in that order; a hash of 0 is 1, as the analyzers' tables store it. (Inline:
// a shard's sort and a merge call these a few times an event.)
inline std::uint64_t digest_key(const DigestRecord& record, DigestOrder order) {
  std::uint64_t key = order == DigestOrder::Id         ? record.id_hash
                      : order == DigestOrder::Semantic ? record.semantic_hash
                                                       : record.key_hash;
  return key == 0 ? 1 : key;
}
inline bool digest_before(const DigestRecord& a, const DigestRecord& b, DigestOrder order) {
  auto ka = digest_key(a, order);
  auto kb = digest_key(b, order);
  return ka != kb ? ka < kb : a.seq < b.seq;
}

// An event as a shard read it: its details for the examples a merge picks (by seq), and for an
// audit what its dedup record was, which a merge classifies again in the canonical order.
struct DigestEvent {
  std::uint64_t seq = 0;
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = -1;
  bool has_id = false;
  std::string event_id;
  std::string type;
  std::string dedup_key;
  bool present = false; // the record (audit)
  std::optional<std::int64_t> pttl_ms;
  std::optional<std::int64_t> processed_at_ms;
  std::string value;
};

// A digest section read in its order (connectors/file reads them from the shard's file).
class DigestRecords {
public:
  virtual ~DigestRecords() = default;
  virtual bool next(DigestRecord& record) = 0;
};
class DigestEvents {
public:
  virtual ~DigestEvents() = default;
  virtual bool next(DigestEvent& event) = 0;
};

// Calls on_item with every item of `streams` (each in `before` order, read with next(Item&)) in
// `before` order: the merge's k-way merges, by key and by seq.
template <typename Item, typename Stream, typename Before, typename OnItem>
void kway_merge(const std::vector<Stream*>& streams, Before before, OnItem&& on_item) {
  struct Head {
    Item item;
    std::size_t stream;
  };
  auto later = [&before](const Head& a, const Head& b) { return before(b.item, a.item); };
  std::vector<Head> heap;
  for (std::size_t i = 0; i < streams.size(); ++i) {
    Head head{Item{}, i};
    if (streams[i]->next(head.item)) {
      heap.push_back(std::move(head));
    }
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    Head& head = heap.back();
    on_item(std::as_const(head.item));
    if (streams[head.stream]->next(head.item)) {
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      heap.pop_back();
    }
  }
}

// What an audit's shard sets up before reading, for the merge to classify the events again.
struct PartitionWindow {
  std::string topic;
  std::int32_t partition = 0;
  std::optional<std::int64_t> committed;
  std::optional<WindowBounds> window;
};
struct AuditDigest {
  AuditOptions options; // as the shard's AuditAnalyzer got them
  bool has_seek = false;
  std::vector<PartitionWindow> windows; // its set_partition calls
  // The placement as the report shows it (its TTL is the merge's to decide).
  std::string kind;
  std::string store;
  std::string consumer;
  std::optional<RetentionDecision> retention;
  std::vector<Finding> placement_findings; // what the store itself showed
};

// Where a shard's events and records go as they are read (connectors/file's DigestWriter, which
// sorts the records with bounded memory).
class DigestSink {
public:
  virtual ~DigestSink() = default;
  // Every event, in canonical order; `record` is the audit's (nullptr for a scan).
  virtual void add_event(const Event& event, const Identity& identity, std::string_view dedup_key,
                         const RecordState* record) = 0;
  // The record of every event with an id, in canonical order. Its key_hash is 0 exactly when dedup
  // keys are not compared: the key order holds the records whose key_hash is not 0.
  virtual void add_record(const DigestRecord& record) = 0;
};

// Hands each event's details and record to the sink, and keeps what the shard's header needs; a
// command's pipeline fills it, its command writes it. Holds nothing per event.
class DigestRecorder {
public:
  explicit DigestRecorder(DigestSink& sink) : m_sink(sink) {}
  // Whether dedup keys are compared (an audit's key template without {event_id}); before observe.
  // Keys are kept for the merge's collision check where the template may make two ids one key, and
  // only for the ids whose key may be another's (core::key_may_collide).
  void set_check_keys(KeyTemplate::Injectivity injectivity) {
    m_injectivity = injectivity;
    m_check_keys = injectivity != KeyTemplate::Injectivity::Injective;
  }
  void observe(const Event& event, const Identity& identity, std::string_view dedup_key,
               const RecordState* record = nullptr);
  bool check_keys() const { return m_check_keys; }

  LogTally log;                   // the run's log analysis, at its end
  LogAnalyzerOptions log_options; // and its options
  std::optional<AuditDigest> audit;
  // What decides the verdicts besides the report's own settings (an audit's identity specs, key
  // template, TTL, side effects …): shards must agree on these too.
  std::vector<std::pair<std::string, std::string>> settings;

private:
  DigestSink& m_sink;
  bool m_check_keys = false;
  KeyTemplate::Injectivity m_injectivity = KeyTemplate::Injectivity::Injective;
};

// What a shard writes down besides its records: its settings, its share of the range, what it
// read, and what it decided partition by partition.
struct DigestHeader {
  std::string command; // scan (audit later)
  ShardSpec shard;
  std::int64_t generated_at_ms = 0;
  bool complete = true;
  int exit_code = 0;
  std::optional<std::string> error;
  // Everything that must be equal across shards for the merge to be exact: the analysis settings
  // and the resolved range (or, for a dump, its size and hash), as text.
  std::string settings_key;
  std::string range_key;
  std::vector<std::pair<std::string, std::string>> settings; // the report's, for people
  std::map<std::string, std::string> settings_origin;
  std::string fail_on = "error";
  LogAnalyzerOptions log_options;
  bool check_keys = false;
  std::vector<std::string> range_order; // "topic[partition]" of the whole range, in rank order
  SourceInfo source;                    // this shard's partitions, as read
  LogTally log;                         // its own events' log analysis (the local parts count)
  std::optional<AuditDigest> audit;
};

// The findings that span partitions, decided over every shard's records.
struct CrossPartitionTally {
  explicit CrossPartitionTally(std::size_t max_examples)
      : log_duplicate(max_examples), id_reuse(max_examples), semantic_duplicate(max_examples),
        key_collision(max_examples) {}
  FindingBuilder log_duplicate;
  FindingBuilder id_reuse;
  FindingBuilder semantic_duplicate;
  FindingBuilder key_collision;
};

// One pass per order over the shards' sections (k-way merged, each group of one key in canonical
// order), applying LogAnalyzer's and AuditAnalyzer's rules for the first occurrence; then the
// examples (the lowest seq of each finding) are filled in from the shards' events. Memory holds
// one key's records at a time, the seqs of repeated ids, and the examples.
CrossPartitionTally merge_cross_partition(const std::vector<DigestRecords*>& by_id,
                                          const std::vector<DigestRecords*>& by_semantic,
                                          const std::vector<DigestRecords*>& by_key,
                                          const std::vector<DigestEvents*>& events, const LogAnalyzerOptions& options);

} // namespace dedupctl::core
