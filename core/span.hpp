#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace dedupctl::core {

// A duration that may be unknown or infinite: a TTL of `none`, a retention of -1 or compaction.
// Exactly three states, and a finite span always has its milliseconds, so a caller asks one
// question (`finite_ms()`) instead of combining a flag with an optional.
class Span {
public:
  constexpr Span() = default; // unknown
  static constexpr Span unknown() { return Span(); }
  static constexpr Span infinite() { return Span(Kind::Infinite, 0); }
  static constexpr Span finite(std::int64_t ms) { return Span(Kind::Finite, ms); }

  constexpr bool known() const { return m_kind != Kind::Unknown; }
  constexpr bool is_infinite() const { return m_kind == Kind::Infinite; }
  constexpr bool is_finite() const { return m_kind == Kind::Finite; }
  // The milliseconds of a finite span; nullopt when it is unknown or infinite.
  constexpr std::optional<std::int64_t> finite_ms() const {
    return m_kind == Kind::Finite ? std::optional<std::int64_t>(m_ms) : std::nullopt;
  }

  friend constexpr bool operator==(const Span&, const Span&) = default;

private:
  enum class Kind : std::uint8_t { Unknown, Finite, Infinite };
  constexpr Span(Kind kind, std::int64_t ms) : m_kind(kind), m_ms(ms) {}
  Kind m_kind = Kind::Unknown;
  std::int64_t m_ms = 0;
};

// "infinite", "7d", or "unknown": how every report and title prints a span.
std::string to_text(const Span& span);

} // namespace dedupctl::core
