#include "core/util/time.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <limits>

namespace dedupctl::core {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Reads an unsigned decimal number at `pos`, advancing it; nullopt when there is none or it overflows.
std::optional<std::int64_t> read_number(std::string_view text, std::size_t& pos) {
  std::size_t start = pos;
  std::int64_t value = 0;
  while (pos < text.size() && is_digit(text[pos])) {
    if (value > (std::numeric_limits<std::int64_t>::max() - 9) / 10) {
      return std::nullopt;
    }
    value = value * 10 + (text[pos] - '0');
    ++pos;
  }
  if (pos == start) {
    return std::nullopt;
  }
  return value;
}

[[noreturn]] void bad_duration(std::string_view text, std::string_view what) {
  throw UsageError(fmt::format("invalid {} '{}': expected a duration such as 90s, 15m, 6h, 7d, 1d12h or "
                               "ISO 8601 PT6H, P7D",
                               what, text));
}

std::int64_t checked_add(std::int64_t total, std::int64_t value, std::int64_t unit, std::string_view text,
                         std::string_view what) {
  if (value > (std::numeric_limits<std::int64_t>::max() - total) / unit) {
    bad_duration(text, what);
  }
  return total + value * unit;
}

std::int64_t parse_iso_duration(std::string_view text, std::string_view what) {
  // P[nW][nD][T[nH][nM][nS]]; years and months are refused because their length varies.
  std::size_t pos = 1;
  bool in_time = false;
  bool any = false;
  std::int64_t total = 0;
  while (pos < text.size()) {
    if (text[pos] == 'T') {
      if (in_time) {
        bad_duration(text, what);
      }
      in_time = true;
      ++pos;
      continue;
    }
    auto value = read_number(text, pos);
    if (!value || pos >= text.size()) {
      bad_duration(text, what);
    }
    std::int64_t millis = 0;
    if (text[pos] == '.' && in_time) {
      // Fractional seconds: "PT1.5S".
      ++pos;
      std::int64_t scale = 100;
      while (pos < text.size() && is_digit(text[pos])) {
        millis += (text[pos] - '0') * scale;
        scale /= 10;
        ++pos;
      }
      if (pos >= text.size() || text[pos] != 'S') {
        bad_duration(text, what);
      }
    }
    char unit = text[pos++];
    std::int64_t factor = 0;
    if (!in_time && unit == 'W') {
      factor = 7 * k_ms_per_day;
    } else if (!in_time && unit == 'D') {
      factor = k_ms_per_day;
    } else if (in_time && unit == 'H') {
      factor = k_ms_per_hour;
    } else if (in_time && unit == 'M') {
      factor = k_ms_per_minute;
    } else if (in_time && unit == 'S') {
      factor = k_ms_per_second;
    } else {
      bad_duration(text, what);
    }
    total = checked_add(total, *value, factor, text, what) + millis;
    any = true;
  }
  if (!any) {
    bad_duration(text, what);
  }
  return total;
}

} // namespace

std::int64_t parse_duration(std::string_view text, std::string_view what) {
  if (text.empty()) {
    bad_duration(text, what);
  }
  if (text[0] == 'P') {
    return parse_iso_duration(text, what);
  }
  std::size_t pos = 0;
  std::int64_t total = 0;
  while (pos < text.size()) {
    auto value = read_number(text, pos);
    if (!value || pos >= text.size()) {
      bad_duration(text, what);
    }
    std::int64_t factor = 0;
    if (text.substr(pos, 2) == "ms") {
      factor = 1;
      pos += 2;
    } else {
      switch (text[pos]) {
      case 's':
        factor = k_ms_per_second;
        break;
      case 'm':
        factor = k_ms_per_minute;
        break;
      case 'h':
        factor = k_ms_per_hour;
        break;
      case 'd':
        factor = k_ms_per_day;
        break;
      case 'w':
        factor = 7 * k_ms_per_day;
        break;
      default:
        bad_duration(text, what);
      }
      ++pos;
    }
    total = checked_add(total, *value, factor, text, what);
  }
  return total;
}

std::int64_t days_from_civil(std::int64_t year, unsigned month, unsigned day) {
  year -= month <= 2 ? 1 : 0;
  const std::int64_t era = (year >= 0 ? year : year - 399) / 400;
  const auto yoe = static_cast<unsigned>(year - era * 400);
  const unsigned doy = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

std::int64_t parse_time(std::string_view text, std::string_view what) {
  auto fail = [&]() -> std::int64_t {
    throw UsageError(fmt::format("invalid {} '{}': expected RFC 3339 such as 2026-11-20T08:00:00Z or "
                                 "2026-11-20T09:00:00+01:00, or epoch milliseconds",
                                 what, text));
  };
  if (text.empty()) {
    return fail();
  }
  bool all_digits = true;
  for (char c : text) {
    all_digits = all_digits && is_digit(c);
  }
  if (all_digits) {
    std::size_t pos = 0;
    auto value = read_number(text, pos);
    return value ? *value : fail();
  }
  // YYYY-MM-DD
  auto fixed = [&](std::size_t pos, std::size_t len) -> std::int64_t {
    if (pos + len > text.size()) {
      return -1;
    }
    std::int64_t v = 0;
    for (std::size_t i = pos; i < pos + len; ++i) {
      if (!is_digit(text[i])) {
        return -1;
      }
      v = v * 10 + (text[i] - '0');
    }
    return v;
  };
  std::int64_t year = fixed(0, 4);
  std::int64_t month = fixed(5, 2);
  std::int64_t day = fixed(8, 2);
  if (year < 0 || month < 1 || month > 12 || day < 1 || day > 31 || text.size() < 10 || text[4] != '-' ||
      text[7] != '-') {
    return fail();
  }
  static constexpr std::array<int, 12> k_days_in_month{31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (day > k_days_in_month[static_cast<std::size_t>(month - 1)] || (month == 2 && day == 29 && !leap)) {
    return fail();
  }
  std::int64_t ms = days_from_civil(year, static_cast<unsigned>(month), static_cast<unsigned>(day)) * k_ms_per_day;
  if (text.size() == 10) {
    return ms;
  }
  if (text[10] != 'T' && text[10] != 't' && text[10] != ' ') {
    return fail();
  }
  std::int64_t hour = fixed(11, 2);
  std::int64_t minute = fixed(14, 2);
  if (hour < 0 || hour > 23 || minute < 0 || minute > 59 || text.size() < 16 || text[13] != ':') {
    return fail();
  }
  std::size_t pos = 16;
  std::int64_t second = 0;
  if (pos < text.size() && text[pos] == ':') {
    second = fixed(17, 2);
    if (second < 0 || second > 60) {
      return fail();
    }
    pos = 19;
  }
  ms += hour * k_ms_per_hour + minute * k_ms_per_minute + second * k_ms_per_second;
  if (pos < text.size() && (text[pos] == '.' || text[pos] == ',')) {
    ++pos;
    std::int64_t scale = 100;
    std::size_t start = pos;
    while (pos < text.size() && is_digit(text[pos])) {
      ms += (text[pos] - '0') * scale;
      scale /= 10;
      ++pos;
    }
    if (pos == start) {
      return fail();
    }
  }
  if (pos == text.size()) {
    return ms; // zoneless: UTC
  }
  if ((text[pos] == 'Z' || text[pos] == 'z') && pos + 1 == text.size()) {
    return ms;
  }
  if ((text[pos] == '+' || text[pos] == '-') &&
      ((pos + 6 == text.size() && text[pos + 3] == ':') || pos + 3 == text.size() || pos + 5 == text.size())) {
    // +HH:MM (RFC 3339), and PostgreSQL's +HH and +HHMM.
    std::int64_t oh = fixed(pos + 1, 2);
    std::int64_t om = pos + 3 == text.size() ? 0 : fixed(pos + (text[pos + 3] == ':' ? 4 : 3), 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) {
      return fail();
    }
    std::int64_t offset = oh * k_ms_per_hour + om * k_ms_per_minute;
    return text[pos] == '+' ? ms - offset : ms + offset;
  }
  return fail();
}

CivilDate civil_from_days(std::int64_t days) {
  std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  std::int64_t year = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned day = doy - (153 * mp + 2) / 5 + 1;
  const unsigned month = mp < 10 ? mp + 3 : mp - 9;
  year += month <= 2 ? 1 : 0;
  return {year, month, day};
}

std::string format_time(std::int64_t epoch_ms) {
  std::int64_t days = epoch_ms >= 0 ? epoch_ms / k_ms_per_day : (epoch_ms - k_ms_per_day + 1) / k_ms_per_day;
  std::int64_t rem = epoch_ms - days * k_ms_per_day;
  CivilDate date = civil_from_days(days);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", date.year, date.month, date.day, rem / k_ms_per_hour,
                     rem % k_ms_per_hour / k_ms_per_minute, rem % k_ms_per_minute / k_ms_per_second,
                     rem % k_ms_per_second);
}

std::string format_duration(std::int64_t ms) {
  if (ms == 0) {
    return "0s";
  }
  std::string out;
  if (ms < 0) {
    out += '-';
    ms = -ms;
  }
  struct Unit {
    std::int64_t size;
    const char* name;
  };
  static constexpr std::array<Unit, 5> k_units{
      {{k_ms_per_day, "d"}, {k_ms_per_hour, "h"}, {k_ms_per_minute, "m"}, {k_ms_per_second, "s"}, {1, "ms"}}};
  for (const auto& unit : k_units) {
    if (ms >= unit.size) {
      out += fmt::format("{}{}", ms / unit.size, unit.name);
      ms %= unit.size;
    }
  }
  return out;
}

} // namespace dedupctl::core
