#pragma once

#include "core/store/layout.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

// Bloom filters that hash as the libraries do, so that a filter rebuilt here from the same ids holds
// the same bits and says "maybe" for the same ids as the consumer's own:
// - bits-and-blooms/bloom v3: four 64-bit hashes, murmur3 x64-128 (seed 0) of the data and of the
//   data with a byte 1 appended; the i-th location is h[i%2] + i*h[2+((i+i%2)%4)/2], mod m;
// - Guava's MURMUR128_MITZ_64: murmur3_128 (seed 0) of the funnel's bytes (a string's UTF-8), h1
//   and h2 its two little-endian halves; the i-th location is (h1 + i*h2) & Long.MAX_VALUE, mod the
//   bit array's size (m rounded up to whole 64-bit words).
namespace dedupctl::core {

struct BloomShape {
  BloomImpl impl = BloomImpl::BitsAndBlooms;
  std::uint64_t bits = 0;   // m, as the library indexes it
  std::uint32_t hashes = 0; // k
};

// The shape the library gives `items` expected ids at false-positive rate `fp`:
// bits-and-blooms NewWithEstimates (m = ceil(-n ln p / ln²2), k = ceil(ln2 · m / n)); Guava
// BloomFilter.create (m = (long)(-n ln p / ln²2) rounded up to 64, k = max(1, round(-ln p / ln 2))).
BloomShape bloom_with_estimates(BloomImpl impl, std::uint64_t items, double fp);

// The hashes one id needs, computed once for a test and the add that may follow.
struct BloomHashes {
  std::uint64_t h[4];
};

class BloomFilter {
public:
  explicit BloomFilter(BloomShape shape);
  // A filter whose bits are `words` (bit x in word x/64, mask 1 << x%64, as both libraries keep
  // them); throws std::logic_error when they are not the shape's count.
  BloomFilter(BloomShape shape, std::vector<std::uint64_t> words);

  BloomHashes hash(std::string_view id) const;
  bool test(const BloomHashes& hashes) const;
  void add(const BloomHashes& hashes);
  bool test(std::string_view id) const { return test(hash(id)); }
  void add(std::string_view id) { add(hash(id)); }

  // The bits an id sets, each once, in `out`.
  void locations(const BloomHashes& hashes, std::vector<std::uint64_t>& out) const;

  const BloomShape& shape() const { return m_shape; }
  std::uint64_t bits_set() const;

private:
  std::uint64_t location(const BloomHashes& hashes, std::uint32_t i) const;

  BloomShape m_shape;
  std::vector<std::uint64_t> m_words;
};

// A filter as its library writes it to a stream: bits-and-blooms' WriteTo (big-endian u64 m, k, the
// bitset's length, then its words) or Guava's writeTo (a byte for the strategy, 1 for
// MURMUR128_MITZ_64; a byte for k; a big-endian int of longs, then the longs). Throws UsageError
// beginning with `what` when the bytes are not that library's dump (or are Guava's MITZ_32, which is
// not recomputed here).
BloomFilter read_bloom_dump(BloomImpl impl, std::string_view bytes, std::string_view what);

} // namespace dedupctl::core
