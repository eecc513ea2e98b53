#pragma once

// In-memory fakes of our own interfaces, for unit tests of the pipeline (never of a client library).

#include "core/errors.hpp"
#include "core/event.hpp"
#include "core/range.hpp"

#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dedupctl::testing {

// An event that owns its bytes.
struct OwnedEvent {
  std::string topic = "orders";
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = 0;
  std::optional<std::string> key;
  std::optional<std::string> payload;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

inline OwnedEvent with_header_id(std::int32_t partition, std::int64_t offset, std::int64_t ts, std::string id,
                                 std::string payload) {
  OwnedEvent e;
  e.partition = partition;
  e.offset = offset;
  e.timestamp_ms = ts;
  e.payload = std::move(payload);
  e.headers.emplace_back("event_id", std::move(id));
  return e;
}

// Views an owned event as a core::Event (headers stored in `headers`, which must outlive it).
inline core::Event view(const OwnedEvent& owned, std::vector<core::Header>& headers) {
  headers.clear();
  for (const auto& [name, value] : owned.headers) {
    headers.push_back(core::Header{name, value ? std::optional<std::string_view>(*value) : std::nullopt});
  }
  core::Event e;
  e.topic = owned.topic;
  e.partition = owned.partition;
  e.offset = owned.offset;
  e.timestamp_ms = owned.timestamp_ms;
  if (owned.key) {
    e.key = *owned.key;
  }
  if (owned.payload) {
    e.payload = *owned.payload;
  }
  e.headers = headers;
  return e;
}

// Serves events in batches of `batch_size`; can fail after `fail_after_batches` batches, the way a
// broker that goes away does. Records how many batches were asked for.
class FakeEventSource final : public core::EventSource {
public:
  explicit FakeEventSource(std::vector<OwnedEvent> events, std::size_t batch_size = 2)
      : m_events(std::move(events)), m_batch_size(batch_size) {}

  std::optional<std::size_t> fail_after_batches;
  bool fail_with_interrupt = false;
  std::atomic<int> batches_served{0}; // read by other threads in some tests

  bool next_batch(core::EventBatch& batch) override {
    batch.clear();
    if (fail_after_batches && static_cast<std::size_t>(batches_served) >= *fail_after_batches) {
      if (fail_with_interrupt) {
        throw InterruptedError("interrupted");
      }
      throw UnreachableError("cannot reach Kafka at fake:9092 (broker went away)");
    }
    if (m_next >= m_events.size()) {
      return false;
    }
    std::vector<std::pair<std::size_t, std::size_t>> ranges;
    while (m_next < m_events.size() && batch.events.size() < m_batch_size) {
      const auto& owned = m_events[m_next++];
      std::vector<core::Header> scratch;
      core::Event e = view(owned, scratch);
      std::size_t first = batch.headers.size();
      batch.headers.insert(batch.headers.end(), scratch.begin(), scratch.end());
      ranges.emplace_back(first, scratch.size());
      auto& cursor = cursor_for(owned);
      if (cursor.admit(e.offset, e.timestamp_ms)) {
        batch.events.push_back(e);
      } else {
        ranges.pop_back();
      }
    }
    for (std::size_t i = 0; i < batch.events.size(); ++i) {
      batch.events[i].headers = std::span<const core::Header>(batch.headers.data() + ranges[i].first, ranges[i].second);
    }
    ++batches_served;
    return !batch.events.empty() || m_next < m_events.size();
  }

  std::vector<core::PartitionPosition> positions() const override {
    std::vector<core::PartitionPosition> out;
    for (const auto& [key, cursor] : m_cursors) {
      out.push_back(cursor.position());
    }
    return out;
  }

private:
  core::PartitionCursor& cursor_for(const OwnedEvent& e) {
    auto key = std::make_pair(e.topic, e.partition);
    auto it = m_cursors.find(key);
    if (it == m_cursors.end()) {
      core::PartitionPlan plan;
      plan.topic = e.topic;
      plan.partition = e.partition;
      it = m_cursors.emplace(key, core::PartitionCursor(plan)).first;
    }
    return it->second;
  }

  std::vector<OwnedEvent> m_events;
  std::size_t m_batch_size;
  std::size_t m_next = 0;
  std::map<std::pair<std::string, std::int32_t>, core::PartitionCursor> m_cursors;
};

} // namespace dedupctl::testing
