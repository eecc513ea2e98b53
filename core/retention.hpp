#pragma once

#include "core/coverage.hpp"

#include <optional>
#include <string_view>

namespace dedupctl::core {

// How long a topic keeps events replayable, from its configs: retention.ms (-1: forever) and
// cleanup.policy ("compact" alone: forever, since the latest event of a key is never deleted;
// "compact,delete" and "delete": retention.ms). Unknown when retention.ms is absent or garbage.
Span retention_from_configs(std::optional<std::string_view> retention_ms, std::optional<std::string_view> cleanup_policy);

// --retention DURATION | infinite. Throws UsageError.
Span parse_retention(std::string_view text);
// --ttl DURATION | none. Throws UsageError.
Span parse_ttl(std::string_view text);

} // namespace dedupctl::core
