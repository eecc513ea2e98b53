#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

// One partition of a source, in the three forms a run meets it: what the broker says of it
// (PartitionFacts), what the reader reads of it (PartitionPlan), and what the report says of it
// (PartitionRange).
namespace dedupctl::core {

inline constexpr std::int64_t k_offset_max = std::numeric_limits<std::int64_t>::max();

// What the broker told us about one partition.
struct PartitionFacts {
  std::int64_t log_start = 0;
  std::int64_t log_end = 0;
  std::optional<std::int64_t> committed;   // the group's committed offset, if any
  std::optional<std::int64_t> time_lookup; // answer to offsets_for_times, -1 for "none/unknown"
};

// What to read of one partition: [start, end), optionally narrowed by timestamps when the broker
// could not resolve a time SPEC to an offset.
struct PartitionPlan {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t start = 0;
  std::int64_t end = k_offset_max;
  std::optional<std::int64_t> skip_before_ts; // skip until the first event with ts >= this
  std::optional<std::int64_t> stop_at_ts;     // stop at the first event with ts >= this
  // Where this partition stands in the canonical order (canonical_seq): its index among all the
  // partitions of the resolved range (`ranks` of them, whichever shard reads it) and the offset
  // its rounds count from (the range's start, kept when a replay resumes later).
  std::uint32_t rank = 0;
  std::uint32_t ranks = 1;
  std::int64_t order_base = 0;
};

// One partition of the range as resolved and read: the report's `source.partitions[]`.
struct PartitionRange {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t from = 0; // first offset of the range (inclusive)
  std::int64_t to = 0;   // end of the range (exclusive)
  std::optional<std::int64_t> log_start;
  std::optional<std::int64_t> log_end;
  std::optional<std::int64_t> committed;
  std::optional<std::int64_t> seek;
  // The seek was a time the broker could not look up: the audit finds its offset while reading.
  std::optional<std::int64_t> seek_timestamp;
  std::int64_t events = 0;
  std::optional<std::int64_t> first_timestamp;
  std::optional<std::int64_t> last_timestamp;
  // The requested start lay before the log start.
  bool clamped = false;
  std::int64_t requested_from = 0;
  // The requested start was a time the broker could not resolve; the reader skipped older events.
  std::optional<std::int64_t> from_timestamp;
};

} // namespace dedupctl::core
