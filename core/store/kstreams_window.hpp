#pragma once

#include "core/event.hpp"
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
// key-value store's).
std::optional<WindowStoreKey> parse_window_store_key(std::string_view bytes);

// The store's key for an event id under `serde`; nullopt when the serde cannot hold the id (Long: not
// a decimal int64; Uuid: not the 8-4-4-4-12 hex text of a UUID), so that no record can match it.
std::optional<std::string> store_key(std::string_view id, KeySerde serde);
// A record's key as text for examples and traces: the id it holds under `serde` (Bytes: lower-case hex).
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
  // Whether `key` was put and every record of it has expired (its newest window start is below the live
  // bound), against never put, or deleted while live.
  bool held_expired(std::string_view key) const;

  std::int64_t stream_time() const { return m_stream_time; }
  // The lowest window start a fetch still returns: T - retention + 1.
  std::int64_t live_from() const { return m_stream_time - m_retention + 1; }
  std::int64_t retention_ms() const { return m_retention; }

private:
  struct Starts {
    std::vector<std::int64_t> starts; // each window start held once, unordered
    std::int64_t newest = INT64_MIN;  // the newest window start ever put (deleted or not)
  };
  Starts& starts_of(std::string_view key);
  const Starts* find(std::string_view key) const;
  void keep(Starts& of, std::int64_t window_start);

  std::int64_t m_retention;
  std::int64_t m_stream_time = -1;
  FlatHashMap<std::uint32_t> m_index;
  std::vector<Starts> m_keys;
};

// Every partition of a window store, folded from its changelog topic: partition p of the changelog is the
// store of the task of input partition p.
class WindowStoreChangelog {
public:
  explicit WindowStoreChangelog(std::int64_t retention_ms) : m_retention(retention_ms) {}
  // The changelog's records in offset order within each partition. Throws UsageError naming the record
  // (topic, partition, offset) for a key that is no window key: null, or shorter than its suffix (a
  // truncated key, or a key-value store's changelog).
  void restore(std::span<const Event> records);
  // The store of `partition`: an empty one (nothing restored) when the changelog had no record there.
  WindowStorePartition& partition(std::int32_t partition);
  std::size_t records() const { return m_records; }

private:
  std::int64_t m_retention;
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
