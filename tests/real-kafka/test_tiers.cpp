// A chain of tiers, checked against a consumer that layers them for real: the Go consumer's `tiers`
// mode (tests/support/window/tiers.go) asks the guide's in-process window, then Redis (go-redis),
// then a PostgreSQL inbox (pgx), in that order, and applies an event none of them holds. After a seek
// the window is empty; what the consumer applies again must be, event for event, what the audit of
// the same chain predicted for [seek, committed).
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

TEST(TiersSeek, WhatTheTieredConsumerAppliesAgainAfterASeekIsWhatTheAuditPredicted) {
  KafkaBroker& broker = shared_kafka_broker();
  DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  PostgresServer pg;
  DEDUPCTL_REQUIRE_SERVER(pg.available(), pg.why_unavailable());
  const char* consumer = std::getenv("DEDUPCTL_WINDOW_CONSUMER");
  DEDUPCTL_REQUIRE_SERVER(consumer && std::filesystem::exists(consumer),
                          "no Go window consumer: run tests/support/window/setup and set DEDUPCTL_WINDOW_CONSUMER "
                          "(scripts/test does)");
  std::string bootstrap = broker.bootstrap();
  std::string topic = fmt::format("tiers-{}", ::testing::UnitTest::GetInstance()->random_seed());
  create_topic(bootstrap, topic, 1, {});
  long long now = wall_ms();
  {
    TestProducer producer(bootstrap, 30'000);
    for (int i = 0; i < 24; ++i) {
      OutgoingRecord record;
      record.topic = topic;
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
  auto created = pg.psql("CREATE TABLE processed_events (event_id text NOT NULL, consumer_name text NOT NULL, "
                         "processed_at timestamptz NOT NULL, status text, PRIMARY KEY (consumer_name, event_id)); "
                         "INSERT INTO processed_events VALUES " +
                         rows + ";");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  for (int i = 4; i < 12; ++i) {
    ASSERT_EQ(redis.command(fmt::format("SET dedup:pay:t-{} 1 PX {}", i, k_hour)), "+OK\r\n");
  }
  ASSERT_EQ(redis.command("SET dedup:pay:t-18 1"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET dedup:pay:t-12 1 PX 300"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET dedup:pay:t-13 1 PX 300"), "+OK\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  commit_offsets(bootstrap, "billing", topic, {{0, 20}});

  // The operator's question before seeking billing to 0.
  auto audited = run_dedupctl({"audit",
                               "-b",
                               bootstrap,
                               "--topic",
                               topic,
                               "--group",
                               "billing",
                               "--seek",
                               "0",
                               "--consumer",
                               "billing",
                               "--retention",
                               "7d",
                               "--examples",
                               "1000",
                               "--fail-on",
                               "none",
                               "-o",
                               "json",
                               "--store",
                               "memory:",
                               "--layout",
                               "lru",
                               "--layout-option",
                               "capacity=100",
                               "--store",
                               redis.uri(),
                               "--key-template",
                               "dedup:pay:{event_id}",
                               "--ttl",
                               "1h",
                               "--store",
                               pg.conninfo(),
                               "--inbox-status-column",
                               "status",
                               "--inbox-retention",
                               "30d"});
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  auto report = Json::parse(audited.out);
  std::set<long long> predicted;
  for (const auto& finding : report.at("findings")) {
    if (finding.at("id") == "replay-risk") {
      for (const auto& example : finding.at("examples")) {
        predicted.insert(example.at("offset").get<long long>());
      }
    }
  }
  EXPECT_EQ(predicted, (std::set<long long>{12, 13, 14, 15, 19}));
  EXPECT_EQ(report.at("replay").at("would_reapply"), predicted.size());

  // The seek, for real: the consumer starts again at 0 with an empty window.
  auto run = run_command({consumer,       "tiers",
                          "--brokers",    bootstrap,
                          "--topic",      topic,
                          "--from",       "0",
                          "--count",      "20",
                          "--capacity",   "100",
                          "--redis",      fmt::format("127.0.0.1:{}", redis.port()),
                          "--key-prefix", "dedup:pay:",
                          "--ttl-ms",     std::to_string(k_hour),
                          "--postgres",   pg.conninfo(),
                          "--consumer",   "billing"},
                         "", std::chrono::seconds(120));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::set<long long> applied;
  std::set<std::string> skipped_by;
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
  EXPECT_EQ(applied, predicted);
  EXPECT_EQ(skipped_by, (std::set<std::string>{"redis", "postgres"})); // the window held nothing after the seek
}
