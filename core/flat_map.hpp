#pragma once

#include <cstdint>
#include <vector>

namespace dedupctl::core {

// An open-addressing map from 64-bit hashes to small values, kept as two arrays (keys, values)
// so that a slot costs 8 + sizeof(V) bytes with no padding and no node allocations: a million
// ids fit in about 24 MB. Key 0 marks an empty slot; a real key 0 is stored as 1 (a hash of 0 is
// as likely as any other, and a 2⁻⁶⁴ merge is harmless).
template <typename V> class FlatHashMap {
public:
  explicit FlatHashMap(std::size_t expected = 1024) { rehash(capacity_for(expected)); }

  // Returns the value for `key`, inserting V{} when absent; `inserted` says which happened.
  V& find_or_insert(std::uint64_t key, bool& inserted) {
    key = key == 0 ? 1 : key;
    if ((m_size + 1) * 4 > m_keys.size() * 3) {
      rehash(m_keys.size() * 2);
    }
    std::size_t mask = m_keys.size() - 1;
    for (std::size_t i = mix(key) & mask;; i = (i + 1) & mask) {
      if (m_keys[i] == key) {
        inserted = false;
        return m_values[i];
      }
      if (m_keys[i] == 0) {
        m_keys[i] = key;
        m_values[i] = V{};
        ++m_size;
        inserted = true;
        return m_values[i];
      }
    }
  }

  const V* find(std::uint64_t key) const {
    key = key == 0 ? 1 : key;
    std::size_t mask = m_keys.size() - 1;
    for (std::size_t i = mix(key) & mask;; i = (i + 1) & mask) {
      if (m_keys[i] == key) {
        return &m_values[i];
      }
      if (m_keys[i] == 0) {
        return nullptr;
      }
    }
  }

  std::size_t size() const { return m_size; }
  std::size_t capacity() const { return m_keys.size(); }

private:
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
    std::vector<std::uint64_t> old_keys(capacity, 0);
    std::vector<V> old_values(capacity);
    old_keys.swap(m_keys);
    old_values.swap(m_values);
    m_size = 0;
    std::size_t mask = capacity - 1;
    for (std::size_t j = 0; j < old_keys.size(); ++j) {
      if (old_keys[j] == 0) {
        continue;
      }
      std::size_t i = mix(old_keys[j]) & mask;
      while (m_keys[i] != 0) {
        i = (i + 1) & mask;
      }
      m_keys[i] = old_keys[j];
      m_values[i] = old_values[j];
      ++m_size;
    }
  }

  std::vector<std::uint64_t> m_keys;
  std::vector<V> m_values;
  std::size_t m_size = 0;
};

} // namespace dedupctl::core
