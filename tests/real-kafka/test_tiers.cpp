// A chain of tiers, checked against a consumer that layers them for real: the Go consumer's `tiers`
// mode (tests/support/window/tiers.go) asks the guide's in-process window, then Redis (go-redis),
// then a PostgreSQL inbox (pgx), in that order, and applies an event none of them holds. After a seek
// the window is empty; what the consumer applies again must be, event for event, what the audit of
// the same chain predicted for [seek, committed). And `replay --via` the same chain claims in its first
// durable tier what the audit predicted, so that the consumer run again over the range applies nothing.
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

constexpr long long k_hour = 3'600'000;

long long wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

class TiersSeek : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_broker.available(), m_broker.why_unavailable());
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    const char* consumer = std::getenv("DEDUPCTL_WINDOW_CONSUMER");
    DEDUPCTL_REQUIRE_SERVER(consumer && std::filesystem::exists(consumer),
                            "no Go window consumer: run tests/support/window/setup and set DEDUPCTL_WINDOW_CONSUMER "
                            "(scripts/test does)");
    m_consumer = consumer;
    m_bootstrap = m_broker.bootstrap();
    const auto* test = ::testing::UnitTest::GetInstance();
    m_topic = fmt::format("tiers-{}-{}", test->current_test_info()->name(), test->random_seed());
    create_topic(m_bootstrap, m_topic, 1, {});
    long long now = wall_ms();
    {
      TestProducer producer(m_bootstrap, 30'000);
      for (int i = 0; i < 24; ++i) {
        OutgoingRecord record;
        record.topic = m_topic;
        record.partition = 0;
        record.key = "k";
        record.payload = Json{{"n", i}}.dump();
        record.headers = {{"event_id", fmt::format("t-{}", i)}, {"type", "PaymentCharged"}};
        record.timestamp_ms = now - (24 - i) * 60'000LL;
        producer.send(record);
      }
      std::string error;
      ASSERT_EQ(producer.flush(error), 0) << error;
    }
    // What the consumer left before the seek: inbox rows for t-0..t-7 and t-16, t-17; Redis keys for
    // t-4..t-11 (1 h) and t-18 (no TTL), and for t-12, t-13 keys whose TTL lapses before the audit.
    std::string rows;
    for (int i : {0, 1, 2, 3, 4, 5, 6, 7, 16, 17}) {
      rows += fmt::format("{}('t-{}', 'billing', to_timestamp({} / 1000.0), 'done')", rows.empty() ? "" : ", ", i,
                          now - (24 - i) * 60'000LL);
    }
    auto created = m_pg.psql("CREATE TABLE processed_events (event_id text NOT NULL, consumer_name text NOT NULL, "
                             "processed_at timestamptz NOT NULL, status text, PRIMARY KEY (consumer_name, event_id)); "
                             "INSERT INTO processed_events VALUES " +
                             rows + ";");
    ASSERT_EQ(created.exit_code, 0) << created.err;
    for (int i = 4; i < 12; ++i) {
      ASSERT_EQ(m_redis.command(fmt::format("SET dedup:pay:t-{} 1 PX {}", i, k_hour)), "+OK\r\n");
    }
    ASSERT_EQ(m_redis.command("SET dedup:pay:t-18 1"), "+OK\r\n");
    ASSERT_EQ(m_redis.command("SET dedup:pay:t-12 1 PX 300"), "+OK\r\n");
    ASSERT_EQ(m_redis.command("SET dedup:pay:t-13 1 PX 300"), "+OK\r\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    commit_offsets(m_bootstrap, "billing", m_topic, {{0, 20}});
  }

  // The chain as `flag` (--store for an audit, --via for a replay) says it: the guide's window, Redis
  // with a 1 h TTL, the inbox.
  std::vector<std::string> chain(const std::string& flag) const {
    return {flag,
            "memory:",
            "--layout",
            "lru",
            "--layout-option",
            "capacity=100",
            flag,
            m_redis.uri(),
            "--key-template",
            "dedup:pay:{event_id}",
            "--ttl",
            "1h",
            flag,
            m_pg.conninfo(),
            "--inbox-status-column",
            "status"};
  }

  // The consumer started again at offset 0 with an empty window, over the 20 records the group had
  // processed: the offsets it applied, and the tiers that held the others.
  void run_consumer(std::set<long long>& applied, std::set<std::string>& skipped_by) const {
    auto run = run_command({m_consumer,     "tiers",
                            "--brokers",    m_bootstrap,
                            "--topic",      m_topic,
                            "--from",       "0",
                            "--count",      "20",
                            "--capacity",   "100",
                            "--redis",      fmt::format("127.0.0.1:{}", m_redis.port()),
                            "--key-prefix", "dedup:pay:",
                            "--ttl-ms",     std::to_string(k_hour),
                            "--postgres",   m_pg.conninfo(),
                            "--consumer",   "billing"},
                           "", std::chrono::seconds(120));
    ASSERT_EQ(run.exit_code, 0) << run.err;
    std::istringstream lines(run.out);
    int partition = 0, read = 0;
    long long offset = 0;
    std::string id, decision, tier;
    while (lines >> partition >> offset >> id >> decision >> tier) {
      ++read;
      if (decision == "applied") {
        applied.insert(offset);
      } else {
        skipped_by.insert(tier);
      }
    }
    EXPECT_EQ(read, 20);
  }

  KafkaBroker& m_broker = shared_kafka_broker();
  RedisServer m_redis;
  PostgresServer m_pg;
  std::string m_consumer, m_bootstrap, m_topic;
};

// The audit's replay-risk examples for a seek of billing to 0, by offset.
std::set<long long> predicted_offsets(const Json& report) {
  std::set<long long> predicted;
  for (const auto& finding : report.at("findings")) {
    if (finding.at("id") == "replay-risk") {
      for (const auto& example : finding.at("examples")) {
        predicted.insert(example.at("offset").get<long long>());
      }
    }
  }
  return predicted;
}

TEST_F(TiersSeek, WhatTheTieredConsumerAppliesAgainAfterASeekIsWhatTheAuditPredicted) {
  std::vector<std::string> args{
      "audit", "-b",         m_bootstrap, "--topic",           m_topic, "--group",    "billing", "--seek",
      "0",     "--consumer", "billing",   "--retention",       "7d",    "--examples", "1000",    "--fail-on",
      "none",  "-o",         "json",      "--inbox-retention", "30d"};
  auto tiers = chain("--store");
  args.insert(args.end(), tiers.begin(), tiers.end());
  auto audited = run_dedupctl(args);
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  auto report = Json::parse(audited.out);
  auto predicted = predicted_offsets(report);
  EXPECT_EQ(predicted, (std::set<long long>{12, 13, 14, 15, 19}));
  EXPECT_EQ(report.at("replay").at("would_reapply"), predicted.size());

  std::set<long long> applied;
  std::set<std::string> skipped_by;
  run_consumer(applied, skipped_by);
  EXPECT_EQ(applied, predicted);
  EXPECT_EQ(skipped_by, (std::set<std::string>{"redis", "postgres"})); // the window held nothing after the seek
}

// replay --via the chain over [0, committed): it claims in Redis (the first tier that survives a
// restart) exactly the events no tier holds, those the audit predicts, and publishes them. The plan
// says the same before. The consumer, run again over the range, then finds every event in a tier.
TEST_F(TiersSeek, ReplayThroughTheChainLeavesTheTieredConsumerNothingToApply) {
  auto replay = [&](bool execute, const std::string& decisions) {
    std::vector<std::string> args{"replay",  "-b",          m_bootstrap, "--topic", m_topic,     "--group",
                                  "billing", "--from",      "0",         "--to",    "committed", "--consumer",
                                  "billing", "--decisions", decisions,   "-o",      "json"};
    auto tiers = chain("--via");
    args.insert(args.end(), tiers.begin(), tiers.end());
    if (execute) {
      args.insert(args.end(), {"--execute", "--sink", "kafka:" + m_topic + "-replayed"});
    }
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 0) << result.err << result.out;
    std::set<long long> published;
    for (const auto& line : lines_of_file(decisions)) {
      Json decision = Json::parse(line);
      if (decision.at("decision") == (execute ? "replayed" : "would-replay")) {
        published.insert(decision.at("offset").get<long long>());
      }
    }
    return published;
  };
  create_topic(m_bootstrap, m_topic + "-replayed", 1, {});
  TempDir dir;
  const std::set<long long> predicted{12, 13, 14, 15, 19};
  EXPECT_EQ(replay(false, dir.file("plan.ndjson")), predicted) << "the plan";
  EXPECT_EQ(m_redis.command("EXISTS dedup:pay:t-14"), ":0\r\n") << "a plan claims nothing";
  EXPECT_EQ(replay(true, dir.file("run.ndjson")), predicted) << "the run";
  for (int i : {12, 13, 14, 15, 19}) {
    EXPECT_EQ(m_redis.command(fmt::format("EXISTS dedup:pay:t-{}", i)), ":1\r\n") << "t-" << i << " claimed in Redis";
  }
  EXPECT_EQ(m_pg.psql("SELECT count(*) FROM processed_events").out, "10\n") << "the inbox is only read";

  std::set<long long> applied;
  std::set<std::string> skipped_by;
  run_consumer(applied, skipped_by);
  EXPECT_TRUE(applied.empty()) << fmt::format("applied again: {}", fmt::join(applied, " "));
  EXPECT_EQ(skipped_by, (std::set<std::string>{"redis", "postgres"}));
}
