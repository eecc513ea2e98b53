#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Durations and points in time, as milliseconds. Pure: "now" is always a parameter.
namespace dedupctl::core {

inline constexpr std::int64_t k_ms_per_second = 1000;
inline constexpr std::int64_t k_ms_per_minute = 60 * k_ms_per_second;
inline constexpr std::int64_t k_ms_per_hour = 60 * k_ms_per_minute;
inline constexpr std::int64_t k_ms_per_day = 24 * k_ms_per_hour;
// --timeout's default: connecting to a system and each request to it (Kafka, Redis, PostgreSQL).
inline constexpr std::int64_t k_default_timeout_ms = 10 * k_ms_per_second;

// Parses "90s", "15m", "6h", "7d", "1d12h", "500ms", "2w" or ISO 8601 "PT6H", "P7D", "P1DT2H30M".
// Throws UsageError naming `what` (the flag) when the text is not a duration.
// a + b for durations, at most INT64_MAX: a retention near the limit plus a lag must not wrap
// around into a short one.
constexpr std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

std::int64_t parse_duration(std::string_view text, std::string_view what = "duration");

// Parses RFC 3339 ("2026-11-20T08:00:00Z", "…+01:00", fractional seconds), a zoneless time
// (taken as UTC), a date alone (midnight UTC) or epoch milliseconds. Throws UsageError.
std::int64_t parse_time(std::string_view text, std::string_view what = "time");

// "2026-11-21T10:00:00.000Z", the report's time format.
std::string format_time(std::int64_t epoch_ms);

// The millisecond an epoch time in microseconds falls in: floored, before 1970 too, as parse_time
// cuts a finer fraction.
constexpr std::int64_t epoch_ms_of_us(std::int64_t us) { return us / 1000 - (us % 1000 < 0 ? 1 : 0); }

// The shortest exact form: "7d", "1d12h", "90s", "250ms", "0s".
std::string format_duration(std::int64_t ms);

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t year, unsigned month, unsigned day);

struct CivilDate {
  std::int64_t year = 1970;
  unsigned month = 1;
  unsigned day = 1;
};
// The date `days` after 1970-01-01 (negative: before), its inverse.
CivilDate civil_from_days(std::int64_t days);

} // namespace dedupctl::core
