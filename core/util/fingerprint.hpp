#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dedupctl::core {

// 64-bit fingerprints (XXH3). Analyzers keep these instead of the bytes they stand for; two
// distinct values collide with probability ~n²/2⁶⁵ (≈3·10⁻⁸ for a million ids).
std::uint64_t hash64(std::string_view bytes, std::uint64_t seed = 0);

// Lower-case 16-digit hex, the report's fingerprint form.
std::string fingerprint_hex(std::uint64_t fingerprint);

} // namespace dedupctl::core
