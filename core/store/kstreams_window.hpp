#pragma once

#include "core/event.hpp"
#include "core/util/fingerprint.hpp"
#include "core/util/flat_map.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// A Kafka Streams window store as its changelog topic holds it (issue 64), the store the guides' dedup
// processor keeps: `fetch(id, t - left, t + right)`; on a hit the event is dropped (and, in the
// kafka-streams-examples and Confluent tutorial shape, `put(id, t)` again), on a miss `put(id, t)` and
// forwarded. What is modelled here is read from apache/kafka's streams/state/internals:
// - the changelog's key is WindowKeySchema.toStoreKeyBinary: serde(id) ‖ int64 window start ‖ int32
//   seqnum, big-endian (ChangeLoggingWindowBytesStore.log); the seqnum is 0 unless the store retains
//   duplicates; a null value deletes the record;
// - the store's observed stream time T is the largest window start put in it, restored records included
//   (AbstractRocksDBSegmentedBytesStore.getWriteBatches, put; InMemoryWindowStore alike), -1 before any;
// - a fetch returns only records whose window start is at or above T - retention + 1 (getActualFrom;
//   strict since 3.4), and a put below that bound is dropped.
// So the fold of one changelog partition, in offset order, is the store a restored task sees: no other
// instance state (segments, the cache) changes what a fetch returns. Pure: no client, no clock.
namespace dedupctl::core {

// How the processor's id becomes the store's key bytes (the store's key serde).
enum class KeySerde {
  String, // Serdes.String(): the id's UTF-8 bytes
  Bytes,  // Serdes.Bytes() / ByteArray(): the id's bytes as they are
  Long,   // Serdes.Long(): 8 bytes big-endian of the id read as a decimal int64
  Uuid,   // Serdes.UUID(): UUID.toString()'s text, lower-case
  Json,   // a JSON serde of the id as a string (Jackson's): the id quoted, \" \\ \b \t \n \f \r escaped,
          // other control characters as \u00XX
};
std::string_view to_string(KeySerde serde);
// Throws UsageError naming key-serde and the serdes for anything else.
KeySerde parse_key_serde(std::string_view text);

// One changelog record's key, split from the right.
struct WindowStoreKey {
  std::string_view key; // the serde's bytes of the id (a view into the record's key)
  std::int64_t window_start = 0;
  std::int32_t seqnum = 0;
};
// nullopt when the key is shorter than the 12 bytes of the window suffix (a truncated key, or a
// key-value store's with a short key).
std::optional<WindowStoreKey> parse_window_store_key(std::string_view bytes);

// The store's key for an event id under `serde`; nullopt when the serde cannot hold the id (Long: not
// a decimal int64; Uuid: not the 8-4-4-4-12 hex text of a UUID), so that no record can match it.
std::optional<std::string> store_key(std::string_view id, KeySerde serde);
// The same into `out` (its buffer reused from one event to the next): false where store_key is nullopt.
bool store_key_into(std::string_view id, KeySerde serde, std::string& out);
// A record's key as text for examples and traces: the id it holds under `serde` (Bytes: lower-case hex;
// Json: the JSON text).
std::string store_key_text(std::string_view key, KeySerde serde);

// One partition of a window store, folded from its changelog and then changed by the processor as it
// would change it. Keys are told apart by their 64-bit hash (a 2^-64 merge, as the log analyzer's ids).
class WindowStorePartition {
public:
  explicit WindowStorePartition(std::int64_t retention_ms) : m_retention(retention_ms) {}

  // One changelog record of this partition, in offset order (a restore): T advances to the key's window
  // start, a put below the live bound is not kept, a tombstone removes the record.
  void restore(const WindowStoreKey& key, bool tombstone);
  // The processor's put(id, window_start): T advances first, then the record is kept unless expired.
  void put(std::string_view key, std::int64_t window_start);
  // Whether fetch(key, from, to) returns a record: a window start in [max(from, T - retention + 1), to].
  bool fetch_any(std::string_view key, std::int64_t from, std::int64_t to) const;
  // Whether `key` was put at a window start in [from, to] that no fetch returns now: below the live bound
  // (a record, or a put dropped on arrival), or gone with its segment (keep_local_state); a record deleted
  // while live counts once its start is below the bound. False when fetch_any(key, from, to) is true.
  bool expired_in(std::string_view key, std::int64_t from, std::int64_t to) const;
  // expired_in over every window start: put, and no record of it returned by any fetch.
  bool held_expired(std::string_view key) const;

  // The processor's lookup of `key` in [from, to] and what it finds, with one search of the key: a record
  // returned (hit), else a put there the store no longer returns (expired), else a record returned
  // elsewhere (a fetch of any start would return one). Then, when `put_at` is set, the processor's
  // put(key, *put_at), unless a hit and `!put_on_hit`.
  struct Lookup {
    bool hit = false;
    bool expired = false;
    bool elsewhere = false;
  };
  Lookup look_up(std::string_view key, std::int64_t from, std::int64_t to, std::optional<std::int64_t> put_at,
                 bool put_on_hit);

  // The store an instance restarted on its own local state holds (a persistent RocksDB window store, shut
  // down cleanly, so that nothing past its checkpoint is restored): the records of every segment still
  // live at its stream time T, segment by segment (a segment of `segment_interval_ms` is removed once its
  // id is below (T - retention) / interval), and its observed stream time back at -1, so that a fetch
  // returns every record kept until the replay's own puts move it again.
  void keep_local_state(std::int64_t segment_interval_ms);

  // Brings `key`'s slot of the index into the cache ahead of its look_up (a million keys outgrow it).
  void prefetch(std::string_view key) const { m_index.prefetch(hash64(key)); }

  std::int64_t stream_time() const { return m_stream_time; }
  // The lowest window start a fetch still returns: T - retention + 1.
  std::int64_t live_from() const { return m_stream_time - m_retention + 1; }
  std::int64_t retention_ms() const { return m_retention; }

private:
  // Each window start a key was put at, once: a record the store holds (visible while at or above the
  // bound), a put the store does not hold (dropped on arrival below the bound, or removed with its
  // segment), or a record a tombstone deleted.
  enum class PutState : std::uint8_t { Held, Gone, Deleted };
  struct Put {
    std::int64_t start = 0;
    PutState state = PutState::Held;
  };
  // A key's puts: the first inline (most ids are put once), the others in m_more.
  static constexpr std::uint32_t k_none = 0xffffffff;
  struct Starts {
    Put first;
    std::uint32_t more = k_none;
  };
  Starts* find(std::string_view key);
  const Starts* find(std::string_view key) const;
  // The key's puts, a new key's made with `first`: whether it was new.
  Starts& starts_of(std::string_view key, Put first, bool& inserted);
  Put* find_put(Starts& of, std::int64_t start);
  void add_put(Starts& of, Put put);
  template <typename Pred> bool any_put(const Starts& of, Pred&& pred) const {
    if (pred(of.first)) {
      return true;
    }
    if (of.more != k_none) {
      for (const Put& p : m_more[of.more]) {
        if (pred(p)) {
          return true;
        }
      }
    }
    return false;
  }
  void keep(std::string_view key, std::int64_t window_start);
  void keep_in(Starts& of, std::int64_t window_start);
  bool expired(const Put& put) const { return put.state == PutState::Gone || put.start < live_from(); }
  bool visible_in(const Starts& of, std::int64_t from, std::int64_t to) const;

  std::int64_t m_retention;
  std::int64_t m_stream_time = -1;
  FlatHashMap<std::uint32_t> m_index;
  std::vector<Starts> m_keys;
  std::vector<std::vector<Put>> m_more;
};

// Stores.persistentWindowStore's segment interval: max(retention / 2, 1 minute).
std::int64_t default_segment_interval(std::int64_t retention_ms);

// Every partition of a window store, folded from its changelog topic: partition p of the changelog is the
// store of the task of input partition p. A key-value store (`key_value`) is held the same way, each key
// a record at window start 0 that never expires: its fold is the topic's compaction, and a lookup is
// fetch(key, 0, 0).
class WindowStoreChangelog {
public:
  explicit WindowStoreChangelog(std::int64_t retention_ms, bool key_value = false)
      : m_retention(key_value ? INT64_MAX / 2 : retention_ms), m_key_value(key_value) {}
  // The changelog's records in offset order within each partition. Throws UsageError naming the record
  // (topic, partition, offset) for a key that is no window key: null, or shorter than its suffix (a
  // truncated key, or a key-value store's changelog); a key-value store's null key likewise.
  void restore(std::span<const Event> records);
  bool key_value() const { return m_key_value; }
  // Every partition's store as an instance restarted on its local state holds it (keep_local_state).
  void keep_local_state(std::int64_t segment_interval_ms);
  // The store of `partition`: an empty one (nothing restored) when the changelog had no record there.
  WindowStorePartition& partition(std::int32_t partition);
  std::size_t records() const { return m_records; }

private:
  std::int64_t m_retention;
  bool m_key_value;
  std::map<std::int32_t, WindowStorePartition> m_partitions;
  std::size_t m_records = 0;
};

// The guides' processor over one window store partition.
struct WindowDedupProcessor {
  std::int64_t left_ms = 0;  // the fetch reaches this far before the lookup time
  std::int64_t right_ms = 0; // and this far after it
  bool put_on_hit = true;    // a duplicate refreshes its record (kafka-streams-examples, the tutorial)
                             // or not (kstreamplify's DedupKeyProcessor)
};
// The kafka-streams-examples and Confluent tutorial split of a lookup window W: left W/2, right the rest.
WindowDedupProcessor processor_for_window(std::int64_t window_ms);

// Decides one event as the processor does: true when it is dropped (a record of `key` is visible
// around `time`), false when forwarded; puts `key` at `time` as the processor would. `time` is the
// record's timestamp or the task's stream time, as the application looks up (the caller's choice).
bool process_event(const WindowDedupProcessor& processor, WindowStorePartition& store, std::string_view key,
                   std::int64_t time);

} // namespace dedupctl::core
