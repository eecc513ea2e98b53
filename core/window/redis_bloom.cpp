#include "core/window/redis_bloom.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace dedupctl::core {

namespace {

constexpr std::uint32_t k_opt_noround = 1, k_opt_ents_is_bits = 2, k_opt_force64 = 4, k_opt_no_scaling = 8;
constexpr std::size_t k_header_size = 20, k_link_size = 53;
constexpr double k_ln2 = 0.693147180559945; // as bloom.c writes it

template <typename T> T read_le(std::string_view bytes, std::size_t at) {
  T out{};
  std::memcpy(&out, bytes.data() + at, sizeof(T)); // the dump is little-endian, as this machine
  return out;
}

std::uint64_t load_u64(const unsigned char* p) {
  std::uint64_t k = 0;
  std::memcpy(&k, p, sizeof k);
  return k;
}

} // namespace

std::uint64_t murmur_hash64a(std::string_view data, std::uint64_t seed) {
  constexpr std::uint64_t m = 0xc6a4a7935bd1e995ULL;
  constexpr int r = 47;
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t len = data.size();
  // RedisBloom passes the length as an int: (len * m) is computed on the int widened to 64 bits.
  std::uint64_t h = seed ^ (static_cast<std::uint64_t>(static_cast<std::int64_t>(static_cast<int>(len))) * m);
  std::size_t words = len / 8;
  for (std::size_t i = 0; i < words; ++i) {
    std::uint64_t k = load_u64(p + i * 8);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  const unsigned char* tail = p + words * 8;
  std::size_t rest = len & 7;
  if (rest > 0) {
    for (std::size_t i = rest; i-- > 0;) {
      h ^= static_cast<std::uint64_t>(tail[i]) << (8 * i);
    }
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}

RedisBloomChain::RedisBloomChain(std::string_view header, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return UsageError(fmt::format("{}: not a RedisBloom filter's BF.SCANDUMP header ({})", what, why));
  };
  if (header.size() < k_header_size) {
    throw bad(fmt::format("{} bytes", header.size()));
  }
  m_size = read_le<std::uint64_t>(header, 0);
  auto nfilters = read_le<std::uint32_t>(header, 8);
  m_options = read_le<std::uint32_t>(header, 12);
  m_growth = read_le<std::uint32_t>(header, 16);
  if (nfilters == 0 || header.size() != k_header_size + k_link_size * std::size_t{nfilters}) {
    throw bad(fmt::format("{} bytes for {} links", header.size(), nfilters));
  }
  if ((m_options & ~(k_opt_noround | k_opt_ents_is_bits | k_opt_force64 | k_opt_no_scaling)) != 0) {
    throw bad(fmt::format("options {}", m_options));
  }
  if ((m_options & k_opt_force64) == 0) {
    throw UsageError(fmt::format("{}: the filter hashes with 32-bit MurmurHash2 (made by RedisBloom 1.x), which "
                                 "dedupctl does not recompute; audit the live filter instead",
                                 what));
  }
  std::uint64_t total = 0;
  for (std::uint32_t i = 0; i < nfilters; ++i) {
    std::size_t at = k_header_size + k_link_size * i;
    Link link;
    link.bytes = read_le<std::uint64_t>(header, at);
    link.bits = read_le<std::uint64_t>(header, at + 8);
    link.size = read_le<std::uint64_t>(header, at + 16);
    link.error = read_le<double>(header, at + 24);
    link.bpe = read_le<double>(header, at + 32);
    link.hashes = read_le<std::uint32_t>(header, at + 40);
    link.entries = read_le<std::uint64_t>(header, at + 44);
    link.n2 = read_le<std::uint8_t>(header, at + 52);
    // bloom_validate_integrity's checks, and a size this machine can hold.
    bool valid = link.error > 0 && link.error < 1 && link.n2 <= 63 &&
                 (link.n2 == 0 || link.bits >= (std::uint64_t{1} << link.n2)) && link.bits != 0 &&
                 link.bytes <= (std::uint64_t{1} << 40) && link.bits == link.bytes * 8 &&
                 link.hashes == static_cast<std::uint32_t>(std::ceil(k_ln2 * link.bpe));
    if (!valid) {
      throw bad(fmt::format("link {} of {}", i + 1, nfilters));
    }
    total += link.size;
    m_links.push_back(std::move(link));
  }
  if (total != m_size) {
    throw bad(fmt::format("{} items in all, {} in its links", m_size, total));
  }
  for (auto& link : m_links) {
    link.bf.assign(link.bytes, 0);
  }
}

void RedisBloomChain::load_chunk(std::int64_t iterator, std::string_view data, std::string_view what) {
  // SBChain_LoadEncodedChunk: the chunk's first byte is at iterator - length - 1, counted over the
  // links end to end. Chunks are taken in the order BF.SCANDUMP gave them.
  auto length = static_cast<std::int64_t>(data.size());
  if (data.empty() || iterator - length < 1) {
    throw UsageError(fmt::format("{}: a chunk of {} bytes cannot end at iterator {}", what, data.size(), iterator));
  }
  auto offset = static_cast<std::uint64_t>(iterator - length - 1);
  if (offset != m_filled) {
    throw UsageError(fmt::format("{}: the chunk ending at iterator {} is not the next part of the filter (its byte "
                                 "{}, where {} come next); take the snapshot again",
                                 what, iterator, offset, m_filled));
  }
  for (auto& link : m_links) {
    if (offset >= link.bytes) {
      offset -= link.bytes;
      continue;
    }
    if (data.size() > link.bytes - offset) {
      break;
    }
    std::memcpy(link.bf.data() + offset, data.data(), data.size());
    m_filled += data.size();
    return;
  }
  throw UsageError(fmt::format("{}: the chunk ending at iterator {} lies past the filter's links", what, iterator));
}

bool RedisBloomChain::complete() const {
  std::uint64_t bytes = 0;
  for (const auto& link : m_links) {
    bytes += link.bytes;
  }
  return m_filled == bytes;
}

std::uint64_t RedisBloomChain::capacity() const {
  std::uint64_t out = 0;
  for (const auto& link : m_links) {
    out += link.entries;
  }
  return out;
}

bool RedisBloomChain::link_contains(const Link& link, std::uint64_t a, std::uint64_t b) const {
  std::uint64_t mod = link.n2 > 0 ? std::uint64_t{1} << link.n2 : link.bits;
  for (std::uint64_t i = 0; i < link.hashes; ++i) {
    std::uint64_t x = (a + i * b) % mod;
    if ((link.bf[x >> 3] & (1U << (x % 8))) == 0) {
      return false;
    }
  }
  return true;
}

bool RedisBloomChain::contains(std::string_view id) const {
  std::uint64_t a = murmur_hash64a(id, 0xc6a4a7935bd1e995ULL);
  std::uint64_t b = murmur_hash64a(id, a);
  for (auto link = m_links.rbegin(); link != m_links.rend(); ++link) {
    if (link_contains(*link, a, b)) {
      return true;
    }
  }
  return false;
}

} // namespace dedupctl::core
