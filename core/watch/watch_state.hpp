#pragma once

#include "core/audit/coverage.hpp"
#include "core/audit/effects.hpp"
#include "core/side_effect.hpp"
#include "core/store/dedup_store.hpp"

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// What `dedupctl watch` holds of the replayable range, and the states it derives from it as time
// passes (docs/design.md "Coverage", re-decided at every `now`). Pure: the watcher in
// commands/ reads the log, looks the records up and hands both in with the time of the lookup.
namespace dedupctl::core {

inline constexpr std::int64_t k_never_ms = std::numeric_limits<std::int64_t>::max();

// A record as last looked up, in a form that stays true as time passes: a Redis record's remaining
// TTL becomes the time it lapses (it is gone then, without another lookup); an inbox row keeps its
// processed_at, since the row stays until the cleanup job deletes it and only then does a lookup
// see it gone.
struct TrackedRecord {
  enum class Kind : std::uint8_t { NoId, Absent, Present, Claim, Row, RowClaim, LeasedClaim };
  Kind kind = Kind::Absent;
  // Present and Claim: when the record lapses (for a layout's record, its own expiry where that comes
  // first); Row and RowClaim: processed_at; LeasedClaim (a layout's claim with a lease of its own):
  // when the lease ends; k_never_ms: never (no TTL, a NULL processed_at).
  std::int64_t lapses_at_ms = k_never_ms;
  Effect effect = Effect::Unchecked; // --effects: the consumer's effect, looked up with the record
};

// The record a lookup at `looked_up_at_ms` returned, tracked: a claim marker is a Claim (its lease is
// the event's, decided by classify).
TrackedRecord track(const RecordState& record, std::int64_t looked_up_at_ms, const CoveragePolicy& policy);

// Whether records may have gone without a lookup telling: the store is another incarnation (it
// restarted or failed over), or it holds fewer keys than its expiries and evictions since `before`
// explain (a FLUSHALL, a replica promoted with an older keyspace). A watcher then looks every record
// up again at once instead of at its next refresh.
bool keyspace_lost_records(const KeyspaceProbe& before, const KeyspaceProbe& after);

// A seek being priced: its name as the metric label shows it, and per partition the offset it
// resolves to now (a partition without one is not in its window).
struct WatchSeek {
  std::string name;
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> offsets;
};

struct PartitionGauge {
  std::string topic;
  std::int32_t partition = 0;
  std::array<std::int64_t, k_coverage_states> states{}; // by Coverage
};

struct WatchGauges {
  std::vector<PartitionGauge> partitions; // those announced and read once at least
  // (topic, seek name, side effect class) → events a seek would re-apply now
  std::map<std::tuple<std::string, std::string, std::string>, std::int64_t> would_reapply;
  // topic → seconds until the next record lapses while its event stays replayable: 0 when one has
  // already, +inf when none will.
  std::map<std::string, double> seconds_until_ttl_gap;
  std::optional<std::int64_t> ttl_estimate_high_ms; // what present records say of an undeclared TTL
  std::map<std::string, EffectCounts> effects;      // --effects: by topic
};

struct WatchPolicy {
  CoveragePolicy policy;                          // now_ms is evaluate's; ttl declared or unknown
  bool ttl_declared = false;                      // else the records' estimate decides it
  std::map<std::string, SideEffect> side_effects; // unknown types are external
  bool effects = false;                           // each event's effect is tracked (--effects)
};

// The replayable range of every watched partition, event by event in offset order: its offset,
// timestamp, type and record, 23 bytes an event in blocks of 4,096 (no other per-event memory).
class WatchState {
public:
  explicit WatchState(WatchPolicy policy);

  // The TTL or retention decided again (the side effects stay as they were).
  void set_policy(WatchPolicy policy) { m_policy = std::move(policy); }
  const WatchPolicy& policy() const { return m_policy; }

  // A partition being watched, with its group's committed offset (nullopt without a group) and the
  // start of its log: events before it left the range and are dropped.
  void set_partition(const std::string& topic, std::int32_t partition, std::optional<std::int64_t> committed,
                     std::int64_t log_start);
  // The partition has been read from its log start once: its gauges can be shown.
  void set_complete(const std::string& topic, std::int32_t partition);

  // An event that arrived; its offset is past every offset held for the partition.
  void append(const std::string& topic, std::int32_t partition, std::int64_t offset, std::int64_t timestamp_ms,
              std::string_view type, const TrackedRecord& record);
  // A refresh: the event's record looked up again; false when the event is not held.
  bool update(const std::string& topic, std::int32_t partition, std::int64_t offset, const TrackedRecord& record);
  // A present record's remaining TTL seen at a lookup (the TTL estimate of docs/design.md).
  void observe_ttl(std::int64_t pttl_ms, std::int64_t timestamp_ms, std::int64_t looked_up_at_ms);

  // Where reading goes on: one past the last offset held, or the log start.
  std::optional<std::int64_t> next_offset(const std::string& topic, std::int32_t partition) const;

  WatchGauges evaluate(std::int64_t now_ms, const std::vector<WatchSeek>& seeks) const;

  std::int64_t events() const;
  // The bytes the events take (their blocks), for the figure per event.
  std::size_t bytes() const;

private:
  static constexpr std::size_t k_block = 4096;
  struct Block {
    std::int64_t base_offset = 0;
    std::vector<std::uint32_t> offset_delta;
    std::vector<std::int64_t> timestamp;
    std::vector<std::int64_t> lapses_at;
    std::vector<std::uint16_t> type;
    std::vector<std::uint8_t> kind;
    std::size_t size() const { return offset_delta.size(); }
    std::int64_t offset(std::size_t i) const { return base_offset + offset_delta[i]; }
  };
  struct Partition {
    std::optional<std::int64_t> committed;
    std::int64_t log_start = 0;
    bool complete = false;
    std::deque<Block> blocks;
    std::size_t dropped = 0; // events dropped from the front block
  };
  Partition& partition_of(const std::string& topic, std::int32_t partition);
  const Partition* find(const std::string& topic, std::int32_t partition) const;
  std::uint16_t type_index(std::string_view type);
  static void drop_before(Partition& p, std::int64_t log_start);

  WatchPolicy m_policy;
  TtlEstimator m_estimator;
  std::map<std::pair<std::string, std::int32_t>, Partition> m_partitions;
  std::vector<std::string> m_types;
  std::vector<std::uint8_t> m_type_effect; // by type index: its SideEffect
  std::map<std::string, std::uint16_t, std::less<>> m_type_index;
};

} // namespace dedupctl::core
