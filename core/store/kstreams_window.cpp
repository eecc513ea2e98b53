#include "core/store/kstreams_window.hpp"

#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>

namespace dedupctl::core {

namespace {

constexpr std::size_t k_suffix = 8 + 4; // int64 window start, int32 seqnum

std::uint64_t big_endian(std::string_view bytes) {
  std::uint64_t v = 0;
  for (char c : bytes) {
    v = v << 8 | static_cast<unsigned char>(c);
  }
  return v;
}

bool is_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

// UUID.toString() of the UUID that UUID.fromString reads from canonical text: the same text, lower-case.
std::optional<std::string> uuid_text(std::string_view id) {
  constexpr std::array<std::size_t, 4> k_dashes{8, 13, 18, 23};
  if (id.size() != 36) {
    return std::nullopt;
  }
  std::string out(id);
  for (std::size_t i = 0; i < out.size(); ++i) {
    bool dash = std::find(k_dashes.begin(), k_dashes.end(), i) != k_dashes.end();
    if (dash ? out[i] != '-' : !is_hex(out[i])) {
      return std::nullopt;
    }
    if (out[i] >= 'A' && out[i] <= 'F') {
      out[i] = static_cast<char>(out[i] - 'A' + 'a');
    }
  }
  return out;
}

// What Jackson writes for a string: quoted, its own short escapes, \u00XX (upper-case hex) for the other
// control characters; bytes from 0x80 as they are (UTF-8).
std::string jackson_string(std::string_view id) {
  static constexpr std::string_view k_hex = "0123456789ABCDEF";
  std::string out = "\"";
  for (char c : id) {
    auto u = static_cast<unsigned char>(c);
    std::string_view shortcut = c == '"'    ? "\\\""
                                : c == '\\' ? "\\\\"
                                : c == '\b' ? "\\b"
                                : c == '\t' ? "\\t"
                                : c == '\n' ? "\\n"
                                : c == '\f' ? "\\f"
                                : c == '\r' ? "\\r"
                                            : "";
    if (!shortcut.empty()) {
      out += shortcut;
    } else if (u < 0x20) {
      out += "\\u00";
      out += k_hex[u >> 4];
      out += k_hex[u & 15];
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

} // namespace

std::string_view to_string(KeySerde serde) {
  switch (serde) {
  case KeySerde::String:
    return "string";
  case KeySerde::Bytes:
    return "bytes";
  case KeySerde::Long:
    return "long";
  case KeySerde::Uuid:
    return "uuid";
  case KeySerde::Json:
    return "json";
  }
  return "string";
}

KeySerde parse_key_serde(std::string_view text) {
  for (KeySerde serde : {KeySerde::String, KeySerde::Bytes, KeySerde::Long, KeySerde::Uuid, KeySerde::Json}) {
    if (text == to_string(serde)) {
      return serde;
    }
  }
  throw UsageError(fmt::format("--layout-option key-serde={}: not a key serde; use string, bytes, long, uuid or "
                               "json (the serde the window store's keys were built with)",
                               text));
}

std::optional<WindowStoreKey> parse_window_store_key(std::string_view bytes) {
  if (bytes.size() < k_suffix) {
    return std::nullopt;
  }
  WindowStoreKey key;
  key.key = bytes.substr(0, bytes.size() - k_suffix);
  key.window_start = static_cast<std::int64_t>(big_endian(bytes.substr(bytes.size() - k_suffix, 8)));
  key.seqnum = static_cast<std::int32_t>(static_cast<std::uint32_t>(big_endian(bytes.substr(bytes.size() - 4))));
  return key;
}

bool store_key_into(std::string_view id, KeySerde serde, std::string& out) {
  switch (serde) {
  case KeySerde::String:
  case KeySerde::Bytes:
    out.assign(id);
    return true;
  case KeySerde::Long: {
    std::int64_t v = 0;
    auto [end, ec] = std::from_chars(id.data(), id.data() + id.size(), v);
    if (id.empty() || ec != std::errc() || end != id.data() + id.size()) {
      return false;
    }
    out.assign(8, '\0');
    auto u = static_cast<std::uint64_t>(v);
    for (int i = 7; i >= 0; --i) {
      out[static_cast<std::size_t>(i)] = static_cast<char>(u & 0xff);
      u >>= 8;
    }
    return true;
  }
  case KeySerde::Uuid: {
    auto text = uuid_text(id);
    if (text) {
      out = std::move(*text);
    }
    return text.has_value();
  }
  case KeySerde::Json:
    out = jackson_string(id);
    return true;
  }
  return false;
}

std::optional<std::string> store_key(std::string_view id, KeySerde serde) {
  std::string out;
  return store_key_into(id, serde, out) ? std::optional<std::string>(std::move(out)) : std::nullopt;
}

std::string store_key_text(std::string_view key, KeySerde serde) {
  switch (serde) {
  case KeySerde::Long:
    if (key.size() == 8) {
      return std::to_string(static_cast<std::int64_t>(big_endian(key)));
    }
    [[fallthrough]];
  case KeySerde::Bytes:
    return hex_encode(key);
  case KeySerde::String:
  case KeySerde::Uuid:
  case KeySerde::Json:
    return std::string(key);
  }
  return std::string(key);
}

WindowStorePartition::Starts& WindowStorePartition::starts_of(std::string_view key, Put first, bool& inserted) {
  std::uint32_t& at = m_index.find_or_insert(hash64(key), inserted);
  if (inserted) {
    at = static_cast<std::uint32_t>(m_keys.size());
    m_keys.push_back(Starts{first, k_none});
  }
  return m_keys[at];
}

WindowStorePartition::Starts* WindowStorePartition::find(std::string_view key) {
  const std::uint32_t* at = m_index.find(hash64(key));
  return at ? &m_keys[*at] : nullptr;
}

const WindowStorePartition::Starts* WindowStorePartition::find(std::string_view key) const {
  const std::uint32_t* at = m_index.find(hash64(key));
  return at ? &m_keys[*at] : nullptr;
}

WindowStorePartition::Put* WindowStorePartition::find_put(Starts& of, std::int64_t start) {
  if (of.first.start == start) {
    return &of.first;
  }
  if (of.more != k_none) {
    for (Put& p : m_more[of.more]) {
      if (p.start == start) {
        return &p;
      }
    }
  }
  return nullptr;
}

void WindowStorePartition::add_put(Starts& of, Put put) {
  if (of.more == k_none) {
    of.more = static_cast<std::uint32_t>(m_more.size());
    m_more.emplace_back();
  }
  m_more[of.more].push_back(put);
}

void WindowStorePartition::keep(std::string_view key, std::int64_t window_start) {
  bool live = window_start >= live_from(); // below: the store drops it (or keeps it where no fetch returns it)
  bool inserted = false;
  Starts& of = starts_of(key, Put{window_start, live ? PutState::Held : PutState::Gone}, inserted);
  if (!inserted) {
    keep_in(of, window_start);
  }
}

void WindowStorePartition::keep_in(Starts& of, std::int64_t window_start) {
  bool live = window_start >= live_from();
  if (Put* at = find_put(of, window_start); !at) {
    add_put(of, Put{window_start, live ? PutState::Held : PutState::Gone});
  } else if (live) {
    at->state = PutState::Held; // a put at a start already held replaces it: the same answer
  }
}

void WindowStorePartition::restore(const WindowStoreKey& key, bool tombstone) {
  m_stream_time = std::max(m_stream_time, key.window_start);
  if (!tombstone) {
    keep(key.key, key.window_start);
    return;
  }
  // A tombstone alone (its puts compacted away) is the same record as puts then a tombstone: a compacted
  // changelog folds into the same store.
  Put deleted{key.window_start, PutState::Deleted};
  bool inserted = false;
  Starts& of = starts_of(key.key, deleted, inserted);
  if (inserted) {
    return;
  }
  if (Put* at = find_put(of, key.window_start); !at) {
    add_put(of, deleted);
  } else if (at->state == PutState::Held) {
    at->state = PutState::Deleted;
  }
}

void WindowStorePartition::put(std::string_view key, std::int64_t window_start) {
  m_stream_time = std::max(m_stream_time, window_start);
  keep(key, window_start);
}

void WindowStorePartition::keep_local_state(std::int64_t segment_interval_ms) {
  // AbstractSegments: segmentId(ts) = ts / interval; a segment below segmentId(T - retention) is removed on
  // the put that moved T there (cleanupExpiredSegments), and a put into one is dropped.
  std::int64_t min_live = (m_stream_time - m_retention) / segment_interval_ms;
  auto remove = [&](Put& p) {
    if (p.state == PutState::Held && p.start / segment_interval_ms < min_live) {
      p.state = PutState::Gone;
    }
  };
  for (Starts& of : m_keys) {
    remove(of.first);
  }
  for (auto& more : m_more) {
    for (Put& p : more) {
      remove(p);
    }
  }
  m_stream_time = -1;
}

bool WindowStorePartition::visible_in(const Starts& of, std::int64_t from, std::int64_t to) const {
  std::int64_t low = std::max(from, live_from());
  return any_put(of, [&](const Put& p) { return p.state == PutState::Held && p.start >= low && p.start <= to; });
}

bool WindowStorePartition::fetch_any(std::string_view key, std::int64_t from, std::int64_t to) const {
  const Starts* of = find(key);
  return of && visible_in(*of, from, to);
}

bool WindowStorePartition::expired_in(std::string_view key, std::int64_t from, std::int64_t to) const {
  const Starts* of = find(key);
  if (!of || visible_in(*of, from, to)) {
    return false;
  }
  return any_put(*of, [&](const Put& p) { return p.start >= from && p.start <= to && expired(p); });
}

WindowStorePartition::Lookup WindowStorePartition::look_up(std::string_view key, std::int64_t from, std::int64_t to,
                                                           std::optional<std::int64_t> put_at, bool put_on_hit) {
  Lookup found;
  Starts* of = find(key);
  if (of) {
    found.hit = visible_in(*of, from, to);
    found.expired =
        !found.hit && any_put(*of, [&](const Put& p) { return p.start >= from && p.start <= to && expired(p); });
    found.elsewhere = !found.hit && !found.expired && visible_in(*of, INT64_MIN / 2, INT64_MAX / 2);
  }
  if (put_at && (!found.hit || put_on_hit)) {
    m_stream_time = std::max(m_stream_time, *put_at);
    if (of) {
      keep_in(*of, *put_at); // the key's puts found once: no second search
    } else {
      keep(key, *put_at);
    }
  }
  return found;
}

bool WindowStorePartition::held_expired(std::string_view key) const { return expired_in(key, INT64_MIN, INT64_MAX); }

std::int64_t default_segment_interval(std::int64_t retention_ms) {
  return std::max<std::int64_t>(retention_ms / 2, 60'000);
}

void WindowStoreChangelog::keep_local_state(std::int64_t segment_interval_ms) {
  if (m_key_value) {
    return; // a key-value store holds what its changelog compacts to, whichever way it starts
  }
  for (auto& [number, store] : m_partitions) {
    store.keep_local_state(segment_interval_ms);
  }
}

WindowStorePartition& WindowStoreChangelog::partition(std::int32_t partition) {
  return m_partitions.try_emplace(partition, m_retention).first->second;
}

void WindowStoreChangelog::restore(std::span<const Event> records) {
  for (const Event& record : records) {
    std::optional<WindowStoreKey> key;
    if (record.key && m_key_value) {
      key = WindowStoreKey{*record.key, 0, 0};
    } else if (record.key) {
      key = parse_window_store_key(*record.key);
    }
    if (!key && m_key_value) {
      throw UsageError(fmt::format("{} partition {} offset {}: a null key is no key-value store's record: name the "
                                   "store's changelog",
                                   record.topic, record.partition, record.offset));
    }
    if (!key) {
      throw UsageError(fmt::format(
          "{} partition {} offset {}: {} is no window store key (an id, then 8 bytes of window start and 4 of "
          "sequence number): name a window store's changelog, or give --layout kstreams-kv for a key-value store's",
          record.topic, record.partition, record.offset,
          record.key ? fmt::format("a key of {} bytes", record.key->size()) : std::string("a null key")));
    }
    partition(record.partition).restore(*key, !record.payload);
    ++m_records;
  }
}

WindowDedupProcessor processor_for_window(std::int64_t window_ms) {
  WindowDedupProcessor processor;
  processor.left_ms = window_ms / 2;
  processor.right_ms = window_ms - processor.left_ms;
  return processor;
}

bool process_event(const WindowDedupProcessor& processor, WindowStorePartition& store, std::string_view key,
                   std::int64_t time) {
  bool duplicate = store.fetch_any(key, time - processor.left_ms, time + processor.right_ms);
  if (!duplicate || processor.put_on_hit) {
    store.put(key, time);
  }
  return duplicate;
}

} // namespace dedupctl::core
