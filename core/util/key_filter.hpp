#pragma once

#include "core/util/flat_map.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dedupctl::core {

// A blocked Bloom filter over 64-bit keys: a key, mixed, picks one 512-bit block (one cache line)
// from its high bits and sets 8 bits in it, chosen by double hashing. About 12 bits a key: under
// 1% of absent keys pass. A key it was given always passes.
class KeyFilter {
public:
  static constexpr std::size_t k_bits_per_key = 12;

  explicit KeyFilter(std::size_t keys)
      : m_blocks(std::max<std::size_t>(1, (keys * k_bits_per_key + 511) / 512)), m_words(m_blocks * 8) {}

  void add(std::uint64_t key) {
    key = mix(key);
    std::uint64_t* block = m_words.data() + 8 * block_of(key);
    for_each_bit(key, [&](unsigned bit) { block[bit >> 6] |= std::uint64_t{1} << (bit & 63); });
  }

  bool may_contain(std::uint64_t key) const {
    key = mix(key);
    const std::uint64_t* block = m_words.data() + 8 * block_of(key);
    bool all = true;
    for_each_bit(key, [&](unsigned bit) { all = all && (block[bit >> 6] >> (bit & 63) & 1) != 0; });
    return all;
  }

  std::size_t bytes() const { return m_words.size() * sizeof(std::uint64_t); }

private:
  static std::uint64_t mix(std::uint64_t key) { return FlatHashMap<std::uint8_t>::order_key(key); }
  std::size_t block_of(std::uint64_t key) const {
    return static_cast<std::size_t>(((key >> 32) * static_cast<std::uint64_t>(m_blocks)) >> 32); // m_blocks < 2^32
  }
  template <typename F> static void for_each_bit(std::uint64_t key, F&& f) {
    std::uint64_t h1 = key * 0x9e3779b97f4a7c15ULL;
    std::uint64_t h2 = (key ^ (key >> 31)) * 0xbf58476d1ce4e5b9ULL | 1;
    for (unsigned i = 0; i < 8; ++i) {
      f(static_cast<unsigned>((h1 + i * h2) >> 55)); // 9 bits: 0..511
    }
  }

  std::size_t m_blocks;
  std::vector<std::uint64_t> m_words;
};

} // namespace dedupctl::core
