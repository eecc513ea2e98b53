// The model of a Kafka Streams window store (core/store/kstreams_window) against the real thing: a
// Kafka Streams application (tests/support/libraries/java/StreamsDedup.java, kafka-streams from Maven
// Central, a persistent RocksDB window store) deduplicates a topic on the real broker as the guides'
// processor does. Its decisions must be the model's from an empty store; its changelog must parse as
// the model reads it; and after the group is sought back to 0 and the application restarts with its
// state wiped (a restore from the changelog), what it forwards again must be, id for id, what the model
// predicts from the fold of that changelog: the events older than the store's retention.
#include "core/store/kstreams_window.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

using namespace dedupctl::testing;
namespace core = dedupctl::core;

namespace {

constexpr std::int64_t k_minute = 60'000;

struct InputEvent {
  std::string id;
  std::int64_t minute = 0; // after the base time
  std::int64_t ms = 0;     // and this many milliseconds
  std::int64_t at(std::int64_t base_ms) const { return base_ms + minute * 60'000 + ms; }
};

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// How the application runs: its lookup time (the record's timestamp, or the task's stream time as the
// tutorial's current code has it) and its processing guarantee.
struct Mode {
  std::string time;
  bool eos = false;
};

std::string mode_name(const ::testing::TestParamInfo<Mode>& info) {
  return info.param.time + (info.param.eos ? "_exactly_once" : "");
}

} // namespace

class KstreamsWindowStore : public ::testing::TestWithParam<Mode> {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_broker.available(), m_broker.why_unavailable());
    const char* libs = std::getenv("DEDUPCTL_JAVA_LIBS");
    DEDUPCTL_REQUIRE_SERVER(libs && std::filesystem::exists(std::string(libs) + "/classes/StreamsDedup.class"),
                            "no Kafka Streams application: run tests/support/libraries/java/fetch and set "
                            "DEDUPCTL_JAVA_LIBS (scripts/test does)");
    m_classpath = fmt::format("{}/libs/*:{}/classes", libs, libs);
    m_bootstrap = m_broker.bootstrap();
    m_topic =
        fmt::format("streams-in-{}-{}", mode_name({GetParam(), 0}), ::testing::UnitTest::GetInstance()->random_seed());
    m_app = m_topic + "-dedup";
    create_topic(m_bootstrap, m_topic, 1, {});
  }

  void produce(const std::vector<InputEvent>& events, std::int64_t base_ms) {
    TestProducer producer(m_bootstrap, 30'000);
    for (const auto& e : events) {
      OutgoingRecord record;
      record.topic = m_topic;
      record.partition = 0;
      record.key = "k";
      record.payload = fmt::format("{{\"event_id\":\"{}\"}}", e.id);
      record.headers = {{"event_id", e.id}};
      record.timestamp_ms = e.at(base_ms);
      producer.send(record);
    }
    std::string error;
    ASSERT_EQ(producer.flush(error), 0) << error;
  }

  // Runs the application over `count` records from its group's offset with a fresh state directory;
  // one line a record, "OFFSET ID forwarded|dropped".
  std::vector<std::string> run_application(std::size_t count) {
    TempDir state;
    std::vector<std::string> argv{find_program("java"),
                                  "-cp",
                                  m_classpath,
                                  "StreamsDedup",
                                  "--brokers",
                                  m_bootstrap,
                                  "--input",
                                  m_topic,
                                  "--app-id",
                                  m_app,
                                  "--state-dir",
                                  state.path(),
                                  "--window-ms",
                                  std::to_string(m_window_ms),
                                  "--retention-ms",
                                  std::to_string(m_retention_ms),
                                  "--count",
                                  std::to_string(count),
                                  "--time",
                                  GetParam().time};
    if (GetParam().eos) {
      argv.push_back("--eos");
    }
    auto run = run_command(argv, "", std::chrono::seconds(180));
    EXPECT_EQ(run.exit_code, 0) << run.err;
    std::vector<std::string> lines;
    std::istringstream in(run.out);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) {
        lines.push_back(line);
      }
    }
    return lines;
  }

  // The model's decisions for the events in order, over `store`. With stream time, the lookup time is
  // the largest timestamp the task has processed, this record's included, from -1 at the start of a
  // run: the offsets a seek commits carry no partition time for Streams to resume from.
  std::vector<std::string> model(const std::vector<InputEvent>& events, std::int64_t base_ms,
                                 core::WindowStorePartition& store) const {
    core::WindowDedupProcessor processor = core::processor_for_window(m_window_ms);
    std::vector<std::string> lines;
    std::int64_t stream_time = -1;
    for (std::size_t i = 0; i < events.size(); ++i) {
      std::string key = *core::store_key(events[i].id, core::KeySerde::String);
      stream_time = std::max(stream_time, events[i].at(base_ms));
      std::int64_t time = GetParam().time == "stream" ? stream_time : events[i].at(base_ms);
      bool dropped = core::process_event(processor, store, key, time);
      lines.push_back(fmt::format("{} {} {}", i, events[i].id, dropped ? "dropped" : "forwarded"));
    }
    return lines;
  }

  KafkaBroker& m_broker = shared_kafka_broker();
  std::string m_classpath, m_bootstrap, m_topic, m_app;
  std::int64_t m_window_ms = 10 * k_minute;    // fetch [t - 5 min, t + 5 min]
  std::int64_t m_retention_ms = 60 * k_minute; // the store keeps an hour behind its stream time
};

TEST_P(KstreamsWindowStore, TheApplicationDecidesAsTheModelAndARestoreForwardsWhatTheModelPredicts) {
  // Six hours ago: a burst, then, three hours and more later, a second one that moves the store's
  // stream time past the first burst's retention. Between them g and f sit either side of the bound a
  // restored store fetches from (its stream time, minute 207, less the hour, plus 1 ms). Last, h twice,
  // late: by its record time its lookups and puts fall below the store's bound (both forwarded), by
  // the stream time they are made at minute 207 (the second dropped).
  const std::vector<InputEvent> events{{"a", 0},   {"b", 1},      {"a", 3},   {"c", 4},   {"b", 20},  {"a", 30},
                                       {"g", 147}, {"f", 147, 1}, {"d", 200}, {"c", 201}, {"d", 203}, {"e", 205},
                                       {"e", 206}, {"a", 207},    {"h", 100}, {"h", 101}};
  const std::int64_t base = wall_ms() - 6 * 60 * k_minute;
  produce(events, base);

  core::WindowStorePartition empty(m_retention_ms);
  auto predicted_first = model(events, base, empty);
  auto first = run_application(events.size());
  EXPECT_EQ(first, predicted_first);
  ASSERT_FALSE(first.empty());
  // The late h's second delivery: looked up by its record time it finds nothing the store returns; by
  // the stream time it finds the first one's put, made at minute 207.
  EXPECT_EQ(first.back(), GetParam().time == "stream" ? "15 h dropped" : "15 h forwarded");

  // The changelog, read as dedupctl will read it: every key a window key of an id, seqnum 0, the value
  // the Long the processor put (its window start).
  std::string changelog = m_app + "-eventId-store-changelog";
  auto records = read_partition(m_bootstrap, changelog, 0);
  ASSERT_EQ(records.size(), events.size()) << "one put an event";
  core::WindowStorePartition restored(m_retention_ms);
  for (const auto& r : records) {
    ASSERT_TRUE(r.key) << "offset " << r.offset;
    auto key = core::parse_window_store_key(*r.key);
    ASSERT_TRUE(key) << "offset " << r.offset;
    EXPECT_EQ(key->seqnum, 0);
    ASSERT_TRUE(r.value);
    ASSERT_EQ(r.value->size(), 8u);
    if (GetParam().time == "record") {
      EXPECT_EQ(r.timestamp_ms, key->window_start) << "offset " << r.offset;
    } else {
      EXPECT_GE(key->window_start, r.timestamp_ms) << "offset " << r.offset; // put at the stream time
    }
    restored.restore(*key, !r.value);
  }
  EXPECT_EQ(restored.stream_time(), base + 207 * k_minute);

  // The seek: the group back to 0, the application restarted on a wiped state (a new pod).
  commit_offsets(m_bootstrap, m_app, m_topic, {{0, 0}});
  auto predicted_again = model(events, base, restored);
  auto again = run_application(events.size());
  EXPECT_EQ(again, predicted_again);
  // What that is: the first burst, older than the hour the store keeps, forwarded again (a's duplicate
  // at minute 3 included, which the first run dropped), and g, 1 ms below the bound; f, at the bound,
  // and the second burst dropped.
  std::vector<std::string> forwarded;
  for (const auto& line : predicted_again) {
    if (line.ends_with("forwarded")) {
      forwarded.push_back(line);
    }
  }
  if (GetParam().time == "record") {
    EXPECT_EQ(forwarded, (std::vector<std::string>{"0 a forwarded", "1 b forwarded", "2 a forwarded", "3 c forwarded",
                                                   "4 b forwarded", "5 a forwarded", "6 g forwarded", "14 h forwarded",
                                                   "15 h forwarded"}));
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, KstreamsWindowStore,
                         ::testing::Values(Mode{"record", false}, Mode{"stream", false}, Mode{"record", true}),
                         mode_name);
