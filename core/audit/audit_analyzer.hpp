#pragma once

#include "core/audit/coverage.hpp"
#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/util/flat_map.hpp"
#include "core/identity/identify.hpp"
#include "core/identity/key_template.hpp"
#include "core/replay/replay.hpp"
#include "core/audit/ttl.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::core {

enum class SideEffect { External, Internal, Idempotent };
std::string_view to_string(SideEffect effect);
// Parses "TYPE=external|internal|idempotent"; throws UsageError.
std::pair<std::string, SideEffect> parse_side_effect(std::string_view text);

struct AuditOptions {
  CoveragePolicy policy;                          // policy.ttl is ignored: ttl decides
  TtlDecision ttl;                                // source None: estimated from the records
  std::map<std::string, SideEffect> side_effects; // unknown types are external
  KeyTemplate key_template = KeyTemplate::parse("{event_id}");
  std::size_t max_examples = 5;
  std::size_t expected_events = 1024;
  std::string window_label = "[from, to)"; // "[seek, committed)" with a seek
  // Partitions not announced with set_partition get a window of everything read (file sources).
  bool default_window = false;
  // Key collisions are looked for here (false: a merge of shards decides them over all shards'
  // keys and hands them in with add_key_collisions).
  bool check_collisions = true;
};

// One partition's replay window: [from, to) (a seek and the committed offset, or the scanned range).
struct WindowBounds {
  std::int64_t from = 0;
  std::int64_t to = 0;
  // A seek by time the broker could not look up (librdkafka's mock cluster): the window starts at
  // the first event read whose timestamp is at or after this, the offset ListOffsets would give;
  // none such: the window is empty (from = to), as a time after the last event gives the log end.
  std::optional<std::int64_t> from_timestamp;
};

// Coverage states over event time in at most k_buckets buckets, for charts: buckets start one
// minute wide and double (merging pairs) whenever an event would not fit, so memory is fixed and
// every event is counted once.
class TimeHistogram {
public:
  static constexpr std::size_t k_buckets = 48;
  void add(std::int64_t timestamp_ms, Coverage state);
  bool empty() const { return m_counts.empty(); }
  std::int64_t origin_ms() const { return m_origin; }
  std::int64_t width_ms() const { return m_width; }
  const std::vector<std::array<std::int64_t, k_coverage_states>>& buckets() const { return m_counts; }

private:
  void coarsen();
  std::int64_t m_origin = 0;
  std::int64_t m_width = 60'000;
  std::vector<std::array<std::int64_t, k_coverage_states>> m_counts;
};

struct PartitionCoverage {
  std::string topic;
  std::int32_t partition = 0;
  std::array<std::int64_t, k_coverage_states> states{};
  std::optional<WindowBounds> window;
  TimeHistogram histogram;
  std::optional<std::int64_t> window_start_ms; // the timestamp of the window's first event (the seek point)
  std::optional<std::int64_t> seek_found;      // a seek by time: the first offset read at or after it
};

struct TypeRisk {
  SideEffect side_effects = SideEffect::External;
  std::int64_t would_reapply = 0;
};

struct SafeFrom {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::optional<std::int64_t> timestamp_ms;
};

struct ReplaySummary {
  std::string window; // "[seek, committed)" or "scanned range"
  std::int64_t events = 0;
  std::int64_t would_skip = 0;
  std::int64_t would_reapply = 0;
  std::int64_t would_skip_unfinished = 0;
  std::int64_t first_delivery = 0; // pending events in the window: applied for the first time
  std::map<std::string, TypeRisk> by_type;
  std::vector<SafeFrom> safe_from;
  std::optional<ReplayRun> run; // replay plans and runs
};

struct AuditResult {
  std::array<std::int64_t, k_coverage_states> states{};
  std::int64_t events = 0;
  std::int64_t no_expiry = 0;
  std::int64_t key_collisions = 0;
  TtlDecision ttl; // what classified the events, with the records' estimate when they allowed one
  std::vector<PartitionCoverage> partitions;
  ReplaySummary replay;
  std::vector<Finding> findings;
};

// Classifies every event against its record and derives the placement's findings. Streaming:
// events are observed batch by batch; absent records wait for finish() only when the TTL must be
// estimated first (then 32 bytes an absent event are kept).
class AuditAnalyzer {
public:
  explicit AuditAnalyzer(AuditOptions options);

  // The partition's committed offset (nullopt without a group) and replay window.
  void set_partition(const std::string& topic, std::int32_t partition, std::optional<std::int64_t> committed,
                     std::optional<WindowBounds> window);

  void observe(const Event& event, const Identity& identity, std::string_view dedup_key, const RecordState& record);

  // Key collisions decided elsewhere (a merge of shards).
  void add_key_collisions(const FindingBuilder& collisions);

  AuditResult finish();

private:
  struct PartitionState {
    PartitionCoverage coverage;
    std::optional<std::int64_t> committed;
    std::optional<std::int64_t> max_bad_offset; // last external re-application in the window
    // (offset, ts) of the window event right after the last external re-application so far:
    // safe_from's timestamp when its offset is max_bad_offset + 1 (else the window start's). One
    // pair a partition, however many events are re-applied.
    std::optional<std::pair<std::int64_t, std::int64_t>> after_bad;
    bool last_bad = false; // the previous window event is an external re-application
  };
  struct Deferred {
    std::int64_t timestamp_ms;
    std::int64_t offset;
    PartitionState* partition; // map nodes are stable
    std::uint16_t type;
    std::int16_t example; // index into m_deferred_examples, or -1
  };

  PartitionState& partition_of(const Event& event);
  std::uint16_t type_index(std::string_view type);
  void count(PartitionState& partition, Coverage state, std::uint16_t type, std::int64_t offset,
             std::int64_t timestamp_ms, bool in_window);
  // `make_example` is only called while the state still wants examples.
  template <typename MakeExample>
  void add_example(Coverage state, std::int32_t partition, MakeExample&& make_example, std::int64_t gap_ms = 0);
  bool in_window(const PartitionState& partition, std::int64_t offset) const;
  // Whether re-applying an event of this type has effects outside (unknown types do).
  bool external(std::uint16_t type) const;

  AuditOptions m_options;
  bool m_defer;
  std::map<std::pair<std::string, std::int32_t>, PartitionState> m_partitions;
  std::pair<const void*, std::int32_t> m_last_key{nullptr, -1};
  PartitionState* m_last = nullptr;
  std::vector<std::string> m_types;
  std::map<std::string, std::uint16_t, std::less<>> m_type_index;
  std::vector<std::int64_t> m_reapplied_by_type;
  AuditResult m_result;
  TtlEstimator m_estimator;
  std::vector<Deferred> m_deferred;
  std::vector<Example> m_deferred_examples;
  std::array<FindingBuilder, k_coverage_states> m_examples;
  FindingBuilder m_collisions;
  FindingBuilder m_reapplied;
  std::int64_t m_max_gap_ms = 0;
  bool m_check_collisions;
  FlatHashMap<std::uint64_t> m_key_owner; // dedup key → the first event id hash rendered to it
};

} // namespace dedupctl::core
