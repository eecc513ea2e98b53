// The consumer's in-process window, checked against the window itself: the guide's Go WindowDedup
// (an LRU of container/list, with bits-and-blooms/bloom v3 behind it, tests/support/window) and a
// Java consumer with Guava's BloomFilter (tests/support/libraries/java) consume a topic of the real
// broker that has duplicates planted near and far and more ids than their filters were sized for.
// Each prints what it applied and skipped; the audit of the same topic with --store memory: and the
// same window must name, id for id, the events the consumer applied again (window-miss) and the
// events it dropped before it ever applied their ids (bloom-false-positive).
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
#include <vector>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

// 300 ids, a repeat 3 back every 7th, 60 back every 13th, 200 back every 29th, whose far repeats no
// window of 30 holds, for a filter sized for 100; and ids repeated 20 and 40 after their first: an LRU
// of 30 that the first repeat refreshed still holds them, the insertion-ordered set of bloom-exact
// does not.
std::vector<std::string> planted_ids() {
  std::vector<std::string> ids;
  for (int i = 0; i < 300; ++i) {
    ids.push_back(fmt::format("w-{}", i));
    if (i % 7 == 0 && i >= 3) {
      ids.push_back(fmt::format("w-{}", i - 3));
    }
    if (i % 13 == 0 && i >= 60) {
      ids.push_back(fmt::format("w-{}", i - 60));
    }
    if (i % 29 == 0 && i >= 200) {
      ids.push_back(fmt::format("w-{}", i - 200));
    }
    if (i % 23 == 0 && i >= 50) {
      ids.push_back(fmt::format("w-{}", i - 20));
    }
    if (i % 23 == 20 && i >= 70) {
      ids.push_back(fmt::format("w-{}", i - 40)); // the id repeated at i - 20
    }
  }
  return ids;
}

// What the consumer did: (partition, offset) of the events it applied again and of those it dropped.
struct Decisions {
  std::set<std::pair<int, long long>> misses;
  std::set<std::pair<int, long long>> dropped;
  int lines = 0;
};

Decisions read_decisions(const std::string& out) {
  Decisions d;
  std::set<std::string> applied;
  std::istringstream in(out);
  int partition = 0;
  long long offset = 0;
  std::string id, decision;
  while (in >> partition >> offset >> id >> decision) {
    ++d.lines;
    bool skipped = decision == "skipped";
    if (!skipped && applied.count(id)) {
      d.misses.insert({partition, offset});
    }
    if (skipped && !applied.count(id)) {
      d.dropped.insert({partition, offset});
    }
    if (!skipped) {
      applied.insert(id);
    }
  }
  return d;
}

std::set<std::pair<int, long long>> examples_of(const Json& report, const std::string& finding) {
  std::set<std::pair<int, long long>> out;
  for (const auto& f : report.at("findings")) {
    if (f.at("id") == finding) {
      for (const auto& e : f.at("examples")) {
        out.insert({e.at("partition").get<int>(), e.at("offset").get<long long>()});
      }
    }
  }
  return out;
}

class Windows : public ::testing::Test {
protected:
  void SetUp() override {
    KafkaBroker& broker = shared_kafka_broker();
    DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
    m_bootstrap = broker.bootstrap();
  }

  // A topic of `partitions` holding the planted ids, dealt out round-robin.
  std::string seed(int partitions) {
    static int seeded = 0;
    std::string topic = fmt::format("window-{}-{}", ::testing::UnitTest::GetInstance()->random_seed(), ++seeded);
    create_topic(m_bootstrap, topic, partitions, {});
    TestProducer producer(m_bootstrap, 30'000);
    auto ids = planted_ids();
    auto now =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      OutgoingRecord record;
      record.topic = topic;
      record.partition = static_cast<std::int32_t>(i % static_cast<std::size_t>(partitions));
      record.key = "k";
      record.payload = Json{{"event_id", ids[i]}, {"n", i}}.dump();
      record.headers = {{"event_id", ids[i]}, {"type", "PaymentCharged"}};
      record.timestamp_ms = now - static_cast<long long>(ids.size() - i) * 1000;
      producer.send(record);
    }
    std::string error;
    EXPECT_EQ(producer.flush(error), 0) << error;
    m_events = static_cast<int>(ids.size());
    return topic;
  }

  Json audit(const std::string& topic, const std::vector<std::string>& window) {
    std::vector<std::string> args{"audit",   "-b",        m_bootstrap,   "--topic", topic,
                                  "--store", "memory:",   "--retention", "7d",      "--examples",
                                  "1000",    "--fail-on", "none",        "-o",      "json"};
    args.insert(args.end(), window.begin(), window.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return Json::parse(result.out);
  }

  std::string m_bootstrap;
  int m_events = 0;
};

// The Go consumer: `layout` over the window's flags, printed decisions.
Decisions go_consumer(const std::string& bootstrap, const std::string& topic, int count, const std::string& layout,
                      const std::vector<std::string>& sizes) {
  const char* binary = std::getenv("DEDUPCTL_WINDOW_CONSUMER");
  if (!binary || !std::filesystem::exists(binary)) {
    ADD_FAILURE() << "no Go window consumer: run tests/support/window/setup and set DEDUPCTL_WINDOW_CONSUMER "
                     "(scripts/test does)";
    return {};
  }
  std::vector<std::string> argv{binary, "consume", "--brokers",           bootstrap,  "--topic",
                                topic,  "--count", std::to_string(count), "--layout", layout};
  argv.insert(argv.end(), sizes.begin(), sizes.end());
  auto result = run_command(argv, "", std::chrono::seconds(120));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return read_decisions(result.out);
}

// --layout-option NAME=VALUE for each of the consumer's `--name value` flags.
std::vector<std::string> layout_options(const std::string& layout, const std::vector<std::string>& sizes) {
  std::vector<std::string> out{"--layout", layout};
  for (std::size_t i = 0; i + 1 < sizes.size(); i += 2) {
    out.insert(out.end(), {"--layout-option", sizes[i].substr(2) + "=" + sizes[i + 1]});
  }
  return out;
}

void expect_id_for_id(const Json& report, const Decisions& consumer, int events) {
  EXPECT_EQ(consumer.lines, events);
  EXPECT_EQ(examples_of(report, "window-miss"), consumer.misses);
  EXPECT_EQ(examples_of(report, "bloom-false-positive"), consumer.dropped);
  const Json& window = report.at("summary").at("window");
  EXPECT_EQ(window.at("exact"), true);
  EXPECT_EQ(window.at("window_misses"), consumer.misses.size());
  EXPECT_EQ(window.at("false_positives"), consumer.dropped.size());
}

} // namespace

TEST_F(Windows, AnLruMissesExactlyWhatTheGoConsumerAppliedAgain) {
  std::string topic = seed(1);
  std::vector<std::string> sizes{"--capacity", "30"};
  Decisions consumer = go_consumer(m_bootstrap, topic, m_events, "lru", sizes);
  EXPECT_GT(consumer.misses.size(), 5u); // the far repeats
  expect_id_for_id(audit(topic, layout_options("lru", sizes)), consumer, m_events);
}

TEST_F(Windows, AnLruBloomDropsExactlyWhatTheGoConsumerDropped) {
  std::string topic = seed(1);
  std::vector<std::string> sizes{"--capacity", "30", "--bloom-items", "100", "--bloom-fp", "0.05"};
  Decisions consumer = go_consumer(m_bootstrap, topic, m_events, "lru-bloom", sizes);
  EXPECT_GT(consumer.dropped.size(), 5u); // 300 ids in a filter for 100
  Json report = audit(topic, layout_options("lru-bloom", sizes));
  expect_id_for_id(report, consumer, m_events);
  EXPECT_EQ(report.at("summary").at("window").at("bloom").at("bits"), 624);
}

TEST_F(Windows, ABloomExactMissesExactlyWhatTheGoConsumerAppliedAgain) {
  std::string topic = seed(1);
  std::vector<std::string> sizes{"--capacity", "30", "--bloom-items", "100", "--bloom-fp", "0.05"};
  Decisions consumer = go_consumer(m_bootstrap, topic, m_events, "bloom-exact", sizes);
  EXPECT_TRUE(consumer.dropped.empty()); // a "maybe" is decided exactly
  expect_id_for_id(audit(topic, layout_options("bloom-exact", sizes)), consumer, m_events);
  // Its set is not refreshed by a repeat: it misses the ids repeated 20 and 40 after, an LRU does not.
  Json lru = audit(topic, layout_options("lru", {"--capacity", "30"}));
  EXPECT_LT(lru.at("summary").at("window").at("window_misses").get<std::size_t>(), consumer.misses.size());
}

TEST_F(Windows, AGuavaLruBloomDropsExactlyWhatTheJavaConsumerDropped) {
  const char* libs = std::getenv("DEDUPCTL_JAVA_LIBS");
  DEDUPCTL_REQUIRE_SERVER(libs && std::filesystem::exists(std::string(libs) + "/classes/GuavaWindowConsumer.class"),
                          "no Guava window consumer: run tests/support/libraries/java/fetch and set "
                          "DEDUPCTL_JAVA_LIBS (scripts/test does)");
  std::string topic = seed(1);
  std::vector<std::string> argv{find_program("java"),
                                "-cp",
                                fmt::format("{0}/classes:{0}/libs/*", libs),
                                "GuavaWindowConsumer",
                                "consume",
                                "--bootstrap",
                                m_bootstrap,
                                "--topic",
                                topic,
                                "--count",
                                std::to_string(m_events),
                                "--capacity",
                                "30",
                                "--bloom-items",
                                "100",
                                "--bloom-fp",
                                "0.05"};
  auto result = run_command(argv, "", std::chrono::seconds(120));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Decisions consumer = read_decisions(result.out);
  EXPECT_GT(consumer.dropped.size(), 5u);
  auto window = layout_options("lru-bloom", {"--capacity", "30", "--bloom-items", "100", "--bloom-fp", "0.05"});
  window.insert(window.end(), {"--layout-option", "bloom-impl=guava"});
  expect_id_for_id(audit(topic, window), consumer, m_events);
}

// One window for a consumer's two partitions: how the consumer interleaved them is not in the log, so
// the audit gives bounds, and what the consumer really applied again lies within them.
TEST_F(Windows, AConsumersWindowOverTwoPartitionsIsBoundedAndTheConsumerLiesWithin) {
  std::string topic = seed(2);
  std::vector<std::string> sizes{"--capacity", "30"};
  Decisions consumer = go_consumer(m_bootstrap, topic, m_events, "lru", sizes);
  auto window = layout_options("lru", sizes);
  window.insert(window.end(), {"--layout-option", "scope=consumer"});
  Json report = audit(topic, window);
  const Json& summary = report.at("summary").at("window");
  EXPECT_EQ(summary.at("exact"), false);
  auto low = summary.at("window_misses").at("low").get<std::size_t>();
  auto high = summary.at("window_misses").at("high").get<std::size_t>();
  EXPECT_LE(low, consumer.misses.size());
  EXPECT_GE(high, consumer.misses.size());
  EXPECT_LT(low, high);
}
