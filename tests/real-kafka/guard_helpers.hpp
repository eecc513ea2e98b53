#pragma once

// What the guard tests share: a projection (a PostgreSQL table or Redis keys, by the test's
// parameter) beside a topic of two partitions on the real broker, a test consumer that applies
// through its guard, and what they read back (the consumer's outcome lines, a report's example ids).
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/schema_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace dedupctl::testing {

// The lines of `path` that start with `prefix`, the prefix cut off ("applied o-1-v2").
inline std::set<std::string> lines_with(const std::string& path, const std::string& prefix) {
  std::set<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with(prefix)) {
      out.insert(line.substr(prefix.size()));
    }
  }
  return out;
}

// The event ids of the examples of `finding` in a JSON report.
inline std::set<std::string> example_ids(const nlohmann::json& report, const std::string& finding) {
  std::set<std::string> out;
  for (const auto& f : report.at("findings")) {
    if (f.at("id") == finding) {
      for (const auto& example : f.at("examples")) {
        out.insert(example.at("event_id").get<std::string>());
      }
    }
  }
  return out;
}

// The event ids a replay's --decisions file gives `decision` ("replayed").
inline std::set<std::string> decided(const std::string& path, const std::string& decision) {
  std::set<std::string> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto d = nlohmann::json::parse(line);
    if (d.at("decision") == decision) {
      out.insert(d.at("event_id").get<std::string>());
    }
  }
  return out;
}

// The fixture of a guard's reality check, parameterised by the projection's server: "postgres" or "redis".
class ProjectionTest : public ::testing::TestWithParam<std::string> {
protected:
  bool postgres() const { return GetParam() == "postgres"; }

  // The broker, the consumers' Python, the projection's server (with `table`, PostgreSQL's CREATE
  // TABLE), and a topic of two partitions named from `prefix`.
  void start(const std::string& table, const std::string& prefix) {
    KafkaBroker& broker = shared_kafka_broker();
    DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
    std::string why;
    m_python = registry_python(why);
    DEDUPCTL_REQUIRE_SERVER(!m_python.empty(), why);
    if (postgres()) {
      DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
      auto created = m_pg.psql(table);
      ASSERT_EQ(created.exit_code, 0) << created.err;
    } else {
      DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    }
    m_bootstrap = broker.bootstrap();
    static int made = 0;
    m_topic = fmt::format("{}-{}-{}-{}", prefix, GetParam(), ::testing::UnitTest::GetInstance()->random_seed(), ++made);
    create_topic(m_bootstrap, m_topic, 2, {});
  }

  // Ten minutes ago: the first phase's timestamps count on from there.
  static std::int64_t ten_minutes_ago() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
               .count() -
           600'000;
  }

  // Each (partition, payload) to the topic, a second apart from `ts` on.
  void produce(const std::vector<std::pair<std::int32_t, std::string>>& records, std::int64_t& ts) {
    TestProducer producer(m_bootstrap, 30'000);
    for (const auto& [partition, payload] : records) {
      OutgoingRecord record;
      record.topic = m_topic;
      record.partition = partition;
      record.payload = payload;
      record.timestamp_ms = ts += 1000;
      producer.send(record);
    }
    std::string error;
    ASSERT_EQ(producer.flush(error), 0) << error;
  }

  // tests/support/libraries/`script` as `group` over `topic` to its end, its outcomes appended to
  // `applied`; `extra` its own flags.
  void run_consumer(const std::string& script, const std::vector<std::string>& extra, const std::string& applied,
                    const std::string& topic, const std::string& group) {
    std::vector<std::string> argv{
        m_python,      std::string(DEDUPCTL_SOURCE_DIR) + "/tests/support/libraries/" + script,
        "--bootstrap", m_bootstrap,
        "--topic",     topic.empty() ? m_topic : topic,
        "--group",     group,
        "--applied",   applied};
    argv.insert(argv.end(), extra.begin(), extra.end());
    if (postgres()) {
      argv.insert(argv.end(), {"--pg", m_pg.conninfo()});
    } else {
      argv.insert(argv.end(), {"--redis-port", std::to_string(m_redis.port())});
    }
    auto result = run_command(argv, "", std::chrono::seconds(120));
    ASSERT_EQ(result.exit_code, 0) << fmt::format("{}", fmt::join(argv, " ")) << "\n" << result.err;
  }

  std::string m_python;
  RedisServer m_redis;
  PostgresServer m_pg;
  std::string m_bootstrap;
  std::string m_topic;
  TempDir m_dir;
};

} // namespace dedupctl::testing
