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

void WindowStoreReplay::reserve(std::size_t events) {
  m_kept.reserve(events);
  m_text.reserve(events * 20); // an id of 16 bytes (a UUID's 36), its key when it is not the id
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
  if (m_last_topic >= m_topics.size() || m_topics[m_last_topic] != event.topic) {
    m_last_topic = index_of(m_topics, event.topic);
  }
  if (m_last_type >= m_types.size() || m_types[m_last_type] != identity.type) {
    m_last_type = index_of(m_types, identity.type);
  }
  kept.topic = m_last_topic;
  kept.type = m_last_type;
  kept.has_id = identity.has_id;
  kept.text_at = static_cast<std::uint32_t>(m_text.size());
  if (identity.has_id) {
    kept.id_len = static_cast<std::uint32_t>(identity.id.size());
    m_text += identity.id;
    if (dedup_key == identity.id) {
      kept.key_len = k_key_is_id;
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

Coverage WindowStoreReplay::verdict(WindowStorePartition& store, std::string_view key, std::int64_t time, Place place,
                                    std::string& note) const {
  std::int64_t from = m_reading.key_value ? 0 : time - m_reading.processor.left_ms;
  std::int64_t to = m_reading.key_value ? 0 : time + m_reading.processor.right_ms;
  // The restarted task runs it through its processor (a put), an event before the window does not.
  std::optional<std::int64_t> put_at;
  if (place != Place::Before) {
    put_at = m_reading.key_value ? 0 : time;
  }
  WindowStorePartition::Lookup found = store.look_up(key, from, to, put_at, m_reading.processor.put_on_hit);
  if (found.hit) {
    return Coverage::Covered;
  }
  if (place == Place::Pending) {
    note = "not consumed yet: its first delivery";
    return Coverage::Pending;
  }
  if (found.expired) {
    note = m_reading.kept_state
               ? "its records went with their segments: the store no longer holds them"
               : fmt::format("its records are older than the store keeps: it returns window starts from {} (stream "
                             "time {} less the retention, plus 1 ms)",
                             format_time(store.live_from()), format_time(store.stream_time()));
    return Coverage::Expired;
  }
  note = found.elsewhere
             ? fmt::format("no record of it in the lookup window [{}, {}]", format_time(from), format_time(to))
             : "never put in the store";
  return Coverage::Missing;
}

void WindowStoreReplay::decide(WindowStoreChangelog& changelog, AuditAnalyzer& audit) {
  if (m_reading.kept_state) {
    changelog.keep_local_state(m_reading.segment_interval_ms);
  }
  // Each (topic, partition) the events came from: its window, its task's stream time (from -1 when the
  // task starts again) and its store, found by topic and partition number.
  struct Task {
    Window* window = nullptr;
    std::int64_t* stream_time = nullptr;
    WindowStorePartition* store = nullptr;
  };
  std::vector<std::vector<Task>> tasks(m_topics.size());
  std::map<std::int32_t, std::int64_t> stream_time;
  auto task_of = [&](const Kept& kept) -> Task& {
    auto& of_topic = tasks[kept.topic];
    auto at = static_cast<std::size_t>(kept.partition);
    if (at >= of_topic.size()) {
      of_topic.resize(at + 1);
    }
    Task& task = of_topic[at];
    if (!task.window) {
      std::pair<std::string, std::int32_t> name(m_topics[kept.topic], kept.partition);
      auto window = m_windows.find(name);
      if (window == m_windows.end()) { // a file's partition: its window is everything read
        window = m_windows.emplace(name, Window{}).first;
      }
      task = Task{&window->second, &stream_time.try_emplace(kept.partition, -1).first->second,
                  &changelog.partition(kept.partition)};
    }
    return task;
  };
  // Where the key of the event `k_ahead` on lies in its store's index, fetched while this one is decided
  // (a key the serde keeps as it is: the others are not made twice).
  constexpr std::size_t k_ahead = 8;
  bool prefetch = m_reading.serde == KeySerde::String || m_reading.serde == KeySerde::Bytes;
  std::string note, key;
  for (std::size_t i = 0; i < m_kept.size(); ++i) {
    const Kept& kept = m_kept[i];
    if (const Kept* ahead = i + k_ahead < m_kept.size() ? &m_kept[i + k_ahead] : nullptr;
        prefetch && ahead && ahead->has_id) {
      task_of(*ahead).store->prefetch(key_of(*ahead));
    }
    Task& task = task_of(kept);
    Place place = place_of(kept, *task.window);
    std::int64_t time = kept.timestamp_ms;
    if (place != Place::Before) {
      *task.stream_time = std::max(*task.stream_time, kept.timestamp_ms);
      time = m_reading.stream_time ? *task.stream_time : time;
    }
    Event event = event_at(m_topics[kept.topic], kept.partition, kept.offset, kept.timestamp_ms, kept.seq);
    Identity identity;
    identity.has_id = kept.has_id;
    identity.id = text(kept.text_at, kept.id_len);
    identity.type = m_types[kept.type];
    if (!kept.has_id) {
      audit.observe_guarded(event, identity, {}, Coverage::NoId, false, true, "");
      continue;
    }
    std::string_view dedup_key = key_of(kept);
    note.clear();
    Coverage state = Coverage::Missing;
    bool serialized = store_key_into(dedup_key, m_reading.serde, key);
    if (!serialized) {
      note = fmt::format("the id is no {} key: no record of the store can hold it", to_string(m_reading.serde));
      state = place == Place::Pending ? Coverage::Pending : Coverage::Missing;
    } else {
      state = verdict(*task.store, key, time, place, note);
    }
    // The key as examples show it: the text the serde's bytes hold (bytes and longs re-encoded).
    bool as_is = m_reading.serde != KeySerde::Bytes && m_reading.serde != KeySerde::Long;
    std::string shown =
        !serialized || as_is || state == Coverage::Covered ? std::string() : store_key_text(key, m_reading.serde);
    std::string_view key_view = !serialized                           ? dedup_key
                                : as_is || state == Coverage::Covered ? std::string_view(key)
                                                                      : std::string_view(shown);
    audit.observe_guarded(event, identity, key_view, state, false, state != Coverage::Covered, note);
  }
}

} // namespace dedupctl::core
