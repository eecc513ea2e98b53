// check over a chain of tiers ([[consumer.tier]]): each tier is checked as a placement of its own,
// and a gap of one tier that another keeps through the retention is info.
#include "core/check/check_rules.hpp"
#include "core/check/declarations.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace dedupctl::core;

namespace {

// memory, then Redis for an hour, then an inbox kept `inbox` (30 days: longer than the 7-day retention).
std::string chain(const std::string& inbox = "30d") {
  return R"([[consumer]]
name = "billing"
topic = "orders"
retention = "7d"
side_effects = "external"

[[consumer.tier]]
placement = "memory"

[[consumer.tier]]
placement = "redis"
store = "redis://cache:6379"
key_template = "dedup:billing:{event_id}"
ttl = "1h"

[[consumer.tier]]
placement = "postgres"
store = "postgres://db/app"
inbox_retention = ")" +
         inbox + "\"\n";
}

// (subject, id) → severity of every finding.
std::map<std::pair<std::string, std::string>, Severity> by_subject(const std::vector<Finding>& findings) {
  std::map<std::pair<std::string, std::string>, Severity> out;
  for (const auto& f : findings) {
    out[{f.subject, f.id}] = f.severity;
  }
  return out;
}

} // namespace

TEST(CheckTiers, EachTierIsADeclarationWithTheConsumersFields) {
  auto d = parse_declarations(chain(), "d.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors.front().message;
  ASSERT_EQ(d.consumers.size(), 3u);
  const auto& redis = d.consumers[1];
  EXPECT_EQ(redis.name, "billing (tier 2)");
  EXPECT_EQ(redis.chain, "billing");
  EXPECT_EQ(redis.tier, 2);
  EXPECT_EQ(redis.tiers, 3);
  EXPECT_EQ(redis.placement, Placement::Redis);
  EXPECT_EQ(redis.topic, "orders");
  EXPECT_EQ(redis.retention, Span::finite(7LL * 24 * 3'600'000));
  EXPECT_EQ(redis.ttl, Span::finite(3'600'000));
  EXPECT_EQ(redis.position_of("ttl").line, 14);
  EXPECT_EQ(d.consumers[2].inbox_table, "processed_events"); // the inbox's defaults, as for one placement
}

TEST(CheckTiers, AShortTtlAndAWindowAreInfoWhereTheInboxKeepsTheRecords) {
  auto d = parse_declarations(chain(), "d.toml");
  auto findings = by_subject(check_consumers(d.consumers, "d.toml"));
  EXPECT_EQ(findings.count({"billing (tier 2)", "ttl-shorter-than-retention"}), 0u);
  EXPECT_EQ(findings.count({"billing (tier 1)", "memory-placement-for-external-effects"}), 0u);
  EXPECT_EQ(findings.at({"billing (tier 2)", "tier-gap-covered"}), Severity::Info);
  EXPECT_EQ(findings.at({"billing (tier 1)", "tier-gap-covered"}), Severity::Info);
  EXPECT_EQ(findings.count({"billing (tier 3)", "tier-gap-covered"}), 0u);
}

TEST(CheckTiers, WithoutATierThatKeepsTheRecordsEveryGapIsAnError) {
  auto d = parse_declarations(chain("2d"), "d.toml");
  auto findings = by_subject(check_consumers(d.consumers, "d.toml"));
  EXPECT_EQ(findings.at({"billing (tier 2)", "ttl-shorter-than-retention"}), Severity::Error);
  EXPECT_EQ(findings.at({"billing (tier 3)", "ttl-shorter-than-retention"}), Severity::Error);
  EXPECT_EQ(findings.at({"billing (tier 1)", "memory-placement-for-external-effects"}), Severity::Error);
  EXPECT_EQ(findings.count({"billing (tier 2)", "tier-gap-covered"}), 0u);
}

TEST(CheckTiers, ATiersPlacementIsItsOwnAndTheConsumersFieldsAreNot) {
  auto d = parse_declarations(R"([[consumer]]
name = "billing"
topic = "orders"
ttl = "1h"

[[consumer.tier]]
placement = "redis"
topic = "other"

[[consumer.tier]]
store = "postgres://db/app"
)",
                              "d.toml");
  std::vector<std::string> messages;
  for (const auto& e : d.errors) {
    messages.push_back(std::to_string(e.at.line) + ": " + e.message);
  }
  EXPECT_EQ(messages, (std::vector<std::string>{
                          "4: 'ttl' with [[consumer.tier]]: each tier has its own placement; write it in the tier",
                          "6: a Redis tier has no 'key_template' (e.g. \"dedup:billing:{event_id}\")",
                          "8: 'topic' is the consumer's: write it in its [[consumer]], not in a [[consumer.tier]]",
                          "10: a [[consumer.tier]] has no 'placement' (redis, postgres, dynamodb, memory or design)"}));
}
