#include "core/window/bloom.hpp"

#include "core/util/errors.hpp"

#include <murmurhash.h>

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

namespace dedupctl::core {

namespace {

constexpr std::uint64_t k_long_max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

void murmur3_x64_128(const void* data, std::size_t size, std::uint64_t out[2]) {
  lmmh_x64_128(data, static_cast<unsigned int>(size), 0, out);
}

} // namespace

BloomShape bloom_with_estimates(BloomImpl impl, std::uint64_t items, double fp) {
  if (!(fp > 0.0 && fp < 1.0)) {
    throw UsageError(fmt::format("bloom-fp={}: a false-positive rate is above 0 and below 1", fp));
  }
  const double ln2 = std::log(2.0);
  BloomShape shape;
  shape.impl = impl;
  if (impl == BloomImpl::BitsAndBlooms) {
    auto n = static_cast<double>(std::max<std::uint64_t>(items, 0));
    double m = std::ceil(-1 * n * std::log(fp) / std::pow(ln2, 2));
    double k = std::ceil(ln2 * m / n);
    shape.bits = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(m)); // New forces m and k to at least 1
    shape.hashes = std::max<std::uint32_t>(1, static_cast<std::uint32_t>(k));
    return shape;
  }
  auto n = static_cast<double>(std::max<std::uint64_t>(items, 1)); // create() takes 0 as 1
  auto m = static_cast<std::int64_t>(-n * std::log(fp) / (ln2 * ln2));
  // LockFreeBitArray holds ceil(m / 64) longs and indexes all of their bits.
  shape.bits = ((static_cast<std::uint64_t>(std::max<std::int64_t>(m, 1)) + 63) / 64) * 64;
  shape.hashes = static_cast<std::uint32_t>(std::max<long long>(1, std::llround(-std::log(fp) / ln2)));
  return shape;
}

BloomFilter::BloomFilter(BloomShape shape) : m_shape(shape), m_words((shape.bits + 63) / 64, 0) {
  if (shape.bits == 0 || shape.hashes == 0) {
    throw std::logic_error("a Bloom filter of no bits or no hashes");
  }
}

BloomFilter::BloomFilter(BloomShape shape, std::vector<std::uint64_t> words) : BloomFilter(shape) {
  if (words.size() != m_words.size()) {
    throw std::logic_error("a Bloom filter's words are not its bits");
  }
  m_words = std::move(words);
}

BloomHashes BloomFilter::hash(std::string_view id) const {
  BloomHashes out{};
  murmur3_x64_128(id.data(), id.size(), out.h);
  if (m_shape.impl == BloomImpl::BitsAndBlooms) {
    // The same hash over the data with a byte 1 appended (bits-and-blooms' sum256); no allocation for
    // an id of up to 255 bytes.
    char small[256];
    std::string large;
    char* padded = small;
    if (id.size() >= sizeof(small)) {
      large.resize(id.size() + 1);
      padded = large.data();
    }
    std::memcpy(padded, id.data(), id.size());
    padded[id.size()] = '\x01';
    murmur3_x64_128(padded, id.size() + 1, out.h + 2);
  }
  return out;
}

std::uint64_t BloomFilter::location(const BloomHashes& hashes, std::uint32_t i) const {
  if (m_shape.impl == BloomImpl::BitsAndBlooms) {
    std::uint64_t ii = i;
    return (hashes.h[ii % 2] + ii * hashes.h[2 + ((ii + (ii % 2)) % 4) / 2]) % m_shape.bits;
  }
  std::uint64_t combined = hashes.h[0] + static_cast<std::uint64_t>(i) * hashes.h[1];
  return (combined & k_long_max) % m_shape.bits;
}

bool BloomFilter::test(const BloomHashes& hashes) const {
  for (std::uint32_t i = 0; i < m_shape.hashes; ++i) {
    std::uint64_t at = location(hashes, i);
    if ((m_words[at / 64] & (std::uint64_t{1} << (at % 64))) == 0) {
      return false;
    }
  }
  return true;
}

void BloomFilter::add(const BloomHashes& hashes) {
  for (std::uint32_t i = 0; i < m_shape.hashes; ++i) {
    std::uint64_t at = location(hashes, i);
    m_words[at / 64] |= std::uint64_t{1} << (at % 64);
  }
}

void BloomFilter::locations(const BloomHashes& hashes, std::vector<std::uint64_t>& out) const {
  out.clear();
  for (std::uint32_t i = 0; i < m_shape.hashes; ++i) {
    out.push_back(location(hashes, i));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
}

namespace {

std::uint64_t big_endian(std::string_view bytes, std::size_t at, std::size_t size) {
  std::uint64_t out = 0;
  for (std::size_t i = 0; i < size; ++i) {
    out = out << 8 | static_cast<unsigned char>(bytes[at + i]);
  }
  return out;
}

std::vector<std::uint64_t> words_of(std::string_view bytes, std::size_t at, std::uint64_t count) {
  std::vector<std::uint64_t> words(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    words[i] = big_endian(bytes, at + 8 * i, 8);
  }
  return words;
}

} // namespace

BloomFilter read_bloom_dump(BloomImpl impl, std::string_view bytes, std::string_view what) {
  auto bad = [&](std::string_view why) {
    return UsageError(fmt::format("{}: not a {} filter's dump ({}); check --layout-option bloom-impl", what,
                                  impl == BloomImpl::Guava ? "Guava BloomFilter.writeTo" : "bits-and-blooms WriteTo",
                                  why));
  };
  BloomShape shape;
  shape.impl = impl;
  if (impl == BloomImpl::BitsAndBlooms) {
    if (bytes.size() < 24) {
      throw bad(fmt::format("{} bytes", bytes.size()));
    }
    std::uint64_t m = big_endian(bytes, 0, 8), k = big_endian(bytes, 8, 8), length = big_endian(bytes, 16, 8);
    std::uint64_t words = (length + 63) / 64;
    if (m == 0 || k == 0 || k > 1024 || length != m || bytes.size() != 24 + 8 * words) {
      throw bad(fmt::format("m={} k={} and {} bits in {} bytes", m, k, length, bytes.size()));
    }
    shape.bits = m;
    shape.hashes = static_cast<std::uint32_t>(k);
    return BloomFilter(shape, words_of(bytes, 24, words));
  }
  if (bytes.size() < 6) {
    throw bad(fmt::format("{} bytes", bytes.size()));
  }
  auto strategy = static_cast<unsigned char>(bytes[0]);
  auto k = static_cast<unsigned char>(bytes[1]);
  std::uint64_t longs = big_endian(bytes, 2, 4);
  if (k == 0 || longs == 0 || longs > 0x7fffffff || bytes.size() != 6 + 8 * longs || strategy > 1) {
    throw bad(fmt::format("strategy {}, k={} and {} longs in {} bytes", strategy, k, longs, bytes.size()));
  }
  if (strategy == 0) {
    throw UsageError(fmt::format("{}: the filter hashes with an older Guava's MURMUR128_MITZ_32, which dedupctl "
                                 "does not recompute",
                                 what));
  }
  shape.bits = longs * 64; // Guava indexes every bit of its longs
  shape.hashes = k;
  return BloomFilter(shape, words_of(bytes, 6, longs));
}

std::uint64_t BloomFilter::bits_set() const {
  std::uint64_t n = 0;
  for (auto word : m_words) {
    n += static_cast<std::uint64_t>(std::popcount(word));
  }
  return n;
}

} // namespace dedupctl::core
