#pragma once

#include "core/util/arena.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace dedupctl::core {

struct Header {
  std::string_view name;
  std::optional<std::string_view> value; // a Kafka header value may be null
};

// One Kafka record, as views into memory its batch keeps alive.
struct Event {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = -1;
  std::optional<std::string_view> key;
  std::optional<std::string_view> payload;
  std::span<const Header> headers;
  // The event's place in the canonical order (core::canonical_seq; a dump's line number): what
  // every source delivers its events in, and what a merge of shards sorts them by.
  std::uint64_t seq = 0;
  // The source's own handle of the event, for the connector that set it (`native_kind` names it)
  // to hand on without a copy: a Kafka message's parsed headers go to the replay's producer as
  // they are (ReplaySink::publish). Valid while the batch is; nullptr from other sources.
  const void* native_kind = nullptr;
  void* native = nullptr;
};

// An event at its coordinates, without key, payload or headers (one rebuilt from what an analyzer or
// a digest kept of it).
inline Event event_at(std::string_view topic, std::int32_t partition, std::int64_t offset, std::int64_t timestamp_ms,
                      std::uint64_t seq) {
  Event event;
  event.topic = topic;
  event.partition = partition;
  event.offset = offset;
  event.timestamp_ms = timestamp_ms;
  event.seq = seq;
  return event;
}

// A batch of events with the storage their views point into.
struct EventBatch {
  std::vector<Event> events;
  std::vector<Header> headers; // events' header spans point here
  Arena arena;                 // bytes the source had to copy or decode
  std::shared_ptr<void> owner; // source-specific storage (e.g. the client's message handles)

  void clear() {
    events.clear();
    headers.clear();
    arena.reset();
    owner.reset();
  }
};

// Where one partition's reading stands, for the report's `source`.
struct PartitionPosition {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t events = 0;                  // events delivered in range
  std::optional<std::int64_t> first_offset; // first delivered
  std::optional<std::int64_t> last_offset;  // last delivered
  std::optional<std::int64_t> first_timestamp;
  std::optional<std::int64_t> last_timestamp;
  std::optional<std::int64_t> stopped_at; // where a time-bounded end (--to @TIME) fell
};

// The events of a range, batch by batch. Abstract because every command reads a Kafka range
// (connectors/kafka) or a kcat -J dump (connectors/file) the same way, and a sink reads back what
// it got; in unit tests FakeEventSource (tests/unit/fakes.hpp) stands in.
class EventSource {
public:
  virtual ~EventSource() = default;
  // Fills `batch` (cleared first) with the next events; returns false at the end of the range.
  // Throws UnreachableError when the system behind it fails, UsageError on malformed input,
  // InterruptedError when the stop flag was raised.
  virtual bool next_batch(EventBatch& batch) = 0;
  // Per partition, what has been delivered so far.
  virtual std::vector<PartitionPosition> positions() const = 0;
};

} // namespace dedupctl::core
