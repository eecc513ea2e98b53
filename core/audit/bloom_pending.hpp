#pragma once

#include "core/finding.hpp"
#include "core/util/flat_map.hpp"

#include <cstdint>
#include <optional>
#include <vector>

// A Bloom filter read live (--layout redis-bloom): an event the group has not consumed yet whose key
// the filter already says "maybe" for, while no consumed event of the range carries that key, will be
// skipped as seen when the consumer reaches it: a false positive, dropped and never applied. A
// pending event whose key a consumed event carries is a redelivery the filter rightly catches.
// Decided at the end: a consumed event of another partition may come later in the order read.
namespace dedupctl::core {

class BloomPending {
public:
  explicit BloomPending(std::size_t max_examples) : m_max_examples(max_examples) {}

  // One event with an id: `key_hash` the hash64 of its dedup key, `present` the filter's answer,
  // `consumed` below its partition's committed offset, `pending` at or past it.
  template <typename MakeExample>
  void observe(std::uint64_t key_hash, bool present, bool consumed, bool pending, MakeExample&& make_example) {
    if (consumed) {
      bool inserted = false;
      m_consumed.find_or_insert(key_hash, inserted);
    } else if (pending && present) {
      m_held.push_back(Held{key_hash, make_example()});
    }
  }

  // bloom-false-positive (error), or nullopt when there is none.
  std::optional<Finding> finish() const;

private:
  struct Held {
    std::uint64_t key_hash;
    Example example;
  };
  std::size_t m_max_examples;
  FlatHashMap<std::uint8_t> m_consumed;
  std::vector<Held> m_held;
};

} // namespace dedupctl::core
