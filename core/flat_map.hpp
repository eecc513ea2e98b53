#pragma once

#include <cstdint>
#include <vector>

namespace dedupctl::core {

// An open-addressing map from 64-bit hashes to small values: 8 + sizeof(V) bytes a slot, no node
// allocations, so that a million ids fit in tens of megabytes. Key 0 marks an empty slot; real
// key 0 is stored as 1 (a hash of 0 is as likely as any other, and a 2⁻⁶⁴ merge is harmless).
template <typename V> class FlatHashMap {
public:
  explicit FlatHashMap(std::size_t expected = 1024) { rehash(capacity_for(expected)); }

  // Returns the value for `key`, inserting V{} when absent; `inserted` says which happened.
  V& find_or_insert(std::uint64_t key, bool& inserted) {
    key = key == 0 ? 1 : key;
    if ((m_size + 1) * 4 > m_slots.size() * 3) {
      rehash(m_slots.size() * 2);
    }
    std::size_t mask = m_slots.size() - 1;
    for (std::size_t i = mix(key) & mask;; i = (i + 1) & mask) {
      Slot& slot = m_slots[i];
      if (slot.key == key) {
        inserted = false;
        return slot.value;
      }
      if (slot.key == 0) {
        slot.key = key;
        slot.value = V{};
        ++m_size;
        inserted = true;
        return slot.value;
      }
    }
  }

  const V* find(std::uint64_t key) const {
    key = key == 0 ? 1 : key;
    std::size_t mask = m_slots.size() - 1;
    for (std::size_t i = mix(key) & mask;; i = (i + 1) & mask) {
      const Slot& slot = m_slots[i];
      if (slot.key == key) {
        return &slot.value;
      }
      if (slot.key == 0) {
        return nullptr;
      }
    }
  }

  std::size_t size() const { return m_size; }

private:
  struct Slot {
    std::uint64_t key = 0;
    V value{};
  };

  static std::size_t capacity_for(std::size_t expected) {
    std::size_t capacity = 16;
    while (capacity * 3 < expected * 4) {
      capacity *= 2;
    }
    return capacity;
  }

  // The keys are already hashes, but callers may pass structured values: mix once more.
  static std::uint64_t mix(std::uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
  }

  void rehash(std::size_t capacity) {
    std::vector<Slot> old;
    old.swap(m_slots);
    m_slots.assign(capacity, Slot{});
    m_size = 0;
    std::size_t mask = capacity - 1;
    for (const Slot& slot : old) {
      if (slot.key == 0) {
        continue;
      }
      std::size_t i = mix(slot.key) & mask;
      while (m_slots[i].key != 0) {
        i = (i + 1) & mask;
      }
      m_slots[i] = slot;
      ++m_size;
    }
  }

  std::vector<Slot> m_slots;
  std::size_t m_size = 0;
};

} // namespace dedupctl::core
