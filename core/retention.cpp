#include "core/retention.hpp"

#include "core/time.hpp"

#include <charconv>

namespace dedupctl::core {

Span retention_from_configs(std::optional<std::string_view> retention_ms, std::optional<std::string_view> cleanup_policy) {
  Span span;
  if (cleanup_policy && cleanup_policy->find("compact") != std::string_view::npos &&
      cleanup_policy->find("delete") == std::string_view::npos) {
    span.infinite = true;
    return span;
  }
  if (!retention_ms) {
    return span;
  }
  std::int64_t ms = 0;
  auto [ptr, ec] = std::from_chars(retention_ms->data(), retention_ms->data() + retention_ms->size(), ms);
  if (ec != std::errc{} || ptr != retention_ms->data() + retention_ms->size()) {
    return span;
  }
  if (ms < 0) {
    span.infinite = true;
  } else {
    span.ms = ms;
  }
  return span;
}

Span parse_retention(std::string_view text) {
  Span span;
  if (text == "infinite" || text == "forever" || text == "-1") {
    span.infinite = true;
  } else {
    span.ms = parse_duration(text, "--retention");
  }
  return span;
}

Span parse_ttl(std::string_view text) {
  Span span;
  if (text == "none") {
    span.infinite = true;
  } else {
    span.ms = parse_duration(text, "--ttl");
  }
  return span;
}

} // namespace dedupctl::core
