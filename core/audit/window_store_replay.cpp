#include "core/audit/window_store_replay.hpp"

#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace dedupctl::core {

void WindowStoreReplay::set_partition(const std::string& topic, std::int32_t partition,
                                      std::optional<std::int64_t> committed, std::optional<WindowBounds> window) {
  m_windows[{topic, partition}] = Window{committed, window};
}

std::uint16_t WindowStoreReplay::index_of(std::vector<std::string>& names, std::string_view name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it != names.end()) {
    return static_cast<std::uint16_t>(it - names.begin());
  }
  names.emplace_back(name);
  return static_cast<std::uint16_t>(names.size() - 1);
}

void WindowStoreReplay::observe(const Event& event, const Identity& identity, std::string_view dedup_key) {
  Kept kept;
  kept.offset = event.offset;
  kept.timestamp_ms = event.timestamp_ms;
  kept.seq = event.seq;
  kept.partition = event.partition;
  kept.topic = index_of(m_topics, event.topic);
  kept.type = index_of(m_types, identity.type);
  kept.has_id = identity.has_id;
  kept.text_at = static_cast<std::uint32_t>(m_text.size());
  if (identity.has_id) {
    kept.id_len = static_cast<std::uint32_t>(identity.id.size());
    m_text += identity.id;
    if (dedup_key == identity.id) {
      kept.key_len = std::numeric_limits<std::uint32_t>::max();
    } else {
      kept.key_len = static_cast<std::uint32_t>(dedup_key.size());
      m_text += dedup_key;
    }
  }
  m_kept.push_back(kept);
}

WindowStoreReplay::Place WindowStoreReplay::place_of(const Kept& kept, Window& window) const {
  if (window.committed && kept.offset >= *window.committed) {
    return Place::Pending;
  }
  bool found = false;
  return !window.bounds || enter_window(*window.bounds, kept.offset, kept.timestamp_ms, found) ? Place::Replayed
                                                                                               : Place::Before;
}

Coverage WindowStoreReplay::verdict(WindowStorePartition& store, const std::optional<std::string>& key,
                                    std::int64_t time, Place place, std::string& note) const {
  if (!key) {
    note = fmt::format("the id is no {} key: no record of the store can hold it", to_string(m_reading.serde));
    return place == Place::Pending ? Coverage::Pending : Coverage::Missing;
  }
  bool replayed = place != Place::Before; // the restarted task runs it through its processor
  std::int64_t from = m_reading.key_value ? 0 : time - m_reading.processor.left_ms;
  std::int64_t to = m_reading.key_value ? 0 : time + m_reading.processor.right_ms;
  bool hit = store.fetch_any(*key, from, to);
  bool expired = !hit && store.expired_in(*key, from, to);
  bool elsewhere =
      !hit && !expired &&
      store.fetch_any(*key, std::numeric_limits<std::int64_t>::min() / 2, std::numeric_limits<std::int64_t>::max() / 2);
  if (replayed && (!hit || m_reading.processor.put_on_hit)) {
    store.put(*key, m_reading.key_value ? 0 : time);
  }
  if (hit) {
    return Coverage::Covered;
  }
  if (place == Place::Pending) {
    note = "not consumed yet: its first delivery";
    return Coverage::Pending;
  }
  if (expired) {
    note = m_reading.kept_state
               ? "its records went with their segments: the store no longer holds them"
               : fmt::format("its records are older than the store keeps: it returns window starts from {} (stream "
                             "time {} less the retention, plus 1 ms)",
                             format_time(store.live_from()), format_time(store.stream_time()));
    return Coverage::Expired;
  }
  note = elsewhere ? fmt::format("no record of it in the lookup window [{}, {}]", format_time(from), format_time(to))
                   : "never put in the store";
  return Coverage::Missing;
}

void WindowStoreReplay::decide(WindowStoreChangelog& changelog, AuditAnalyzer& audit) {
  if (m_reading.kept_state) {
    changelog.keep_local_state(m_reading.segment_interval_ms);
  }
  std::map<std::int32_t, std::int64_t> stream_time; // each task's, from -1 when it starts again
  std::string note;
  for (const Kept& kept : m_kept) {
    std::string_view topic = m_topics[kept.topic];
    auto window = m_windows.find(std::pair(std::string(topic), kept.partition));
    if (window == m_windows.end()) { // a file's partition: its window is everything read
      window = m_windows.emplace(std::pair(std::string(topic), kept.partition), Window{}).first;
    }
    Place place = place_of(kept, window->second);
    std::int64_t time = kept.timestamp_ms;
    if (place != Place::Before) {
      auto [at, inserted] = stream_time.try_emplace(kept.partition, -1);
      at->second = std::max(at->second, kept.timestamp_ms);
      time = m_reading.stream_time ? at->second : time;
    }
    Event event = event_at(topic, kept.partition, kept.offset, kept.timestamp_ms, kept.seq);
    Identity identity;
    identity.has_id = kept.has_id;
    identity.id = text(kept.text_at, kept.id_len);
    identity.type = m_types[kept.type];
    std::string_view dedup_key = kept.key_len == std::numeric_limits<std::uint32_t>::max()
                                     ? identity.id
                                     : text(kept.text_at + kept.id_len, kept.key_len);
    note.clear();
    if (!kept.has_id) {
      audit.observe_guarded(event, identity, {}, Coverage::NoId, false, true, "");
      continue;
    }
    std::optional<std::string> key = store_key(dedup_key, m_reading.serde);
    Coverage state = verdict(changelog.partition(kept.partition), key, time, place, note);
    std::string shown = key ? store_key_text(*key, m_reading.serde) : std::string(dedup_key);
    audit.observe_guarded(event, identity, shown, state, false, state != Coverage::Covered, note);
  }
}

} // namespace dedupctl::core
