#pragma once

#include "core/store/layout.hpp"
#include "core/window/bloom.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

// An in-process window of ids as a consumer keeps it (docs/windows.md), deciding each delivery as
// the consumer's own code does:
// - lru: an id in the LRU is a duplicate and moves to the front (container/list's MoveToFront);
//   another is applied and pushed to the front, the back evicted past `capacity`;
// - lru-bloom: the LRU first; an id not in it is a duplicate when the Bloom says "maybe"; otherwise
//   applied, pushed to the LRU and added to the Bloom;
// - bloom-exact: an id the Bloom has not seen is applied and added to both; a "maybe" is a duplicate
//   when the bounded set holds the id (a repeat does not refresh it), else applied and inserted, the
//   oldest insert evicted past `capacity`.
// The LRU and the set hold 64-bit fingerprints of the ids (two ids collide with probability
// ~n²/2⁶⁵), in arrays that grow with the ids held up to `capacity` (a partition's window of a
// million ids that meets ten thousand holds ten thousand), then are reused: no allocation a delivery. The Bloom hashes
// the id's bytes, as the library does.
namespace dedupctl::core {

// Fingerprints to slots of an array (`keys`, which holds each slot's fingerprint): open addressing,
// linear probing, deletion by backward shift (no tombstones), doubled past a load of one half. An
// entry is 8 bytes, the fingerprint's high half (its tag) beside the slot, so that a probe reads one
// cache line; the whole fingerprint is compared in `keys` only on a tag that matches. The home is the
// tag's, so that an erase's shift and a growth rehome entries without reading `keys` (a random read
// an entry moved: an LRU's every eviction shifts).
class SlotIndex {
public:
  SlotIndex();
  // The slot of `key`, or -1.
  std::int64_t find(std::uint64_t key, const std::vector<std::uint64_t>& keys) const;
  void insert(std::uint64_t key, std::uint32_t slot);
  // Forgets `key`, held at `slot`.
  void erase(std::uint64_t key, std::uint32_t slot);
  void prefetch(std::uint64_t key) const { __builtin_prefetch(m_entries.data() + home(key)); }

private:
  // Of a fingerprint or of an entry: both have the tag in their high half.
  std::size_t home(std::uint64_t key_or_entry) const {
    return ((key_or_entry >> 32) * 0x9E3779B97F4A7C15ULL >> 20) & m_mask;
  }
  void grow();

  std::vector<std::uint64_t> m_entries; // tag << 32 | slot + 1; 0: empty
  std::size_t m_mask = 0;
  std::size_t m_count = 0;
};

class IdWindow {
public:
  explicit IdWindow(const WindowSpec& spec);

  // The consumer's answer for one delivery of `id` (`fingerprint` its hash64): true = skipped as
  // seen, false = applied. The window changes as the consumer's does.
  bool seen(std::string_view id, std::uint64_t fingerprint);

  const std::optional<BloomShape>& bloom_shape() const { return m_bloom_shape; }
  // Asks the CPU for what deciding `fingerprint` reads first.
  void prefetch(std::uint64_t fingerprint) const { m_index.prefetch(fingerprint); }

private:
  // The next free slot, or `victim`'s, its id forgotten.
  std::uint32_t take_slot(std::uint32_t victim);
  bool lru_seen(std::uint64_t key);
  void lru_push(std::uint64_t key);
  void exact_insert(std::uint64_t key);

  WindowSpec m_spec;
  std::optional<BloomShape> m_bloom_shape;
  std::optional<BloomFilter> m_bloom;
  SlotIndex m_index;
  // The LRU: a doubly linked list over the slots, most recent at the head. bloom-exact's set: the
  // same slots as a ring, oldest insert at `m_oldest`.
  std::vector<std::uint64_t> m_keys;
  std::vector<std::uint32_t> m_prev, m_next;
  std::uint32_t m_head = UINT32_MAX, m_tail = UINT32_MAX, m_size = 0, m_oldest = 0;
};

} // namespace dedupctl::core
