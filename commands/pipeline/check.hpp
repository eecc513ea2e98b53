#pragma once

#include "core/check_rules.hpp"
#include "core/declarations.hpp"
#include "core/retention.hpp"
#include "reports/report.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dedupctl::commands {

// What --live asks the real systems. Abstract so that every path, Kafka's DescribeConfigs above
// all (the mock cluster cannot answer it), is tested with a fake. Each call may throw
// UnreachableError; that check then becomes a `check-unavailable` finding.
class LiveInspector {
public:
  struct Redis {
    std::optional<std::string> maxmemory_policy;
    std::optional<bool> persistence;
    std::int64_t sampled_keys = 0;
    std::int64_t sampled_without_expiry = 0;
    std::optional<std::int64_t> max_pttl_ms; // the longest remaining TTL among the sampled keys
  };
  struct Inbox {
    bool table_exists = false;
    std::vector<std::string> columns;
    bool unique_over_id = false;
  };
  virtual ~LiveInspector() = default;
  // retention.ms, cleanup.policy and segment.ms; nullopt when the broker could not answer.
  virtual std::optional<core::TopicRetention> topic_retention(const std::string& topic) = 0;
  virtual Redis redis(const core::ConsumerDeclaration& consumer) = 0;
  virtual Inbox inbox(const core::ConsumerDeclaration& consumer) = 0;
};

// The SCAN MATCH pattern of a template's records: its literal start (glob characters escaped) and *.
std::string key_pattern(const core::ConsumerDeclaration& consumer);

// Runs every static rule over the declarations and, with an inspector, the live ones. A live check
// that cannot run is a finding; only when none could run is the report incomplete (exit 3).
reports::Report run_check(const core::Declarations& declarations, const std::string& file, LiveInspector* live,
                          const core::FailOn& fail_on, const std::string& fail_on_text, std::int64_t now_ms);

} // namespace dedupctl::commands
