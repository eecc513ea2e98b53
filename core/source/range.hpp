#pragma once

#include "core/event.hpp"
#include "core/source/partition.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace dedupctl::core {

// Events are analysed in one order that every source, every run and every shard agrees on, so that
// "the first occurrence" and "the first five examples" never depend on which partition a broker
// happened to answer first: round-robin over the range's partitions (by rank) in blocks of
// order_block(ranks) offsets each. An event's place in it is computable from its position alone,
// which is what lets shards that each read some partitions be merged exactly (dedupctl merge).
// A round holds a block of every partition, which a reader must have before the next round: the
// block shrinks as partitions grow (1,024 offsets up to 64 partitions, 16 from 4,096), so that a
// round stays near 64k events.
constexpr std::int64_t order_block(std::uint32_t ranks) {
  std::int64_t block = 65536 / std::max<std::int64_t>(1, ranks);
  return block > 1024 ? 1024 : (block < 16 ? 16 : block);
}

// The event's place in that order: round (offset - base) / block, then rank, then offset.
std::uint64_t canonical_seq(const PartitionPlan& plan, std::int64_t offset);

// Decides, event by event, what of a partition is in range. Shared by every source so that a
// Kafka range and a kcat dump of it deliver the same events.
class PartitionCursor {
public:
  explicit PartitionCursor(PartitionPlan plan) : m_plan(std::move(plan)) {
    m_position.topic = m_plan.topic;
    m_position.partition = m_plan.partition;
    m_done = m_plan.start >= m_plan.end;
  }

  // True when the event is in range (and counts it); false to drop it.
  bool admit(std::int64_t offset, std::int64_t timestamp_ms) {
    if (m_done || offset < m_plan.start) {
      return false;
    }
    if (offset >= m_plan.end) {
      m_done = true;
      return false;
    }
    if (offset + 1 >= m_plan.end) {
      m_done = true; // the last offset of the range; decided below whether it is delivered
    }
    if (!m_started) {
      if (m_plan.skip_before_ts && timestamp_ms < *m_plan.skip_before_ts) {
        return false;
      }
      m_started = true;
    }
    if (m_plan.stop_at_ts && timestamp_ms >= *m_plan.stop_at_ts) {
      m_done = true;
      m_position.stopped_at = offset;
      return false;
    }
    ++m_position.events;
    if (!m_position.first_offset) {
      m_position.first_offset = offset;
      m_position.first_timestamp = timestamp_ms;
    }
    m_position.last_offset = offset;
    m_position.last_timestamp = timestamp_ms;
    return true;
  }

  // The partition reached its end without a record at end-1 (end of log, compaction gap).
  void mark_done() { m_done = true; }

  bool done() const { return m_done; }
  const PartitionPlan& plan() const { return m_plan; }
  const PartitionPosition& position() const { return m_position; }

private:
  PartitionPlan m_plan;
  PartitionPosition m_position;
  bool m_started = false;
  bool m_done = false;
};

} // namespace dedupctl::core

namespace dedupctl::core {

struct OffsetSpec;

// The plan for a partition of a source that has no broker to ask (a kcat dump): offsets and
// times filter the events; `latest`, `-N` and `committed` need a broker and are refused
// (UsageError naming the flag).
PartitionPlan plan_without_broker(const OffsetSpec& from, const OffsetSpec& to, std::int64_t now_ms);

} // namespace dedupctl::core
