#pragma once

#include "core/audit/coverage.hpp"
#include "core/audit/effects.hpp"
#include "core/audit/time_histogram.hpp"
#include "core/audit/ttl.hpp"
#include "core/finding.hpp"
#include "core/replay_summary.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

// What an audit found: the data the report model (reports/) and the merge of shards read, apart
// from the analyzer that fills it.
namespace dedupctl::core {

// One partition's replay window: [from, to) (a seek and the committed offset, or the scanned range).
struct WindowBounds {
  std::int64_t from = 0;
  std::int64_t to = 0;
  // A seek by time the broker could not look up (librdkafka's mock cluster): the window starts at
  // the first event read whose timestamp is at or after this, the offset ListOffsets would give;
  // none such: the window is empty (from = to), as a time after the last event gives the log end.
  std::optional<std::int64_t> from_timestamp;
};

// Whether an event (read in its partition's log order) is in the window; a seek by time starts the
// window at the first event at or after its time (`found` is set for that one).
inline bool enter_window(WindowBounds& bounds, std::int64_t offset, std::int64_t timestamp_ms, bool& found) {
  found = false;
  if (bounds.from_timestamp && timestamp_ms >= *bounds.from_timestamp) {
    bounds.from = std::min(offset, bounds.to);
    bounds.from_timestamp.reset();
    found = true;
  }
  return offset >= bounds.from && offset < bounds.to;
}

struct PartitionCoverage {
  std::string topic;
  std::int32_t partition = 0;
  std::array<std::int64_t, k_coverage_states> states{};
  std::optional<WindowBounds> window;
  TimeHistogram histogram;
  std::optional<std::int64_t> window_start_ms; // the timestamp of the window's first event (the seek point)
  std::optional<std::int64_t> seek_found;      // a seek by time: the first offset read at or after it
};

struct AuditResult {
  std::array<std::int64_t, k_coverage_states> states{};
  std::int64_t events = 0;
  std::int64_t no_expiry = 0;
  std::int64_t superseded = 0; // a version guard's missing events a higher version in the range follows
  std::int64_t key_collisions = 0;
  TtlDecision ttl; // what classified the events, with the records' estimate when they allowed one
  std::vector<PartitionCoverage> partitions;
  ReplaySummary replay;
  std::vector<Finding> findings;
  std::optional<EffectCounts> effects; // with --effects
  // With --effects: the events marked processed whose effects were looked up, none found (0: some were,
  // or none was looked up); the effects-unmatched finding.
  std::int64_t effects_unmatched = 0;
};

} // namespace dedupctl::core
