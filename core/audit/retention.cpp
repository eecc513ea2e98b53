#include "core/audit/retention.hpp"

#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dedupctl::core {

namespace {
std::optional<std::int64_t> number(std::optional<std::string_view> text) {
  if (!text) {
    return std::nullopt;
  }
  std::int64_t value = 0;
  if (!parse_whole(*text, value)) {
    return std::nullopt;
  }
  return value;
}
} // namespace

Span retention_from_configs(std::optional<std::string_view> retention_ms,
                            std::optional<std::string_view> cleanup_policy,
                            std::optional<std::string_view> segment_ms) {
  if (cleanup_policy && cleanup_policy->find("compact") != std::string_view::npos &&
      cleanup_policy->find("delete") == std::string_view::npos) {
    return Span::infinite();
  }
  auto ms = number(retention_ms);
  if (!ms) {
    return Span::unknown();
  }
  if (*ms < 0) {
    return Span::infinite();
  }
  auto segment = number(segment_ms);
  return Span::finite(saturating_add(*ms, segment && *segment > 0 ? *segment : 0));
}

bool is_compacted(const TopicRetention& configs) {
  return configs.cleanup_policy && configs.cleanup_policy->find("compact") != std::string::npos;
}

Span retention_from_configs(const TopicRetention& configs) {
  auto view = [](const std::optional<std::string>& s) {
    return s ? std::optional<std::string_view>(*s) : std::nullopt;
  };
  return retention_from_configs(view(configs.retention_ms), view(configs.cleanup_policy), view(configs.segment_ms));
}

std::string no_retention_in_configs(std::string_view topic) {
  return fmt::format("the broker's configs for {} have no retention.ms", topic);
}

Span parse_retention(std::string_view text) {
  if (text == "infinite" || text == "forever" || text == "-1") {
    return Span::infinite();
  }
  return Span::finite(parse_duration(text, "--retention"));
}

} // namespace dedupctl::core
