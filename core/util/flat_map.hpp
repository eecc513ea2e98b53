#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace dedupctl::core {

// Memory for large tables: from 2 MiB up, aligned to 2 MiB and marked for transparent huge pages
// before anything touches it (Linux with THP in "madvise" mode, as Debian ships it), so a random
// probe into a table of many megabytes costs a cache miss but rarely a TLB miss as well.
template <typename T> struct HugePageAllocator {
  using value_type = T;
  static constexpr std::size_t k_huge = std::size_t{2} << 20;
  HugePageAllocator() = default;
  template <typename U> HugePageAllocator(const HugePageAllocator<U>&) {} // NOLINT: rebinding
  T* allocate(std::size_t n) {
    std::size_t bytes = n * sizeof(T);
    if (bytes < k_huge) {
      return std::allocator<T>().allocate(n);
    }
    bytes = (bytes + k_huge - 1) / k_huge * k_huge;
    void* memory = std::aligned_alloc(k_huge, bytes);
    if (!memory) {
      throw std::bad_alloc();
    }
#ifdef MADV_HUGEPAGE
    madvise(memory, bytes, MADV_HUGEPAGE); // a hint: refused, the pages are simply small
#endif
    return static_cast<T*>(memory);
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < k_huge) {
      std::allocator<T>().deallocate(p, n);
    } else {
      std::free(p);
    }
  }
  template <typename U> bool operator==(const HugePageAllocator<U>&) const { return true; }
};

// An open-addressing map from 64-bit hashes to small values, kept as two arrays (keys, values)
// so that a slot costs 8 + sizeof(V) bytes with no padding and no node allocations. The capacity
// is what the expected size needs at a load of 0.8, not the next power of two: a million ids take
// 1.25 M slots (15 MB of uint32 values), not 2 M. A hash goes to its first slot by a multiply,
// not a mask. Key 0 marks an empty slot; a real key 0 is stored as 1 (a hash of 0 is as likely as
// any other, and a 2⁻⁶⁴ merge is harmless).
template <typename V> class FlatHashMap {
public:
  explicit FlatHashMap(std::size_t expected = 1024) { rehash(capacity_for(expected)); }

  // Returns the value for `key`, inserting V{} when absent; `inserted` says which happened.
  V& find_or_insert(std::uint64_t key, bool& inserted) {
    key = stored(key);
    if ((m_size + 1) * 5 > m_keys.size() * 4) {
      rehash(m_keys.size() * 2);
    }
    for (std::size_t i = home(key);; i = next(i)) {
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
    key = stored(key);
    for (std::size_t i = home(key);; i = next(i)) {
      if (m_keys[i] == key) {
        return &m_values[i];
      }
      if (m_keys[i] == 0) {
        return nullptr;
      }
    }
  }

  // Asks the CPU for `key`'s first slot ahead of a find or find_or_insert of it: a batch of keys
  // prefetched first, then probed, waits for one cache miss instead of one a key. Inlined always: out
  // of line, GCC 12 finds it pure (a prefetch is no side effect to it) and drops every call to it.
  [[gnu::always_inline]] void prefetch(std::uint64_t key) const {
    std::size_t i = home(stored(key));
    __builtin_prefetch(m_keys.data() + i);
    __builtin_prefetch(m_values.data() + i);
  }

  // Forgets every entry, ready for `expected` of them: the slots stay when they are the size
  // `expected` needs, else the table is sized again (each replay chunk fills its index afresh:
  // two hundred times in 1M events).
  void clear(std::size_t expected) {
    if (capacity_for(expected) != m_keys.size()) {
      *this = FlatHashMap(expected);
      return;
    }
    std::fill(m_keys.begin(), m_keys.end(), 0);
    m_size = 0;
  }

  std::size_t size() const { return m_size; }
  std::size_t capacity() const { return m_keys.size(); }

  // The key as the map stores it (0 is stored as 1).
  static std::uint64_t stored(std::uint64_t key) { return key == 0 ? 1 : key; }

  // Calls `f(key, value)` for every entry, in no particular order.
  template <typename F> void for_each(F&& f) const {
    for (std::size_t i = 0; i < m_keys.size(); ++i) {
      if (m_keys[i] != 0) {
        f(m_keys[i], m_values[i]);
      }
    }
  }

  // The order the map keeps its keys in (their first slots follow it): a bijection of the stored
  // key, so that distinct keys stay distinct.
  static std::uint64_t order_key(std::uint64_t key) {
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return key;
  }

  // The stored key of an order key (order_key's inverse).
  static std::uint64_t key_of_order(std::uint64_t order) {
    order ^= order >> 33;
    order *= 0x4f74430c22a54005ULL; // the multiplier's inverse modulo 2^64
    order ^= order >> 33;
    return order;
  }

  // Removes, in place and keeping the capacity, every entry for which `pred(key, value)` holds, and
  // appends them to `out` as E{order_key(key), value} in ascending order_key: the slots are nearly
  // in that order already, so sorting them costs little more than reading them.
  template <typename E, typename Pred> void extract_if(Pred&& pred, std::vector<E>& out) {
    std::size_t capacity = m_keys.size();
    std::size_t empty = 0; // a slot empty before anything is removed: no probe path crosses it
    while (m_keys[empty] != 0) {
      ++empty;
    }
    std::size_t first = out.size();
    std::vector<E> wrapped; // before `empty`, homed near the end: last in the order
    for (std::size_t i = 0; i < capacity; ++i) {
      if (m_keys[i] == 0 || !pred(m_keys[i], m_values[i])) {
        continue;
      }
      (i < empty && home(m_keys[i]) > i ? wrapped : out).push_back(E{order_key(m_keys[i]), m_values[i]});
      m_keys[i] = 0;
      --m_size;
    }
    out.insert(out.end(), wrapped.begin(), wrapped.end());
    for (std::size_t i = first + 1; i < out.size(); ++i) { // insertion sort: the few out of place move a little
      E taken = out[i];
      std::size_t j = i;
      for (; j > first && out[j - 1].key > taken.key; --j) {
        out[j] = out[j - 1];
      }
      out[j] = taken;
    }
    // Every entry left moves to the first hole on its probe path, walking from `empty` round: what
    // is already walked past has no hole on its path, and a move leaves its hole further on.
    for (std::size_t step = 1; step < capacity; ++step) {
      std::size_t i = (empty + step) % capacity;
      if (m_keys[i] == 0) {
        continue;
      }
      std::size_t j = home(m_keys[i]);
      while (j != i && m_keys[j] != 0) {
        j = next(j);
      }
      if (j != i) {
        m_keys[j] = m_keys[i];
        m_values[j] = m_values[i];
        m_keys[i] = 0;
      }
    }
  }

private:
  static std::size_t capacity_for(std::size_t expected) { return std::max<std::size_t>(16, expected * 5 / 4 + 1); }

  // The keys are already hashes, but callers may pass structured values: mix once more, then map
  // onto [0, capacity) by the high half of a 128-bit product (Lemire's fast range).
  std::size_t home(std::uint64_t key) const {
    key = order_key(key);
    __extension__ using Wide = unsigned __int128; // GCC and Clang on 64-bit targets
    return static_cast<std::size_t>((static_cast<Wide>(key) * m_keys.size()) >> 64);
  }
  std::size_t next(std::size_t i) const { return i + 1 == m_keys.size() ? 0 : i + 1; }

  void rehash(std::size_t capacity) {
    std::vector<std::uint64_t, HugePageAllocator<std::uint64_t>> old_keys(capacity, 0);
    std::vector<V, HugePageAllocator<V>> old_values(capacity);
    old_keys.swap(m_keys);
    old_values.swap(m_values);
    m_size = 0;
    for (std::size_t j = 0; j < old_keys.size(); ++j) {
      if (old_keys[j] != 0) {
        place(old_keys[j], old_values[j]);
      }
    }
  }

  // Puts a key known to be absent in its first free slot.
  void place(std::uint64_t key, const V& value) {
    std::size_t i = home(key);
    while (m_keys[i] != 0) {
      i = next(i);
    }
    m_keys[i] = key;
    m_values[i] = value;
    ++m_size;
  }

  std::vector<std::uint64_t, HugePageAllocator<std::uint64_t>> m_keys;
  std::vector<V, HugePageAllocator<V>> m_values;
  std::size_t m_size = 0;
};

} // namespace dedupctl::core
