#pragma once

#include "core/audit/retention.hpp"
#include "core/check/declarations.hpp"
#include "core/finding.hpp"

#include <map>
#include <optional>
#include <string>
#include <vector>

// The rules of `dedupctl check`: from the declarations alone, and from what --live learned.
namespace dedupctl::core {

// What the live systems said about one consumer's placement.
struct LiveFacts {
  std::optional<Span> retention; // the topic's, from DescribeConfigs
  bool compacted = false;        // its cleanup.policy has compact
  std::optional<std::string> maxmemory_policy;
  std::optional<bool> persistence; // RDB save points or AOF on
  std::string policy_node;         // the cluster's master each of the two above is of, when the
  std::string persistence_node;    // masters differ (empty for one server)
  std::optional<std::int64_t> sampled_keys;
  std::optional<std::int64_t> sampled_without_expiry;
  std::optional<std::int64_t> sampled_max_pttl_ms;
  std::optional<bool> inbox_unique; // a primary key or unique index over the id (or consumer, id)
  // A DynamoDB table's TTL (DescribeTimeToLive) and size (DescribeTable).
  std::optional<std::string> dynamodb_ttl_status; // ENABLED, DISABLED, ENABLING, DISABLING
  std::string dynamodb_ttl_attribute;
  std::optional<std::int64_t> dynamodb_size_bytes;
  std::int64_t dynamodb_items = 0;
};

// One Redis server's eviction policy and persistence, as CONFIG GET answered (nullopt where a
// managed Redis refuses CONFIG).
struct RedisNodeFacts {
  std::string node;
  std::optional<std::string> maxmemory_policy;
  std::optional<bool> persistence;
};
// A finding about one consumer, pointing at the line of `field` (or of its [[consumer]] header).
Finding consumer_finding(const ConsumerDeclaration& consumer, const std::string& file, const std::string& field,
                         std::string id, Severity severity, std::string title, std::string advice);

// Findings of every rule, each pointing at the line of the declaration it is about. `live`
// (keyed by consumer name) may override the declared retention and adds the live rules.
std::vector<Finding> check_consumers(const std::vector<ConsumerDeclaration>& consumers, const std::string& file,
                                     const std::map<std::string, LiveFacts>& live = {});

// What `check --live` asks the real systems. Abstract so that every path, Kafka's DescribeConfigs
// above all (the mock cluster cannot answer it), is unit-tested with FakeInspector
// (tests/unit/fakes.hpp); commands/check.cpp asks the connectors. Each call may throw
// UnreachableError; that check then becomes a `check-unavailable` finding.
class LiveInspector {
public:
  struct Redis {
    std::optional<std::string> maxmemory_policy;
    std::optional<bool> persistence;
    std::int64_t sampled_keys = 0;
    std::int64_t sampled_without_expiry = 0;
    std::optional<std::int64_t> max_pttl_ms; // the longest remaining TTL among the sampled keys
    std::string policy_node;                 // the cluster's master the policy and the persistence are of, when
    std::string persistence_node;            // its masters differ (worst_redis_node); empty for one server
  };
  struct Inbox {
    bool table_exists = false;
    std::vector<std::string> columns;
    bool unique_over_id = false;
  };
  virtual ~LiveInspector() = default;
  // retention.ms, cleanup.policy and segment.ms; nullopt when the broker could not answer.
  virtual std::optional<TopicRetention> topic_retention(const std::string& topic) = 0;
  struct Dynamo {
    std::string ttl_status;
    std::string ttl_attribute;
    std::int64_t size_bytes = 0;
    std::int64_t items = 0;
  };
  virtual Redis redis(const ConsumerDeclaration& consumer) = 0;
  // A DynamoDB table's TTL and size; throws UnreachableError when it cannot be asked.
  virtual Dynamo dynamodb(const ConsumerDeclaration& consumer) = 0;
  virtual Inbox inbox(const ConsumerDeclaration& consumer) = 0;
};

// A cluster is as safe as its worst master: the policy that evicts dedup keys soonest (allkeys-
// over volatile- over the rest) and persistence off if any master has it off, each with the master
// it is of when the masters differ.
struct WorstRedisNode {
  std::optional<std::string> maxmemory_policy;
  std::string policy_node;
  std::optional<bool> persistence;
  std::string persistence_node;
};
WorstRedisNode worst_redis_node(const std::vector<RedisNodeFacts>& nodes);

} // namespace dedupctl::core
