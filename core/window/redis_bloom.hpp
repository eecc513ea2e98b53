#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// RedisBloom's scalable Bloom filter (an SBChain of links, the newest answering first) rebuilt from
// what BF.SCANDUMP writes, so that a snapshot of the filter answers BF.EXISTS offline exactly as the
// live one does. From RedisBloom's sources (src/sb.c, deps/bloom/bloom.c, deps/murmur2):
// - the header (iterator 1) is packed little-endian: size u64, nfilters u32, options u32, growth
//   u32, then per link bytes u64, bits u64, size u64, error f64, bpe f64, hashes u32, entries u64,
//   n2 u8 (20 + 53 bytes a link);
// - each later chunk comes with the iterator after it: its bytes start at iterator - length - 1 in
//   the links' bit arrays laid end to end, and never span two links;
// - an id's hashes, with BLOOM_OPT_FORCE64 (every filter BF.RESERVE or BF.ADD makes since 2.0):
//   a = MurmurHash64A(id, 0xc6a4a7935bd1e995), b = MurmurHash64A(id, a). Bit i of k is
//   (a + i·b) mod (2^n2, or bits when n2 is 0), bit x at byte x/8, mask 1 << x%8. A filter without
//   the option (made by RedisBloom 1.x, hashed with 32-bit MurmurHash2) is refused: no library here
//   writes one to check against.
// valkey-bloom's filters are another format, hashed with a seed of their own per filter: not this.
namespace dedupctl::core {

// MurmurHash64A (Austin Appleby's MurmurHash2 family, public domain), as RedisBloom's
// MurmurHash64A_Bloom computes it on a little-endian machine.
std::uint64_t murmur_hash64a(std::string_view data, std::uint64_t seed);

class RedisBloomChain {
public:
  // From the header chunk; throws UsageError beginning with `what` when it is not RedisBloom's.
  RedisBloomChain(std::string_view header, std::string_view what);

  // A data chunk with the iterator BF.SCANDUMP returned beside it; throws UsageError beginning with
  // `what` when it does not fall inside one link.
  void load_chunk(std::int64_t iterator, std::string_view data, std::string_view what);
  // Whether every byte of every link came in a chunk.
  bool complete() const;
  // BF.EXISTS: "maybe" (true) or certainly not (false).
  bool contains(std::string_view id) const;

  std::uint64_t items() const { return m_size; } // what BF.INFO calls the number of items
  std::uint64_t capacity() const;                // entries of every link
  std::size_t links() const { return m_links.size(); }
  double error_rate() const { return m_links.front().error; } // the first link's (BF.RESERVE's, halved when scaling)

private:
  struct Link {
    std::uint64_t bytes = 0, bits = 0, size = 0, entries = 0;
    double error = 0, bpe = 0;
    std::uint32_t hashes = 0;
    std::uint8_t n2 = 0;
    std::vector<unsigned char> bf;
  };
  bool link_contains(const Link& link, std::uint64_t a, std::uint64_t b) const;

  std::uint64_t m_size = 0;
  std::uint32_t m_options = 0, m_growth = 0;
  std::vector<Link> m_links;
  std::uint64_t m_filled = 0; // the links' bytes that came in chunks, in order
};

} // namespace dedupctl::core
