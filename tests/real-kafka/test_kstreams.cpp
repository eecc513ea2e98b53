// The model of a Kafka Streams window store (core/store/kstreams_window) against the real thing: a
// Kafka Streams application (tests/support/libraries/java/StreamsDedup.java, kafka-streams from Maven
// Central, a persistent RocksDB window store) deduplicates a topic on the real broker as the guides'
// processor does. Its decisions must be the model's from an empty store; its changelog must parse as
// the model reads it; and after the group is sought back to 0 and the application restarts with its
// state wiped (a restore from the changelog), what it forwards again must be, id for id, what the model
// predicts from the fold of that changelog: the events older than the store's retention. Then the
// reality check of the audit itself: `dedupctl audit --store kstreams://APP/STORE --seek 0` names, id for
// id, what the restarted application forwards again, on a wiped state (the restored reading) and on its
// kept local state (--layout-option state=kept), each on an application of its own over the same input.
#include "core/store/kstreams_window.hpp"
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
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
    static int topics = 0; // the suites share modes: each test a topic of its own
    m_topic = fmt::format("streams-in-{}-{}-{}", mode_name({GetParam(), 0}),
                          ::testing::UnitTest::GetInstance()->random_seed(), ++topics);
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

  // Runs the application `app` over `count` records from its group's offset with the state directory
  // `state_dir` (a fresh one when empty); one line a record, "OFFSET ID forwarded|dropped".
  std::vector<std::string> run_application(std::size_t count, const std::string& app = {},
                                           const std::string& state_dir = {}) {
    TempDir fresh;
    std::string state = state_dir.empty() ? fresh.path() : state_dir;
    std::vector<std::string> argv{find_program("java"),
                                  "-cp",
                                  m_classpath,
                                  "StreamsDedup",
                                  "--brokers",
                                  m_bootstrap,
                                  "--input",
                                  m_topic,
                                  "--app-id",
                                  app.empty() ? m_app : app,
                                  "--state-dir",
                                  state,
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

  // What `dedupctl audit` says a seek of `app`'s group to 0 re-applies, as the application's lines:
  // "OFFSET ID forwarded", in offset order.
  std::vector<std::string> audit_forwarded(const std::string& app, bool kept) const {
    std::vector<std::string> args{"audit",
                                  "-b",
                                  m_bootstrap,
                                  "--topic",
                                  m_topic,
                                  "--group",
                                  app,
                                  "--seek",
                                  "0",
                                  "--store",
                                  fmt::format("kstreams://{}/eventId-store", app),
                                  "--layout-option",
                                  fmt::format("lookup-window={}ms", m_window_ms),
                                  "--layout-option",
                                  "time=" + GetParam().time,
                                  "--retention",
                                  "7d",
                                  "--fail-on",
                                  "none",
                                  "--examples",
                                  "100",
                                  "-o",
                                  "json"};
    if (kept) {
      args.insert(args.end(), {"--layout-option", "state=kept"});
    }
    auto result = run_dedupctl(args); // no --ttl: the store's hour is read from the changelog's retention.ms
    EXPECT_EQ(result.exit_code, 0) << result.err;
    std::vector<std::string> lines;
    auto doc = nlohmann::json::parse(result.out, nullptr, false);
    if (doc.is_discarded()) {
      ADD_FAILURE() << result.out << result.err;
      return lines;
    }
    EXPECT_EQ(doc.at("placement").at("ttl_ms"), m_retention_ms) << doc.at("settings").dump();
    for (const auto& f : doc.at("findings")) {
      if (f.at("id") == "replay-risk") {
        for (const auto& e : f.at("examples")) {
          lines.push_back(
              fmt::format("{} {} forwarded", e.at("offset").get<std::int64_t>(), e.at("event_id").get<std::string>()));
        }
      }
    }
    return lines;
  }

  static std::vector<std::string> forwarded_of(const std::vector<std::string>& lines) {
    std::vector<std::string> out;
    for (const auto& line : lines) {
      if (line.ends_with("forwarded")) {
        out.push_back(line);
      }
    }
    return out;
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

  // The audit of that seek, before it is made: what a restored application forwards again.
  auto audited = audit_forwarded(m_app, false);

  // The seek: the group back to 0, the application restarted on a wiped state (a new pod).
  commit_offsets(m_bootstrap, m_app, m_topic, {{0, 0}});
  auto predicted_again = model(events, base, restored);
  auto again = run_application(events.size());
  EXPECT_EQ(again, predicted_again);
  EXPECT_EQ(audited, forwarded_of(again)) << "the audit's re-apply list is what the application forwarded again";
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

// The same input through a second application that keeps its local state: the audit's kept reading
// (--layout-option state=kept) names what it forwards again after the seek, id for id, and differs from
// the restored reading where a record below the restored bound still lies in a live segment.
class KstreamsKeptState : public KstreamsWindowStore {};

TEST_P(KstreamsKeptState, TheAuditsKeptReadingIsWhatTheApplicationForwardsAgain) {
  // The second burst's stream time (minute 207) puts the live segments' start at (207 - 60) / 30 = 4
  // half-hours from the epoch's grid: g and f, one and two minutes after the restored bound, or just
  // below it, lie in a live segment or not by where that grid falls; what counts is that audit and
  // application agree.
  const std::vector<InputEvent> events{{"a", 0},   {"b", 1},   {"a", 3},   {"g", 120}, {"f", 140}, {"k", 146},
                                       {"d", 200}, {"c", 201}, {"d", 203}, {"e", 205}, {"a", 207}};
  const std::int64_t base = wall_ms() - 6 * 60 * k_minute;
  produce(events, base);
  TempDir state;
  std::string app = m_app + "-kept";
  auto first = run_application(events.size(), app, state.path());
  ASSERT_EQ(first.size(), events.size());
  auto restored = audit_forwarded(app, false);
  auto kept = audit_forwarded(app, true);
  commit_offsets(m_bootstrap, app, m_topic, {{0, 0}});
  auto again = run_application(events.size(), app, state.path());
  EXPECT_EQ(kept, forwarded_of(again)) << "restored would have said " << ::testing::PrintToString(restored);
  EXPECT_LE(kept.size(), restored.size()) << "a kept store holds at least what a restored one returns";
  // Whatever the grid: on kept state the replay's own put of a at minute 0 is returned (its stream time
  // starts at -1), so a at minute 3 is dropped; a restored store drops that put below its bound.
  EXPECT_NE(std::find(restored.begin(), restored.end(), "2 a forwarded"), restored.end());
  EXPECT_EQ(std::find(kept.begin(), kept.end(), "2 a forwarded"), kept.end());
}

INSTANTIATE_TEST_SUITE_P(Modes, KstreamsKeptState, ::testing::Values(Mode{"record", false}, Mode{"stream", false}),
                         mode_name);

INSTANTIATE_TEST_SUITE_P(Modes, KstreamsWindowStore,
                         ::testing::Values(Mode{"record", false}, Mode{"stream", false}, Mode{"record", true}),
                         mode_name);

// The log cleaner keeps the last record of each key (an id at a window start): after it compacted the
// changelog, the audit's verdicts are the ones it gave over the whole log.
TEST(KstreamsChangelogCompaction, AfterTheLogCleanerRanTheVerdictsAreTheSame) {
  KafkaBroker& broker = shared_kafka_broker();
  DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
  const std::string bootstrap = broker.bootstrap();
  const std::string input = fmt::format("compacted-in-{}", ::testing::UnitTest::GetInstance()->random_seed());
  const std::string app = input + "-app";
  const std::string changelog = app + "-store-changelog";
  create_topic(bootstrap, input, 1, {});
  // Segments of a second, cleanable at once, tombstones kept: the cleaner compacts the first segment as
  // soon as a later record rolls it.
  create_topic(bootstrap, changelog, 1,
               {{"cleanup.policy", "compact,delete"},
                {"retention.ms", std::to_string(26 * 60 * k_minute)},
                {"segment.ms", "1000"},
                {"min.cleanable.dirty.ratio", "0.01"},
                {"min.compaction.lag.ms", "0"}});
  const std::int64_t base = wall_ms() - 5 * 60 * k_minute;

  {
    TestProducer producer(bootstrap, 30'000);
    for (int i = 0; i < 200; ++i) {
      std::string id = fmt::format("id-{}", i % 150); // 50 ids come twice, an hour and more apart
      std::int64_t at = base + i * k_minute;
      producer.send(OutgoingRecord{input, 0, "k", fmt::format("{{\"n\":{}}}", i), {{"event_id", id}}, at});
      for (int copy = 0; copy < 3; ++copy) { // the same put logged again: only the last survives compaction
        // One CreateTime for them all: segment.ms compares CreateTimes, so the segment rolls at the filler.
        producer.send(OutgoingRecord{changelog, 0, window_store_key(id, at), std::string(8, '\1'), {}, base});
      }
    }
    producer.send(OutgoingRecord{changelog, 0, window_store_key("id-7", base + 7 * k_minute), std::nullopt, {}, base});
    std::string error;
    ASSERT_EQ(producer.flush(error), 0) << error;
  }
  commit_offsets(bootstrap, app, input, {{0, 200}});
  auto audit = [&] {
    auto result = run_dedupctl({"audit",
                                "-b",
                                bootstrap,
                                "--topic",
                                input,
                                "--group",
                                app,
                                "--seek",
                                "0",
                                "--store",
                                fmt::format("kstreams://{}/store", app),
                                "--layout-option",
                                "lookup-window=10m",
                                "--ttl",
                                "1h",
                                "--retention",
                                "7d",
                                "--fail-on",
                                "none",
                                "--examples",
                                "300",
                                "-o",
                                "json"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    auto doc = nlohmann::json::parse(result.out, nullptr, false);
    std::vector<std::string> out;
    if (doc.is_discarded()) {
      ADD_FAILURE() << result.out << result.err;
      return out;
    }
    out.push_back(doc.at("summary").dump());
    for (const auto& f : doc.at("findings")) {
      if (f.at("id") == "replay-risk") {
        for (const auto& e : f.at("examples")) {
          out.push_back(fmt::format("{} {}", e.at("offset").get<std::int64_t>(), e.at("event_id").get<std::string>()));
        }
      }
    }
    return out;
  };
  auto whole = audit();
  ASSERT_GT(whole.size(), 1u) << "some events re-applied";
  // A record five hours of CreateTime later rolls the segment; then the cleaner has something to compact.
  // Its key is an id no input carries, at a start below the stream time: no verdict changes with it.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  {
    TestProducer producer(bootstrap, 30'000);
    producer.send(OutgoingRecord{changelog, 0, window_store_key("filler", base), std::string(8, '\1'), {}, wall_ms()});
    std::string error;
    ASSERT_EQ(producer.flush(error), 0) << error;
  }
  std::size_t records = 601;
  for (int tries = 0; tries < 120 && records > 300; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    records = read_partition(bootstrap, changelog, 0).size();
  }
  ASSERT_LE(records, 300u) << "the log cleaner did not compact the changelog in a minute";
  EXPECT_EQ(audit(), whole);
}
