#pragma once

#include "core/audit/audit_analyzer.hpp"
#include "core/audit/audit_result.hpp"
#include "core/event.hpp"
#include "core/identity/identify.hpp"
#include "core/store/kstreams_window.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// A Kafka Streams dedup store's verdicts (kstreams://, issue 64; docs/kafka-streams.md): what the
// application forwards again when its group is sought back and it restarts on the store its changelog
// holds. The events are kept as they are read; once the changelog is folded (read beside the log, by
// connectors/kafka), each partition's events go through the guides' processor over that partition's
// store in offset order, as the restarted task runs them, and each one's verdict is handed to the audit
// in read order:
// - covered: a record the store returns lies inside the lookup window: the processor drops it;
// - expired: the id was put, but every record of it is below the store's bound (T - retention + 1,
//   T the partition's stream time), or, on kept local state, went with its segment: forwarded again;
// - missing: never put, or no record of it inside the lookup window: forwarded again;
// - pending: at or past the committed offset: a first delivery (which the simulation still puts).
// Events before the window ([seek, committed), or [from, to)) are not delivered again: their state is
// what a lookup at their own time finds, and nothing is put for them. Pure: no client, no clock.
namespace dedupctl::core {

// How the application reads its store (--layout kstreams-window or kstreams-kv with their options).
struct WindowStoreReading {
  KeySerde serde = KeySerde::String;
  bool key_value = false;         // kstreams-kv: get(id), then put(id)
  WindowDedupProcessor processor; // kstreams-window: the fetch around the lookup time
  // The lookup time is the task's stream time (the largest timestamp it has processed since it started,
  // the event's own included), not the record's.
  bool stream_time = false;
  bool kept_state = false; // the instance restarts on its own local state (WindowStoreChangelog::keep_local_state)
  std::int64_t segment_interval_ms = 0; // kept_state: its segments' interval
};

class WindowStoreReplay {
public:
  explicit WindowStoreReplay(WindowStoreReading reading) : m_reading(reading) {}

  // The partition's committed offset (nullopt without a group) and replay window, as the audit has them.
  void set_partition(const std::string& topic, std::int32_t partition, std::optional<std::int64_t> committed,
                     std::optional<WindowBounds> window);
  // Room for the range's events, so that what is kept of them is not copied again as it grows.
  void reserve(std::size_t events);
  // An event in read order, with its dedup key (the key template's, empty without an id).
  void observe(const Event& event, const Identity& identity, std::string_view dedup_key);
  std::size_t kept() const { return m_kept.size(); }

  // Every kept event's verdict over `changelog` (its stores change as the processor changes them), handed
  // to `audit` in read order (AuditAnalyzer::observe_guarded). Call once, after the last observe.
  void decide(WindowStoreChangelog& changelog, AuditAnalyzer& audit);

private:
  static constexpr std::uint32_t k_key_is_id = 0xffffffff;
  // 48 bytes an event, its id and key (when it is not the id) in m_text.
  struct Kept {
    std::int64_t offset = 0;
    std::int64_t timestamp_ms = 0;
    std::uint64_t seq = 0;
    std::int32_t partition = 0;
    std::uint32_t text_at = 0;
    std::uint32_t id_len = 0;
    std::uint32_t key_len = 0; // k_key_is_id: the key is the id
    std::uint16_t topic = 0;
    std::uint16_t type = 0;
    bool has_id = false;
  };
  struct Window {
    std::optional<std::int64_t> committed;
    std::optional<WindowBounds> bounds;
  };
  // Where a kept event stands: before the window, in it, or past the committed offset.
  enum class Place { Before, Replayed, Pending };

  Place place_of(const Kept& kept, Window& window) const;
  std::string_view text(std::uint32_t at, std::uint32_t len) const { return {m_text.data() + at, len}; }
  std::string_view key_of(const Kept& kept) const {
    return kept.key_len == k_key_is_id ? text(kept.text_at, kept.id_len)
                                       : text(kept.text_at + kept.id_len, kept.key_len);
  }
  std::uint16_t index_of(std::vector<std::string>& names, std::string_view name);
  // The verdict of one event at `time` over `store`, and what its example says.
  Coverage verdict(WindowStorePartition& store, std::string_view key, std::int64_t time, Place place,
                   std::string& note) const;

  WindowStoreReading m_reading;
  std::map<std::pair<std::string, std::int32_t>, Window, std::less<>> m_windows;
  std::vector<Kept> m_kept;
  std::string m_text;
  std::vector<std::string> m_topics, m_types;
  std::uint16_t m_last_topic = 0, m_last_type = 0; // the previous event's, tried first
};

} // namespace dedupctl::core
