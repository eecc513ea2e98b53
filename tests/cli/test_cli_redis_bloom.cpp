// --layout redis-bloom end to end: a Bloom filter kept in Redis (RedisBloom's BF.*, loaded into
// Debian's redis-server from tests/support/redisbloom), read live with BF.MEXISTS, on either broker.
// Absent is exact (a filter has no false negatives); an event the group has not consumed that the
// filter already holds, under an id no consumed event carries, will be dropped: bloom-false-positive.
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

using namespace dedupctl::testing;

namespace {

std::string module_path() {
  const char* module = std::getenv("DEDUPCTL_REDISBLOOM_MODULE");
  return module && std::filesystem::exists(module) ? module : "";
}

std::string id_at(int i) { return fmt::format("pay-{:04d}", i); }

// pay-0000 … pay-0017 at offsets 0-17 then pay-0002 again (a redelivery) and pay-0019: 20 events, group
// billing committed at 15.
std::string events(long long now) {
  std::string out;
  for (int i = 0; i < 20; ++i) {
    out += envelope(i, now - (30 - i) * k_minute, i == 18 ? id_at(2) : id_at(i), "PaymentCharged");
  }
  return out;
}

} // namespace

class RedisBloom : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(!module_path().empty(), "no RedisBloom module: run tests/support/redisbloom/fetch and set "
                                                    "DEDUPCTL_REDISBLOOM_MODULE (scripts/test does)");
    m_redis.emplace(std::vector<std::string>{"--loadmodule", module_path()});
    DEDUPCTL_REQUIRE_SERVER(m_redis->available(), m_redis->why_unavailable());
    m_cluster = fresh_topic(GetParam(), "pay", 1, events(wall_ms()), "billing", {{0, 15}});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
    // The consumer added every id it applied below the committed offset but pay-0003 (lost with a
    // replica, say); pay-0017, not consumed yet, is in the filter too: as a false positive looks.
    ASSERT_EQ(m_redis->command("BF.RESERVE seen 0.01 1000"), "+OK\r\n");
    for (int i = 0; i < 15; ++i) {
      if (i != 3) {
        ASSERT_EQ(m_redis->command("BF.ADD seen " + id_at(i)), ":1\r\n");
      }
    }
    ASSERT_EQ(m_redis->command("BF.ADD seen " + id_at(17)), ":1\r\n");
  }

  CommandResult audit(const std::string& collection, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"audit",       "-b",           m_cluster.bootstrap, "--topic",      m_cluster.topic,
                                  "--group",     "billing",      "--store",           m_redis->uri(), "--layout",
                                  "redis-bloom", "--collection", collection,          "--retention",  "7d",
                                  "--fail-on",   "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args);
  }

  std::optional<RedisServer> m_redis;
  TestTopic m_cluster;
};

INSTANTIATE_TEST_SUITE_P(Brokers, RedisBloom, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(RedisBloom, AbsentIsMissingAndAPendingEventTheFilterHoldsWillBeDropped) {
  auto result = audit("seen", {"-o", "json", "--examples", "100"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = parse(result);
  const auto& summary = doc.at("summary");
  EXPECT_EQ(summary.at("covered"), 16); // 14 consumed, pay-0017 and the redelivered pay-0002
  EXPECT_EQ(summary.at("missing"), 1);  // pay-0003: a filter has no false negatives
  EXPECT_EQ(summary.at("pending"), 3);  // offsets 15, 16, 19
  std::vector<long long> dropped;
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == "bloom-false-positive") {
      EXPECT_EQ(f.at("severity"), "error");
      EXPECT_EQ(f.at("count"), 1);
      for (const auto& e : f.at("examples")) {
        dropped.push_back(e.at("offset"));
        EXPECT_EQ(e.at("event_id"), id_at(17));
      }
    }
  }
  // pay-0002 at 18 is a redelivery of a consumed id, which the filter rightly catches.
  EXPECT_EQ(dropped, std::vector<long long>{17});
  EXPECT_EQ(doc.at("placement").at("layout"), "redis-bloom");
  EXPECT_EQ(doc.at("placement").at("collection"), "seen");
}

TEST_P(RedisBloom, AKeyOfAnotherTypeIsAUsageError) {
  ASSERT_EQ(m_redis->command("SET plain x"), "+OK\r\n");
  auto result = audit("plain");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--collection plain: the key holds a string, not a Bloom filter"), std::string::npos)
      << result.err;
  EXPECT_EQ(result.out, "");
}

TEST_P(RedisBloom, AFilterThatIsGoneLeavesEveryConsumedEventMissing) {
  auto result = audit("flushed", {"-o", "json"}); // no such key: as after a failover to an empty replica
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(parse(result).at("summary").at("missing"), 15);
}

TEST_P(RedisBloom, AServerLostIsExit3AndNoVerdict) {
  m_redis->kill();
  auto result = audit("seen", {"-o", "json"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), false);
  for (const auto& f : doc.at("findings")) {
    EXPECT_NE(f.at("id"), "bloom-false-positive");
  }
}

// discover finds the filter among the keys (TYPE answers MBbloom--) and proposes reading it.
TEST_P(RedisBloom, DiscoverProposesTheFilter) {
  auto result = run_dedupctl(
      {"discover", "-b", m_cluster.bootstrap, "--topic", m_cluster.topic, "--store", m_redis->uri(), "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto candidates = parse(result).at("candidates");
  ASSERT_FALSE(candidates.empty()) << result.out;
  EXPECT_EQ(candidates[0].at("layout"), "redis-bloom") << result.out;
  EXPECT_EQ(candidates[0].at("collection"), "seen") << result.out;
}

TEST(RedisBloomUsage, ASnapshotOfAFilterIsRefusedSaying) {
  auto result = run_dedupctl({"snapshot", "--store", "redis://127.0.0.1:1", "--layout", "redis-bloom", "--collection",
                              "seen", "--output", "/dev/null"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("BF.SCANDUMP export is not built yet"), std::string::npos) << result.err;
}
