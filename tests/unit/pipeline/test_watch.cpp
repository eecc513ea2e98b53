// watch's loop (commands/pipeline/watch) over fakes of the systems it watches: backoff, up and down
// notes, the retention asked again, a failover, one resolution for every seek, the counters.
#include "commands/pipeline/watch.hpp"
#include "tests/unit/fakes.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace dedupctl::commands {
namespace {

using testing::FakeEventSource;
using testing::OwnedEvent;
using testing::with_header_id;

constexpr std::int64_t k_interval_ms = 1000;
constexpr std::int64_t k_hour_ms = 3'600'000;

// The records of one Redis, kept by the fake systems across reconnections, with the keyspace probe
// the watcher compares between ticks.
struct FakeKeyspace {
  std::map<std::string, std::pair<std::optional<std::int64_t>, std::string>> records;
  core::KeyspaceProbe probe{"run-1 master", 0, 0, 0};
  bool fail_lookups = false;
};

class KeyspaceStore final : public core::DedupStore {
public:
  explicit KeyspaceStore(FakeKeyspace& keyspace) : m_keyspace(keyspace) {}
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    if (m_keyspace.fail_lookups) {
      throw UnreachableError("cannot reach Redis at fake:6379 during a lookup (connection reset)");
    }
    m_values.assign(keys.size(), "");
    out.assign(keys.size(), core::RecordState{});
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (auto it = m_keyspace.records.find(keys[i]); it != m_keyspace.records.end()) {
        m_values[i] = it->second.second;
        out[i] = core::present_record(it->second.first, m_values[i]);
      }
    }
  }
  std::string kind() const override { return "redis"; }
  std::optional<core::KeyspaceProbe> probe() override {
    if (m_keyspace.fail_lookups) {
      throw UnreachableError("cannot reach Redis at fake:6379 (connection refused)");
    }
    return m_keyspace.probe;
  }

private:
  FakeKeyspace& m_keyspace;
  std::vector<std::string> m_values;
};

class FakeConfigs final : public WatchTopicConfigs {
public:
  FakeConfigs(std::optional<core::TopicRetention> answer, std::string why) : m_answer(answer), m_why(std::move(why)) {}
  std::optional<core::TopicRetention> retention(const std::string&) override { return m_answer; }
  std::string why(const std::string&) const override { return m_answer ? "" : m_why; }

private:
  std::optional<core::TopicRetention> m_answer;
  std::string m_why;
};

// --effects' source: every effect present, or an unreachable source while `down` says so.
class FailingEffects final : public core::EffectStore {
public:
  explicit FailingEffects(const bool& down) : m_down(down) {}
  void lookup(const std::vector<std::string>& keys, std::vector<std::uint8_t>& present) override {
    if (m_down) {
      throw UnreachableError("cannot reach PostgreSQL at fake:5432 (effects table)");
    }
    present.assign(keys.size(), 1);
  }

private:
  const bool& m_down;
};

// One topic "orders" of one partition whose log is `log`; a Redis; clocks the test moves. Records
// what the loop asked of each system.
class FakeWatchSystems final : public WatchSystems {
public:
  std::vector<OwnedEvent> log;
  std::optional<std::int64_t> committed;
  std::vector<std::pair<std::string, std::int64_t>> seeks; // name → offset, in WatchOptions' order
  bool brokers_down = false;
  std::optional<core::TopicRetention> retention;
  std::string retention_why = "the broker refused DescribeConfigs for orders (TOPIC_AUTHORIZATION_FAILED)";
  bool store_unreachable = false;
  bool with_effects = false; // --effects: a source of its own, which fails when effects_down
  bool effects_down = false;
  FakeKeyspace keyspace;
  std::int64_t now = 1'800'000'000'000;
  std::int64_t steady = 0;
  int resolves = 0;
  int config_requests = 0;
  int store_opens = 0;
  std::vector<std::string> notes;

  WatchRange resolve(std::int64_t) override {
    ++resolves;
    if (brokers_down) {
      throw UnreachableError("cannot reach Kafka at fake:9092 (all brokers down)");
    }
    WatchRange range;
    core::PartitionRange p;
    p.topic = "orders";
    p.partition = 0;
    p.from = 0;
    p.to = static_cast<std::int64_t>(log.size());
    p.log_start = 0;
    p.log_end = p.to;
    p.committed = committed;
    range.partitions.push_back(p);
    for (const auto& [name, offset] : seeks) {
      range.seeks.push_back(core::WatchSeek{name, {{{"orders", 0}, offset}}});
    }
    return range;
  }
  std::unique_ptr<WatchTopicConfigs> topic_configs(const std::vector<std::string>&) override {
    ++config_requests;
    return std::make_unique<FakeConfigs>(retention, retention_why);
  }
  std::unique_ptr<core::EventSource> read(std::vector<core::PartitionPlan> plans) override {
    std::vector<OwnedEvent> events;
    for (const auto& plan : plans) {
      for (const auto& e : log) {
        if (e.partition == plan.partition && e.offset >= plan.start && e.offset < plan.end) {
          events.push_back(e);
        }
      }
    }
    return std::make_unique<FakeEventSource>(std::move(events), 100);
  }
  WatchStore open_store(std::int64_t) override {
    ++store_opens;
    WatchStore out;
    if (store_unreachable) {
      out.failure = "cannot reach Redis at fake:6379 during connect (connection refused)";
      return out;
    }
    out.store = std::make_unique<KeyspaceStore>(keyspace);
    if (with_effects) {
      out.effects = std::make_unique<FailingEffects>(effects_down);
    }
    return out;
  }
  std::shared_ptr<void> attach_archives(core::LogAnalyzerOptions&) override { return nullptr; }
  std::int64_t now_ms() override { return now; }
  std::int64_t steady_ms() override { return steady; }
  void sleep_ms(std::int64_t ms) override { steady += ms; }
  bool stopping() override { return false; }
  void note(std::string_view line) override { notes.emplace_back(line); }

  void append(std::string id, std::string payload, std::int64_t ts) {
    log.push_back(with_header_id(0, static_cast<std::int64_t>(log.size()), ts, std::move(id), std::move(payload)));
  }
  // Moves both clocks by `ms`.
  void pass(std::int64_t ms) {
    now += ms;
    steady += ms;
  }
  int count_notes(std::string_view part) const {
    return static_cast<int>(
        std::count_if(notes.begin(), notes.end(), [&](const auto& n) { return n.find(part) != std::string::npos; }));
  }
};

WatchOptions options() {
  WatchOptions o;
  o.topics = {"orders"};
  o.identify = core::default_identify_options();
  o.audit.key_template = core::KeyTemplate::parse("dedup:{event_id}");
  o.audit.ttl = core::declared_ttl(core::Span::finite(k_hour_ms));
  o.audit.policy.retention = core::Span::unknown();
  o.interval_ms = k_interval_ms;
  o.refresh_ms = 60'000;
  return o;
}

TEST(WatchLoop, SystemsAreNamedByTheirLabel) {
  EXPECT_EQ(to_string(WatchSystem::Kafka), "kafka");
  EXPECT_EQ(to_string(WatchSystem::Redis), "redis");
  EXPECT_EQ(to_string(WatchSystem::Postgres), "postgres");
  EXPECT_EQ(to_string(WatchSystem::Registry), "registry");
  EXPECT_EQ(to_string(WatchSystem::Effects), "effects");
}

// --effects' source failing is labelled as itself, never as the store: the store stays up.
TEST(WatchLoop, AnEffectsSourceThatFailsIsLabelledAsItselfNotAsTheStore) {
  FakeWatchSystems systems;
  systems.with_effects = true;
  systems.append("e-1", "a", systems.now - 1000);
  systems.keyspace.records["dedup:e-1"] = {k_hour_ms - 1000, "done"};
  WatchOptions o = options();
  o.audit.effects = true;
  Watcher watcher(o, systems);
  watcher.tick();
  EXPECT_EQ(watcher.metrics().up.at("effects"), true);
  EXPECT_EQ(watcher.metrics().up.at("redis"), true);
  systems.effects_down = true;
  systems.append("e-2", "b", systems.now - 500); // an arrival: its record and its effect looked up
  systems.pass(k_interval_ms);
  watcher.tick();
  EXPECT_EQ(watcher.metrics().up.at("effects"), false);
  EXPECT_EQ(watcher.metrics().up.at("redis"), true) << "the store answered";
  EXPECT_EQ(systems.count_notes("effects down: cannot reach PostgreSQL at fake:5432"), 1);
  EXPECT_EQ(systems.count_notes("redis down"), 0);
  systems.effects_down = false;
  systems.pass(10 * k_interval_ms);
  watcher.tick();
  EXPECT_EQ(watcher.metrics().up.at("effects"), true);
}

// A broker that stays down is asked again after the interval, then twice as long each time, up to
// 10 s; the down note is said once, and so is its recovery.
TEST(WatchLoop, ABrokerThatStaysDownIsAskedAgainLessAndLessOften) {
  FakeWatchSystems systems;
  systems.append("e-1", "a", systems.now);
  systems.brokers_down = true;
  Watcher watcher(options(), systems);
  std::vector<std::int64_t> asked_at;
  for (int t = 0; t <= 30; ++t) {
    int before = systems.resolves;
    watcher.tick();
    if (systems.resolves > before) {
      asked_at.push_back(systems.steady);
    }
    systems.pass(k_interval_ms);
  }
  EXPECT_EQ(asked_at, (std::vector<std::int64_t>{0, 1000, 2000, 5000, 12000, 21000, 30000}));
  EXPECT_EQ(systems.count_notes("kafka down: cannot reach Kafka at fake:9092"), 1);
  EXPECT_EQ(watcher.metrics().up.at("kafka"), false);
  EXPECT_TRUE(watcher.metrics().gauges.partitions.empty()) << "no gauge over what was not seen";

  systems.brokers_down = false;
  systems.pass(10 * k_interval_ms); // past the backoff
  watcher.tick();
  EXPECT_EQ(systems.count_notes("kafka answers again"), 1);
  EXPECT_EQ(watcher.metrics().up.at("kafka"), true);
  EXPECT_EQ(watcher.metrics().gauges.partitions.size(), 1U);
  // Up again, the next failure starts from the interval.
  systems.brokers_down = true;
  systems.pass(k_interval_ms);
  watcher.tick();
  int before = systems.resolves;
  systems.pass(k_interval_ms);
  watcher.tick();
  EXPECT_EQ(systems.resolves, before + 1);
  EXPECT_EQ(systems.count_notes("kafka down"), 2);
}

// A store that goes away is noted once, reconnected when it answers, and every record looked up
// again before a gauge is served.
TEST(WatchLoop, AStoreThatGoesAwayIsOpenedAgainAndEveryRecordLookedUpAgain) {
  FakeWatchSystems systems;
  systems.append("e-1", "a", systems.now - 1000);
  systems.keyspace.records["dedup:e-1"] = {k_hour_ms - 1000, "done"};
  Watcher watcher(options(), systems);
  watcher.tick();
  EXPECT_EQ(systems.store_opens, 1);
  ASSERT_EQ(watcher.metrics().gauges.partitions.size(), 1U);

  systems.keyspace.fail_lookups = true;
  systems.pass(k_interval_ms);
  watcher.tick();
  EXPECT_EQ(systems.count_notes("redis down: cannot reach Redis at fake:6379"), 1);
  EXPECT_EQ(watcher.metrics().up.at("redis"), false);
  EXPECT_TRUE(watcher.metrics().gauges.partitions.empty());

  systems.keyspace.fail_lookups = false;
  systems.pass(10 * k_interval_ms);
  watcher.tick();
  EXPECT_EQ(systems.store_opens, 2) << "the store is opened again";
  EXPECT_EQ(systems.count_notes("redis answers again"), 1);
  EXPECT_EQ(watcher.metrics().gauges.partitions.size(), 1U);
}

// A failover shows as another incarnation: the watcher connects again (a sentinel names the new
// master) and looks every record up.
TEST(WatchLoop, AnotherIncarnationOfTheStoreIsAFailover) {
  FakeWatchSystems systems;
  systems.append("e-1", "a", systems.now - 1000);
  Watcher watcher(options(), systems);
  watcher.tick();
  EXPECT_EQ(systems.store_opens, 1);
  systems.keyspace.probe.incarnation = "run-2 master";
  systems.pass(k_interval_ms);
  watcher.tick();
  EXPECT_EQ(systems.count_notes("redis: the keyspace changed (another server or role: connecting again)"), 1);
  EXPECT_EQ(systems.store_opens, 2);
  // Keys gone that did not expire: looked up again, no reconnection.
  systems.keyspace.probe.keys = -5;
  systems.pass(k_interval_ms);
  watcher.tick();
  EXPECT_EQ(systems.store_opens, 2);
}

// A retention the broker refused is asked again at every --refresh (not every tick); its reason is
// said once, and the retention once it is known.
TEST(WatchLoop, ARefusedRetentionIsAskedAgainAtEveryRefresh) {
  FakeWatchSystems systems;
  systems.append("e-1", "a", systems.now - 1000);
  Watcher watcher(options(), systems);
  watcher.tick();
  EXPECT_EQ(systems.config_requests, 1);
  EXPECT_EQ(systems.count_notes("the retention of orders is unknown (the broker refused DescribeConfigs"), 1);
  for (int i = 0; i < 30; ++i) {
    systems.pass(k_interval_ms);
    watcher.tick();
  }
  EXPECT_EQ(systems.config_requests, 1) << "not asked again before --refresh";
  systems.pass(31 * k_interval_ms);
  watcher.tick();
  EXPECT_EQ(systems.config_requests, 2);
  EXPECT_EQ(systems.count_notes("is unknown"), 1) << "the same reason is said once";
  EXPECT_FALSE(watcher.metrics().retention.at("orders").seconds);

  systems.retention = core::TopicRetention{std::to_string(24 * k_hour_ms), "delete", std::nullopt};
  systems.pass(61 * k_interval_ms);
  watcher.tick();
  EXPECT_EQ(systems.config_requests, 3);
  EXPECT_EQ(systems.count_notes("the retention of orders is known now: 1d (from the broker)"), 1);
  EXPECT_EQ(watcher.metrics().retention.at("orders").seconds, 86400.0);
  systems.pass(61 * k_interval_ms);
  watcher.tick();
  EXPECT_EQ(systems.config_requests, 3) << "a known retention is not asked again";
}

// Every seek is priced from one resolution a tick.
TEST(WatchLoop, OneResolutionATickServesEverySeek) {
  FakeWatchSystems systems;
  for (int i = 0; i < 4; ++i) {
    systems.append("e-" + std::to_string(i), "p", systems.now - 2 * k_hour_ms); // records long gone
  }
  systems.committed = 4;
  systems.seeks = {{"one-back", 3}, {"earliest", 0}};
  WatchOptions o = options();
  o.seek_names = {"one-back", "earliest"};
  Watcher watcher(std::move(o), systems);
  watcher.tick();
  EXPECT_EQ(systems.resolves, 1);
  auto gauges = watcher.metrics().gauges;
  EXPECT_EQ((gauges.would_reapply[{"orders", "one-back", "external"}]), 1);
  EXPECT_EQ((gauges.would_reapply[{"orders", "earliest", "external"}]), 4);
}

// The counters count what arrives while watching, not the range the watch started with.
TEST(WatchLoop, CountersCountWhatArrivesAfterTheRangeWasRead) {
  FakeWatchSystems systems;
  systems.append("e-1", "a", systems.now - 1000);
  systems.append("e-1", "a", systems.now - 900); // a log duplicate already in the range
  Watcher watcher(options(), systems);
  watcher.tick();
  EXPECT_EQ(watcher.metrics().counters.at("orders").log_duplicates, 0);
  systems.append("e-1", "a", systems.now); // arrives: a duplicate of e-1
  systems.append("e-1", "b", systems.now); // arrives: e-1 reused with another payload
  systems.pass(k_interval_ms);
  watcher.tick();
  auto counters = watcher.metrics().counters.at("orders");
  EXPECT_EQ(counters.log_duplicates, 1);
  EXPECT_EQ(counters.id_reuse, 1);
  // A refresh reads the range again into fresh rules: the counters keep what they counted.
  systems.pass(61 * k_interval_ms);
  watcher.tick();
  EXPECT_EQ(watcher.metrics().counters.at("orders").log_duplicates, 1);
  EXPECT_EQ(watcher.metrics().counters.at("orders").id_reuse, 1);
}

} // namespace
} // namespace dedupctl::commands
