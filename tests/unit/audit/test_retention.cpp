#include "core/audit/retention.hpp"
#include "core/audit/ttl.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;

namespace {

constexpr std::int64_t k_hour = 3'600'000;

} // namespace

TEST(Retention, FromTopicConfigsAsTheBrokerDescribesThem) {
  // The admin path's parsing, tested without a broker (the mock cannot answer DescribeConfigs).
  EXPECT_EQ(retention_from_configs("604800000", "delete").finite_ms(), 604'800'000);
  EXPECT_TRUE(retention_from_configs("-1", "delete").is_infinite());
  EXPECT_TRUE(retention_from_configs("604800000", "compact").is_infinite());
  EXPECT_EQ(retention_from_configs("86400000", "compact,delete").finite_ms(), 86'400'000);
  EXPECT_FALSE(retention_from_configs(std::nullopt, "delete").known());
  EXPECT_FALSE(retention_from_configs("soon", std::nullopt).known());
  // A segment is deleted only once its newest event is older than retention.ms: events stay
  // replayable for up to retention.ms + segment.ms.
  EXPECT_EQ(retention_from_configs("604800000", "delete", "86400000").finite_ms(), 8 * 24 * k_hour);
  EXPECT_EQ(retention_from_configs("604800000", "delete", "garbage").finite_ms(), 7 * 24 * k_hour);
  EXPECT_TRUE(parse_retention("infinite").is_infinite());
  EXPECT_EQ(parse_retention("7d").finite_ms(), 7 * 24 * k_hour);
  EXPECT_TRUE(parse_ttl("none").is_infinite());
  EXPECT_THROW(parse_ttl("forever"), dedupctl::UsageError);
  // Zero is no TTL at all (Redis refuses PX 0): none is how to say "never expires".
  EXPECT_THROW(parse_ttl("0s"), dedupctl::UsageError);
  EXPECT_THROW(parse_ttl("PT0S", "--inbox-retention"), dedupctl::UsageError);
  EXPECT_EQ(parse_ttl("1ms").finite_ms(), 1);
  // Saturated, not wrapped: a segment on a retention near the limit.
  EXPECT_EQ(retention_from_configs("9223372036854775000", "delete", "86400000").finite_ms(), INT64_MAX);
}
