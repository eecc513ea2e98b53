#include "core/util/fingerprint.hpp"

#include <fmt/format.h>
#include <xxhash.h>

namespace dedupctl::core {

std::uint64_t hash64(std::string_view bytes, std::uint64_t seed) {
  return XXH3_64bits_withSeed(bytes.data(), bytes.size(), seed);
}

std::string fingerprint_hex(std::uint64_t fingerprint) { return fmt::format("{:016x}", fingerprint); }

} // namespace dedupctl::core
