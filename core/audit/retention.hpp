#pragma once

#include "core/audit/coverage.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace dedupctl::core {

// A topic's configs that decide how long it keeps events, as the broker describes them.
struct TopicRetention {
  std::optional<std::string> retention_ms;
  std::optional<std::string> cleanup_policy;
  std::optional<std::string> segment_ms;
};

// How long a topic keeps events replayable, from its configs: retention.ms (-1: forever) and
// cleanup.policy ("compact" alone: forever, since the latest event of a key is never deleted;
// "compact,delete" and "delete": retention.ms). A segment is deleted only once its newest event is
// older than retention.ms, so events stay replayable for up to retention.ms + segment.ms: the
// segment is added when known. Unknown when retention.ms is absent or garbage.
Span retention_from_configs(std::optional<std::string_view> retention_ms,
                            std::optional<std::string_view> cleanup_policy,
                            std::optional<std::string_view> segment_ms = std::nullopt);

// A topic's retention configs as the broker describes them (DescribeConfigs). Abstract because
// librdkafka's mock cluster cannot answer DescribeConfigs: the audit's admin path is unit-tested
// with FakeTopicConfigs (tests/unit/fakes.hpp); commands/audit.cpp asks the real broker.
class TopicConfigs {
public:
  virtual ~TopicConfigs() = default;
  // retention.ms, cleanup.policy and segment.ms; nullopt when the broker could not answer.
  virtual std::optional<TopicRetention> retention(const std::string& topic) = 0;
};

// --retention DURATION | infinite. Throws UsageError.
Span parse_retention(std::string_view text);
Span retention_from_configs(const TopicRetention& configs);
// cleanup.policy has compact ("compact" or "compact,delete"): the latest event of a key stays.
bool is_compacted(const TopicRetention& configs);
// Why a topic the broker described still has no retention: its configs lack retention.ms.
std::string no_retention_in_configs(std::string_view topic);

} // namespace dedupctl::core
