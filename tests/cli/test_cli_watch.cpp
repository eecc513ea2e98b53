// dedupctl watch end to end: a real Prometheus (Debian's) scrapes it while the tests plant failures
// in a real redis-server and produce to either broker, and asks Prometheus's HTTP API what it saw.
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <csignal>
#include <thread>

using namespace dedupctl::testing;
using Samples = std::map<std::string, double>;

namespace {

const std::vector<std::string> k_states{"no_id",   "covered", "expiring",    "expired",
                                        "missing", "pending", "in_progress", "orphaned"};

bool equals(const Samples& samples, const Samples& expected) { return samples == expected; }

// The planted events' states as the audit counts them (expect_planted).
Samples planted_states() {
  return {{"no_id", 1},   {"covered", 2}, {"expiring", 1},    {"expired", 1},
          {"missing", 2}, {"pending", 1}, {"in_progress", 1}, {"orphaned", 1}};
}

std::string describe(const Samples& samples) {
  std::string out;
  for (const auto& [k, v] : samples) {
    out += fmt::format("{}={} ", k, v);
  }
  return out.empty() ? "(none)" : out;
}

} // namespace

class Watch : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    DEDUPCTL_REQUIRE_SERVER(!find_program("prometheus").empty(), "prometheus is not installed");
    m_now = wall_ms();
    m_cluster = fresh_topic(GetParam(), "pay", 1, planted(m_now, m_now - 30 * k_minute), "billing", {{0, 8}});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
    plant_records(m_redis);
    m_port = free_port();
  }

  // Starts the watch (watch_args with `extra`) and Prometheus.
  void start(const std::vector<std::string>& extra = {}) {
    SpawnOptions options;
    options.stderr_file = m_dir.file("watch.err");
    options.silence = true;
    m_watch = std::make_unique<Process>(watch_args(m_cluster.bootstrap, m_cluster.topic, m_redis.uri(), m_port, extra),
                                        options);
    m_prometheus = std::make_unique<PrometheusServer>(m_port);
    ASSERT_TRUE(m_prometheus->available()) << m_prometheus->why_unavailable();
  }

  Samples wait_for(const std::string& promql, const Samples& expected, const std::string& by = {},
                   std::chrono::seconds timeout = std::chrono::seconds(30)) {
    return m_prometheus->wait_for(
        promql, [&](const Samples& s) { return equals(s, expected); }, timeout, by);
  }

  std::string err() const { return read_file(m_dir.file("watch.err")); }

  TempDir m_dir;
  TestTopic m_cluster;
  RedisServer m_redis;
  long long m_now = 0;
  int m_port = 0;
  std::unique_ptr<Process> m_watch;
  std::unique_ptr<PrometheusServer> m_prometheus;
};

INSTANTIATE_TEST_SUITE_P(Brokers, Watch, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

// Prometheus sees every coverage state, and what a seek would re-apply, as the audit of the same
// range counts them; /metrics passes promtool's lint.
TEST_P(Watch, PrometheusSeesEveryStateAsTheAuditCountsThem) {
  start();
  auto states = wait_for("sum by (state) (dedupctl_events)", planted_states(), "state");
  EXPECT_EQ(states, planted_states()) << describe(states) << err();
  auto audit = run_dedupctl(audit_args(m_cluster.bootstrap, m_redis.uri(), {}, "json", m_cluster.topic));
  auto doc = parse(audit);
  for (const auto& state : k_states) {
    EXPECT_EQ(states[state], doc.at("summary").at(state).get<double>()) << state;
  }
  // Seek 2 of [2, 8): e-5 has no id (EmailSent, idempotent), e-7 is missing; the rest are skipped.
  auto reapply = m_prometheus->query("dedupctl_replay_would_reapply{seek=\"2\"}", "side_effects");
  EXPECT_EQ(reapply, (Samples{{"external", 1}, {"idempotent", 1}, {"internal", 0}})) << describe(reapply);
  EXPECT_EQ(doc.at("replay").at("would_reapply"), 2);
  // e-0 lost its record to the TTL while the topic keeps it: the gap is now.
  EXPECT_EQ(m_prometheus->query("dedupctl_seconds_until_ttl_gap"), (Samples{{"", 0}}));
  EXPECT_EQ(m_prometheus->query("dedupctl_ttl_seconds{source=\"flag\"}"), (Samples{{"", 3600}}));
  EXPECT_EQ(m_prometheus->query("dedupctl_retention_seconds{source=\"flag\"}"), (Samples{{"", 7 * 86400}}));
  EXPECT_EQ(m_prometheus->query("dedupctl_up", "system"), (Samples{{"kafka", 1}, {"redis", 1}}));
  auto metrics = http_get(m_port, "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  auto lint = run_command({find_program("promtool"), "check", "metrics"}, metrics->body);
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
  auto open = http_get(m_port, "/metrics", "application/openmetrics-text; version=1.0.0");
  ASSERT_TRUE(open);
  EXPECT_TRUE(open->body.ends_with("# EOF\n"));
  EXPECT_NE(open->headers.find("application/openmetrics-text"), std::string::npos);
  auto health = http_get(m_port, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(http_get(m_port, "/nothing")->status, 404);
}

// Records deleted behind the watcher's back (a failover to a replica that had not caught up) show
// as missing within a refresh, and the replay risk of the seek rises with them.
TEST_P(Watch, DeletedRecordsShowAsMissingWithinARefresh) {
  start({"--refresh", "1h"}); // only the keyspace probe can notice
  wait_for("sum by (state) (dedupctl_events)", planted_states(), "state");
  EXPECT_EQ(m_redis.command("DEL dedup:pay:e-3 dedup:pay:e-6"), ":2\r\n");
  Samples expected = planted_states();
  expected["covered"] = 0;
  expected["missing"] = 4;
  auto states = wait_for("sum by (state) (dedupctl_events)", expected, "state");
  EXPECT_EQ(states, expected) << describe(states) << err();
  EXPECT_EQ(m_prometheus->query("dedupctl_replay_would_reapply{seek=\"2\",side_effects=\"external\"}"),
            (Samples{{"", 3}}));
  EXPECT_NE(err().find("looking every record up again"), std::string::npos) << err();
}

// A record that lapses while its event stays replayable opens a TTL gap at its expiry time, with no
// lookup (the refresh is an hour away): seconds_until_ttl_gap counts down to it, then is 0. The
// record lives 15 s, so that a loaded machine still scrapes the countdown before it lapses.
TEST_P(Watch, ARecordThatLapsesOpensATtlGapAtItsExpiryTime) {
  std::string topic = add_topic(m_cluster, "lapse", 1,
                                envelope(0, m_now - 1000, "l-0", "PaymentCharged") +
                                    envelope(1, m_now - 1000, "l-1", "PaymentCharged"));
  m_cluster.topic = topic;
  ASSERT_EQ(m_redis.command("SET dedup:pay:l-0 done PX 15000"), "+OK\r\n");
  ASSERT_EQ(m_redis.command("SET dedup:pay:l-1 done PX 600000"), "+OK\r\n");
  start({"--ttl", "4s", "--refresh", "1h"});
  auto gap = m_prometheus->wait_for("dedupctl_seconds_until_ttl_gap",
                                    [](const Samples& s) { return s.count("") && s.at("") > 0 && s.at("") <= 15; });
  EXPECT_TRUE(gap.count("") && gap.at("") > 0 && gap.at("") <= 15) << describe(gap) << err();
  gap = wait_for("dedupctl_seconds_until_ttl_gap", {{"", 0}});
  EXPECT_EQ(gap, (Samples{{"", 0}})) << err();
  auto expired = wait_for("sum(dedupctl_events{state=\"expired\"})", {{"", 1}});
  EXPECT_EQ(expired, (Samples{{"", 1}})) << err();
}

// What arrives while watching is classified and counted: a producer retry (same id, same payload),
// a reused id (another payload), a new event without a record (missing).
TEST_P(Watch, ArrivalsAreClassifiedAndDuplicatesCounted) {
  start();
  wait_for("sum by (state) (dedupctl_events)", planted_states(), "state");
  auto before = m_prometheus->query("dedupctl_log_duplicates_total");
  EXPECT_EQ(before, (Samples{{"", 0}}));
  TestProducer producer(m_cluster.bootstrap, 10'000);
  producer.connect(m_cluster.topic);
  auto record = [&](const std::string& id, const std::string& payload) {
    OutgoingRecord r;
    r.topic = m_cluster.topic;
    r.partition = 0;
    r.key = "k";
    r.payload = payload;
    r.headers = {{"event_id", id}, {"type", "PaymentCharged"}};
    r.timestamp_ms = wall_ms();
    return r;
  };
  producer.send(record("e-6", R"({"n":6})"));   // the same event again: a log duplicate
  producer.send(record("e-6", R"({"n":60})"));  // another payload under its id: a reuse
  producer.send(record("e-10", R"({"n":10})")); // new, no record, past the committed offset: pending
  std::string error;
  ASSERT_EQ(producer.flush(error), 0) << error;
  EXPECT_EQ(wait_for("dedupctl_log_duplicates_total", {{"", 1}}), (Samples{{"", 1}})) << err();
  EXPECT_EQ(wait_for("dedupctl_id_reuse_total", {{"", 1}}), (Samples{{"", 1}})) << err();
  // Refreshes (every 3 s) read the range again into fresh rules: nothing is counted twice, and a
  // copy arriving after them is still known for one.
  std::this_thread::sleep_for(std::chrono::seconds(7));
  EXPECT_EQ(m_prometheus->query("dedupctl_log_duplicates_total"), (Samples{{"", 1}}));
  EXPECT_EQ(m_prometheus->query("dedupctl_id_reuse_total"), (Samples{{"", 1}}));
  producer.send(record("e-6", R"({"n":6})"));
  ASSERT_EQ(producer.flush(error), 0) << error;
  EXPECT_EQ(wait_for("dedupctl_log_duplicates_total", {{"", 2}}), (Samples{{"", 2}})) << err();
  Samples expected = planted_states();
  expected["covered"] = 5; // e-6's record covers its three copies
  expected["pending"] = 2;
  auto states = wait_for("sum by (state) (dedupctl_events)", expected, "state");
  EXPECT_EQ(states, expected) << describe(states) << err();
}

// The counters count what arrives while watching: a duplicate already in the range at the start is
// not counted (the audit reports it), one arriving later is, against the range.
TEST_P(Watch, TheCountersCountWhatArrivesNotTheRangeAtTheStart) {
  std::string topic = add_topic(m_cluster, "dups", 1,
                                envelope(0, m_now - 2000, "d-1", "PaymentCharged") +
                                    envelope(0, m_now - 1000, "d-1", "PaymentCharged"));
  m_cluster.topic = topic;
  // Keys from the type, not the id: another id of the same type collides with d-1's key.
  start({"--group", "", "--seek", "", "--key-template", "dedup:pay:{type}"});
  auto held = m_prometheus->wait_for("dedupctl_watch_events_held", [](const Samples& s) {
    return s == Samples{{"", 2}};
  });
  EXPECT_EQ(held, (Samples{{"", 2}})) << err();
  EXPECT_EQ(m_prometheus->wait_for("dedupctl_log_duplicates_total", [](const Samples& s) { return !s.empty(); }),
            (Samples{{"", 0}}));
  TestProducer producer(m_cluster.bootstrap, 10'000);
  producer.connect(topic);
  OutgoingRecord again{topic, 0, "k0", R"({"n":0})", {{"event_id", "d-1"}, {"type", "PaymentCharged"}}, wall_ms()};
  producer.send(again);
  std::string error;
  ASSERT_EQ(producer.flush(error), 0) << error;
  EXPECT_EQ(wait_for("dedupctl_log_duplicates_total", {{"", 1}}), (Samples{{"", 1}})) << err();
  EXPECT_EQ(m_prometheus->query("dedupctl_key_collisions_total"), (Samples{{"", 0}}));
  OutgoingRecord other{topic, 0, "k1", R"({"n":1})", {{"event_id", "d-2"}, {"type", "PaymentCharged"}}, wall_ms()};
  producer.send(other);
  ASSERT_EQ(producer.flush(error), 0) << error;
  EXPECT_EQ(wait_for("dedupctl_key_collisions_total", {{"", 1}}), (Samples{{"", 1}})) << err();
}

// Redis stopped: dedupctl_up{system="redis"} 0 and no coverage gauge at all (nothing unseen is
// covered); Redis back, empty: up again, and every record it lost is missing.
TEST_P(Watch, RedisDownIsNotCoveredAndItsRecoveryIsSeen) {
  start();
  wait_for("sum by (state) (dedupctl_events)", planted_states(), "state");
  m_redis.kill();
  EXPECT_EQ(wait_for("dedupctl_up{system=\"redis\"}", {{"", 0}}), (Samples{{"", 0}})) << err();
  EXPECT_EQ(wait_for("count(dedupctl_events)", {}), Samples{}) << err();
  ASSERT_TRUE(m_redis.restart());
  EXPECT_EQ(wait_for("dedupctl_up{system=\"redis\"}", {{"", 1}}), (Samples{{"", 1}})) << err();
  // Empty: e-0 and e-4 expired (older than the TTL), e-8 and e-9 pending (at or past committed),
  // the other five with ids missing.
  Samples expected{{"no_id", 1},   {"covered", 0}, {"expiring", 0},    {"expired", 2},
                   {"missing", 5}, {"pending", 2}, {"in_progress", 0}, {"orphaned", 0}};
  auto states = wait_for("sum by (state) (dedupctl_events)", expected, "state");
  EXPECT_EQ(states, expected) << describe(states) << err();
  EXPECT_NE(err().find("redis down"), std::string::npos) << err();
  EXPECT_NE(err().find("redis answers again"), std::string::npos) << err();
}

// SIGTERM: a clean exit (0) within a second, the port closed.
TEST_P(Watch, SigtermExitsCleanlyWithinASecond) {
  start();
  wait_for("sum by (state) (dedupctl_events)", planted_states(), "state");
  auto sent = std::chrono::steady_clock::now();
  m_watch->signal(SIGTERM);
  int code = m_watch->wait();
  auto took = std::chrono::steady_clock::now() - sent;
  EXPECT_EQ(code, 0) << err();
  EXPECT_LT(took, std::chrono::seconds(1));
  EXPECT_FALSE(http_get(m_port, "/healthz", {}, std::chrono::milliseconds(500)));
}

// SIGHUP reads the config file again: a valid change is taken, a broken file is refused (said on
// stderr) and the watch goes on with what it had.
TEST_P(Watch, SighupReadsTheConfigFileAgainAndKeepsTheOldOneWhenBroken) {
  std::string config = m_dir.file("dedupctl.toml");
  write_file(config, "[watch]\nttl = \"1h\"\n");
  start({"--config", config, "--ttl", ""}); // the TTL from the file only (a flag would win over it)
  EXPECT_EQ(wait_for("dedupctl_ttl_seconds", {{"", 3600}}), (Samples{{"", 3600}}));
  write_file(config, "[watch]\nttl = \"2h\"\n");
  m_watch->signal(SIGHUP);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (err().find("read again") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(err().find("SIGHUP: the config file was read again"), std::string::npos) << err();
  EXPECT_EQ(wait_for("dedupctl_ttl_seconds", {{"", 7200}}), (Samples{{"", 7200}})) << err();
  write_file(config, "[watch]\nttl = \"3h\"\nno-such-flag = 1\n");
  m_watch->signal(SIGHUP);
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (err().find("watching on with the settings it had") == std::string::npos &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(err().find("watching on with the settings it had"), std::string::npos) << err();
  EXPECT_NE(err().find("no-such-flag"), std::string::npos) << err();
  EXPECT_TRUE(m_watch->running());
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_EQ(m_prometheus->query("dedupctl_ttl_seconds"), (Samples{{"", 7200}}));
  auto health = http_get(m_port, "/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

// Bad input is exit 2 before anything is served; a port in use too.
TEST(WatchUsage, BadFlagsAreRefusedWithExitTwo) {
  auto base = [](std::vector<std::string> extra) {
    std::vector<std::string> args{"watch", "-b", "127.0.0.1:1", "--topic", "t", "--store", "redis://127.0.0.1:1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  auto seek = run_dedupctl(base({"--seek", "-10"}));
  EXPECT_EQ(seek.exit_code, 2);
  EXPECT_NE(seek.err.find("--seek needs --group"), std::string::npos) << seek.err;
  auto listen = run_dedupctl(base({"--listen", "nowhere"}));
  EXPECT_EQ(listen.exit_code, 2);
  EXPECT_NE(listen.err.find("--listen nowhere"), std::string::npos) << listen.err;
  auto file = run_dedupctl(base({"--store", "file:/tmp/x.snapshot"}));
  EXPECT_EQ(file.exit_code, 2) << file.err;
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : {
           Case{{"watch", "-b", "127.0.0.1:1", "--store", "redis://127.0.0.1:1"}, "watch needs --topic"},
           Case{{"watch", "--topic", "t", "--store", "redis://127.0.0.1:1"}, "watch needs --bootstrap-server"},
           Case{base({"--from", "committed"}), "--from committed needs --group"},
           Case{base({"--interval", "50ms"}), "--interval 50ms: at least 100ms"},
           Case{{"watch", "-b", "127.0.0.1:1", "--topic", "t", "--store", "memory:"}, "watch reads a live placement"},
           Case{{"watch", "-b", "127.0.0.1:1", "--topic", "t", "--store", "file:/tmp/x.snapshot"},
                "watch reads a live placement"},
           // Its gauges would be labelled system="redis": refused by name.
           Case{{"watch", "-b", "127.0.0.1:1", "--topic", "t", "--store", "dynamodb://Idem?region=eu-west-1"},
                "watch does not read DynamoDB tables yet"},
       }) {
    auto refused = run_dedupctl(c.args);
    EXPECT_EQ(refused.exit_code, 2) << c.says << ": " << refused.err;
    EXPECT_NE(refused.err.find(c.says), std::string::npos) << refused.err;
  }
  auto rate = run_dedupctl(base({"--refresh-rate", "-5"}));
  EXPECT_EQ(rate.exit_code, 2);
  EXPECT_NE(rate.err.find("--refresh-rate -5"), std::string::npos) << rate.err;
  auto refresh = run_dedupctl(base({"--refresh", "1s", "--interval", "5s"}));
  EXPECT_EQ(refresh.exit_code, 2);
  EXPECT_NE(refresh.err.find("--refresh"), std::string::npos) << refresh.err;
  HttpResponder busy([](const std::string&) { return std::string("{}"); });
  auto in_use = run_dedupctl(base({"--listen", fmt::format("127.0.0.1:{}", busy.port())}));
  EXPECT_EQ(in_use.exit_code, 2);
  EXPECT_NE(in_use.err.find("cannot listen there"), std::string::npos) << in_use.err;
}

// Brokers that do not answer: the endpoint is served with dedupctl_up{system="kafka"} 0 and no
// coverage gauge, never a clean zero.
TEST(WatchUsage, WithoutBrokersItServesUpZeroAndNoCoverage) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  int port = free_port();
  TempDir dir;
  SpawnOptions options;
  options.stderr_file = dir.file("err");
  options.silence = true;
  Process watch({DEDUPCTL_BINARY, "watch", "-b", fmt::format("127.0.0.1:{}", free_port()), "--topic", "t", "--store",
                 redis.uri(), "--ttl", "1h", "--retention", "7d", "--listen", fmt::format("127.0.0.1:{}", port),
                 "--interval", "200ms", "--timeout", "1s"},
                options);
  auto metrics = poll_http(port, "/metrics", [](const HttpAnswer& a) {
    return a.body.find("dedupctl_up{system=\"kafka\"} 0") != std::string::npos;
  });
  ASSERT_TRUE(metrics) << read_file(dir.file("err"));
  EXPECT_NE(metrics->body.find("dedupctl_up{system=\"kafka\"} 0"), std::string::npos) << metrics->body;
  EXPECT_EQ(metrics->body.find("\ndedupctl_events{"), std::string::npos) << metrics->body;
  EXPECT_EQ(metrics->body.find("\ndedupctl_seconds_until_ttl_gap{"), std::string::npos) << metrics->body;
  watch.signal(SIGTERM);
  EXPECT_EQ(watch.wait(), 0);
}

// A password typed into --store stays in ps for the life of watch: said once at the start, as
// redis-cli says it, without the password; not said when the URI has none, or comes from the config
// file (not on the command line).
TEST(WatchUsage, APasswordOnTheCommandLineIsWarnedOfOnceAndNeverShown) {
  const std::string secret = "Wa7ch-Pa55w0rd";
  TempDir dir;
  write_file(dir.file("c.toml"), fmt::format("[watch]\nstore = \"redis://:{}@127.0.0.1:1\"\n", secret));
  for (const auto& [args, warned] : std::vector<std::pair<std::vector<std::string>, bool>>{
           {{"--store", "redis://:" + secret + "@127.0.0.1:1"}, true},
           {{"--store", "redis://default:" + secret + "@127.0.0.1:1", "--effects",
             "postgres://u:" + secret + "@127.0.0.1:1/db", "--effects-table", "t"},
            true},
           {{"--store", "redis://127.0.0.1:1"}, false},
           {{"--config", dir.file("c.toml")}, false}}) {
    int port = free_port();
    SpawnOptions options;
    options.stderr_file = dir.file("err");
    options.silence = true;
    bool from_config = args[0] == "--config";
    std::vector<std::string> command{DEDUPCTL_BINARY};
    if (from_config) {
      command.insert(command.end(), args.begin(), args.end());
    }
    command.insert(command.end(), {"watch", "-b", fmt::format("127.0.0.1:{}", free_port()), "--topic", "t", "--ttl",
                                   "1h", "--retention", "7d", "--listen", fmt::format("127.0.0.1:{}", port),
                                   "--interval", "200ms", "--timeout", "1s"});
    if (!from_config) {
      command.insert(command.end(), args.begin(), args.end());
    }
    Process watch(command, options);
    ASSERT_TRUE(poll_http(port, "/metrics", [](const HttpAnswer& a) {
      return a.body.find("dedupctl_up{system=\"kafka\"} 0") != std::string::npos;
    })) << read_file(dir.file("err"));
    watch.signal(SIGTERM);
    EXPECT_EQ(watch.wait(), 0);
    std::string err = read_file(dir.file("err"));
    EXPECT_EQ(err.find(secret), std::string::npos) << err;
    std::size_t at = err.find("Warning: the password in --store is visible to every user of this machine");
    EXPECT_EQ(at != std::string::npos, warned) << args[1] << ": " << err;
    if (warned) {
      EXPECT_EQ(err.find("Warning: the password in --store", at + 1), std::string::npos) << "once: " << err;
      EXPECT_NE(err.find("--redis-password-file"), std::string::npos) << err;
    }
    EXPECT_EQ(err.find("Warning: the password in --effects") != std::string::npos, args.size() > 2) << err;
  }
}

// Two topics whose retention the broker does not give (the mock cluster cannot answer
// DescribeConfigs): each is named with its own reason, not the last one asked for all of them.
TEST(WatchUsage, EveryTopicWhoseRetentionIsUnknownIsNamedWithItsOwnReason) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  MockBroker broker({"left:1", "right:1"});
  int port = free_port();
  TempDir dir;
  auto watch =
      spawn_watch({DEDUPCTL_BINARY, "watch", "-b", broker.bootstrap(), "--topic", "left", "--topic", "right", "--store",
                   redis.uri(), "--ttl", "1h", "--listen", fmt::format("127.0.0.1:{}", port), "--interval", "200ms"},
                  dir.file("err"));
  auto metrics = poll_http(port, "/metrics", [](const HttpAnswer& a) {
    return a.body.find("dedupctl_up{system=\"kafka\"} 1") != std::string::npos;
  });
  ASSERT_TRUE(metrics && metrics->body.find("dedupctl_up{system=\"kafka\"} 1") != std::string::npos)
      << read_file(dir.file("err"));
  auto err = read_file(dir.file("err"));
  for (const std::string topic : {"left", "right"}) {
    EXPECT_NE(err.find(fmt::format("the retention of {} is unknown (the broker did not answer DescribeConfigs for {} "
                                   "within 3000 ms); pass --retention",
                                   topic, topic)),
              std::string::npos)
        << err;
    // Known or not, no gauge of a retention is served for it.
    EXPECT_EQ(metrics->body.find(fmt::format("dedupctl_retention_seconds{{topic=\"{}\"", topic)), std::string::npos)
        << metrics->body;
  }
  watch->signal(SIGTERM);
  EXPECT_EQ(watch->wait(), 0);
}

namespace {

// The audit's per-state counts (report-v1 summary) of `args`.
Samples audit_states(const std::vector<std::string>& args) {
  auto result = run_dedupctl(args);
  auto doc = nlohmann::json::parse(result.out);
  Samples out;
  for (const auto& state : k_states) {
    out[state] = doc.at("summary").at(state).get<double>();
  }
  return out;
}

// A watch of the planted events (watch_args with `extra`), its stderr in a temp dir of its own,
// scraped by a Prometheus; planted_seen() waits until Prometheus sees the planted states.
struct ScrapedWatch {
  ScrapedWatch(const std::string& bootstrap, const std::string& topic, const std::string& store,
               const std::vector<std::string>& extra)
      : port(free_port()) {
    process = spawn_watch(watch_args(bootstrap, topic, store, port, extra), dir.file("err"));
    prometheus = std::make_unique<PrometheusServer>(port);
  }
  std::string err() const { return read_file(dir.file("err")); }
  Samples planted_seen() const {
    return prometheus->wait_for(
        "sum by (state) (dedupctl_events)", [](const Samples& s) { return s == planted_states(); },
        std::chrono::seconds(30), "state");
  }
  TempDir dir;
  int port;
  std::unique_ptr<Process> process;
  std::unique_ptr<PrometheusServer> prometheus;
};

} // namespace

// A PostgreSQL inbox watched through a restart of the server: postgres down (no gauges), then back
// with the same states the audit counts.
TEST(WatchInbox, APostgresRestartIsSurvived) {
  PostgresServer pg;
  DEDUPCTL_REQUIRE_SERVER(pg.available(), pg.why_unavailable());
  DEDUPCTL_REQUIRE_SERVER(!find_program("prometheus").empty(), "prometheus is not installed");
  MockBroker broker{{"pay:1"}};
  long long now = wall_ms();
  broker.seed("pay", planted(now, now - 30 * k_minute));
  broker.commit("billing", "pay", "0=8");
  auto sql = pg.psql(
      "CREATE TABLE processed_events (event_id text NOT NULL, consumer_name text NOT NULL, processed_at timestamptz "
      "NOT NULL, status text, PRIMARY KEY (consumer_name, event_id));" +
      fmt::format("INSERT INTO processed_events VALUES ('e-2', 'billing', now(), 'done'), ('e-3', 'billing', now(), "
                  "'done'), ('e-4', 'billing', now() - interval '2 hours', 'processing'), ('e-6', 'billing', now(), "
                  "'done');"));
  ASSERT_EQ(sql.exit_code, 0) << sql.err;
  std::vector<std::string> common{"-b",
                                  broker.bootstrap(),
                                  "--topic",
                                  "pay",
                                  "--group",
                                  "billing",
                                  "--store",
                                  pg.conninfo(),
                                  "--consumer",
                                  "billing",
                                  "--inbox-status-column",
                                  "status",
                                  "--inbox-retention",
                                  "1h",
                                  "--retention",
                                  "7d"};
  std::vector<std::string> audit{"audit"};
  audit.insert(audit.end(), common.begin(), common.end());
  audit.insert(audit.end(), {"-o", "json"});
  Samples expected = audit_states(audit);
  EXPECT_EQ(expected["covered"] + expected["expiring"], 3) << describe(expected);
  int port = free_port();
  TempDir dir;
  std::vector<std::string> args{DEDUPCTL_BINARY, "watch"};
  args.insert(args.end(), common.begin(), common.end());
  args.insert(args.end(), {"--listen", fmt::format("127.0.0.1:{}", port), "--interval", "250ms", "--refresh", "3s",
                           "--timeout", "2s"});
  auto watch = spawn_watch(args, dir.file("err"));
  PrometheusServer prometheus(port);
  ASSERT_TRUE(prometheus.available()) << prometheus.why_unavailable();
  auto same = [&](const Samples& s) { return s == expected; };
  auto states = prometheus.wait_for("sum by (state) (dedupctl_events)", same, std::chrono::seconds(30), "state");
  EXPECT_EQ(states, expected) << describe(states) << read_file(dir.file("err"));
  pg.stop();
  auto down = prometheus.wait_for("dedupctl_up{system=\"postgres\"}", [](const Samples& s) {
    return s == Samples{{"", 0}};
  });
  EXPECT_EQ(down, (Samples{{"", 0}})) << read_file(dir.file("err"));
  EXPECT_EQ(prometheus.wait_for("count(dedupctl_events)", [](const Samples& s) { return s.empty(); }), Samples{});
  ASSERT_TRUE(pg.start());
  states = prometheus.wait_for("sum by (state) (dedupctl_events)", same, std::chrono::seconds(30), "state");
  EXPECT_EQ(states, expected) << describe(states) << read_file(dir.file("err"));
  EXPECT_EQ(prometheus.query("dedupctl_up{system=\"postgres\"}"), (Samples{{"", 1}}));
  watch->signal(SIGTERM);
  EXPECT_EQ(watch->wait(), 0) << read_file(dir.file("err"));
}

// A broker of its own (the real one), stopped and started again under the watch: kafka down (no
// gauges), then the same states, and nothing read twice (no log duplicate, ten events held).
class WatchBrokerRestart : public ::testing::TestWithParam<std::string> {};
INSTANTIATE_TEST_SUITE_P(Brokers, WatchBrokerRestart, ::testing::Values("kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(WatchBrokerRestart, ABrokerRestartIsSurvivedWithoutCountingTwice) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  DEDUPCTL_REQUIRE_SERVER(!find_program("prometheus").empty(), "prometheus is not installed");
  KafkaBroker broker;
  DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
  long long now = wall_ms();
  create_topic(broker.bootstrap(), "pay", 1);
  seed_topic(broker.bootstrap(), "pay", planted(now, now - 30 * k_minute));
  commit_offsets(broker.bootstrap(), "billing", "pay", {{0, 8}});
  plant_records(redis);
  ScrapedWatch w(broker.bootstrap(), "pay", redis.uri(), {"--timeout", "2s"});
  ASSERT_TRUE(w.prometheus->available()) << w.prometheus->why_unavailable();
  auto& prometheus = *w.prometheus;
  auto planted_seen = [](const Samples& s) { return s == planted_states(); };
  auto states = w.planted_seen();
  EXPECT_EQ(states, planted_states()) << describe(states) << w.err();
  broker.stop();
  auto down = prometheus.wait_for("dedupctl_up{system=\"kafka\"}", [](const Samples& s) {
    return s == Samples{{"", 0}};
  });
  EXPECT_EQ(down, (Samples{{"", 0}})) << w.err();
  EXPECT_EQ(prometheus.wait_for("count(dedupctl_events)", [](const Samples& s) { return s.empty(); }), Samples{});
  ASSERT_TRUE(broker.start()) << broker.log();
  states = prometheus.wait_for("sum by (state) (dedupctl_events)", planted_seen, std::chrono::seconds(60), "state");
  EXPECT_EQ(states, planted_states()) << describe(states) << w.err();
  EXPECT_EQ(prometheus.query("dedupctl_watch_events_held"), (Samples{{"", 10}}));
  EXPECT_EQ(prometheus.query("dedupctl_log_duplicates_total"), (Samples{{"", 0}}));
  EXPECT_NE(w.err().find("kafka answers again"), std::string::npos) << w.err();
  w.process->signal(SIGTERM);
  EXPECT_EQ(w.process->wait(), 0);
}

// Two watchers, --shard 0/2 and 1/2, split the partitions; Prometheus's sum over both is the
// unsharded audit's count of every state.
TEST_P(Watch, ShardsSplitThePartitionsAndSumToTheWhole) {
  std::string events;
  for (int i = 0; i < 40; ++i) {
    OwnedEvent e{.topic = "wide", .partition = i % 4, .offset = i / 4, .timestamp_ms = m_now - i * 1000};
    e.headers = {{"event_id", fmt::format("w-{}", i)}, {"type", "PaymentCharged"}};
    e.payload = fmt::format(R"({{"n":{}}})", i);
    events += kcat_line(e);
    if (i % 3 == 0) {
      ASSERT_EQ(m_redis.command(fmt::format("SET dedup:pay:w-{} done PX 600000", i)), "+OK\r\n");
    }
  }
  std::string topic = add_topic(m_cluster, "wide", 4, events);
  std::vector<int> ports{free_port(), free_port()};
  std::vector<std::unique_ptr<Process>> watchers;
  for (int k = 0; k < 2; ++k) {
    auto args = watch_args(m_cluster.bootstrap, topic, m_redis.uri(), ports[k],
                           {"--shard", fmt::format("{}/2", k), "--seek", "", "--group", ""});
    watchers.push_back(spawn_watch(args, m_dir.file(fmt::format("shard{}.err", k))));
  }
  PrometheusServer prometheus(ports);
  ASSERT_TRUE(prometheus.available()) << prometheus.why_unavailable();
  auto audit = audit_args(m_cluster.bootstrap, m_redis.uri(), {}, "json", topic);
  for (const char* flag : {"--seek", "--group"}) {
    auto at = std::find(audit.begin(), audit.end(), flag);
    audit.erase(at, at + 2);
  }
  Samples expected = audit_states(audit);
  EXPECT_EQ(expected["covered"] + expected["expiring"], 14) << describe(expected);
  auto states = prometheus.wait_for(
      "sum by (state) (dedupctl_events)", [&](const Samples& s) { return s == expected; }, std::chrono::seconds(30),
      "state");
  EXPECT_EQ(states, expected) << describe(states);
  // Each watcher shows its own two partitions only.
  auto partitions = prometheus.query("count by (instance) (dedupctl_events{state=\"covered\"})", "instance");
  EXPECT_EQ(partitions,
            (Samples{{fmt::format("127.0.0.1:{}", ports[0]), 2}, {fmt::format("127.0.0.1:{}", ports[1]), 2}}));
}

// A Sentinel failover to a replica that had lost a record: the demoted master's new role is seen,
// the watcher connects again to the master the sentinel names, and the lost record is missing.
TEST(WatchSentinel, AFailoverToAReplicaThatLostARecordShowsItMissing) {
  RedisServer master;
  DEDUPCTL_REQUIRE_SERVER(master.available(), master.why_unavailable());
  DEDUPCTL_REQUIRE_SERVER(!find_program("prometheus").empty(), "prometheus is not installed");
  plant_records(master);
  RedisServer replica({"--replicaof", "127.0.0.1", std::to_string(master.port())});
  DEDUPCTL_REQUIRE_SERVER(replica.available(), replica.why_unavailable());
  auto synced = [&] { return replica.command("DBSIZE") == ":6\r\n"; };
  for (int i = 0; i < 100 && !synced(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(synced()) << replica.command("INFO replication");
  // The replica loses e-3 (a write on a writable replica is not replicated): it has not caught up.
  ASSERT_EQ(replica.command("CONFIG SET replica-read-only no"), "+OK\r\n");
  ASSERT_EQ(replica.command("DEL dedup:pay:e-3"), ":1\r\n");
  RedisSentinel sentinel(master.port(), "pay");
  DEDUPCTL_REQUIRE_SERVER(sentinel.available(), sentinel.why_unavailable());
  long long now = wall_ms();
  auto topic = fresh_topic("mock", "pay", 1, planted(now, now - 30 * k_minute), "billing", {{0, 8}});
  DEDUPCTL_REQUIRE_SERVER(!topic.bootstrap.empty(), topic.why);
  ScrapedWatch w(topic.bootstrap, topic.topic, fmt::format("redis+sentinel://127.0.0.1:{}/pay", sentinel.port()),
                 {"--refresh", "1h"});
  ASSERT_TRUE(w.prometheus->available()) << w.prometheus->why_unavailable();
  auto& prometheus = *w.prometheus;
  auto states = w.planted_seen();
  EXPECT_EQ(states, planted_states()) << describe(states) << w.err();
  // The sentinel learns of the replica from the master's INFO (every 10 s), then fails over to it.
  std::string answer;
  for (int i = 0; i < 300; ++i) {
    answer = sentinel.command("SENTINEL FAILOVER pay");
    if (answer.starts_with("+OK")) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(answer.starts_with("+OK")) << answer;
  Samples expected = planted_states();
  expected["covered"] = 1; // e-6
  expected["missing"] = 3;
  states = prometheus.wait_for(
      "sum by (state) (dedupctl_events)", [&](const Samples& s) { return s == expected; }, std::chrono::seconds(60),
      "state");
  EXPECT_EQ(states, expected) << describe(states) << w.err();
  EXPECT_EQ(sentinel.master_port(), replica.port());
  // Redis closes its clients' connections when it is demoted (else the probe sees the new role):
  // either way the watcher connected again to the master the sentinel names now.
  EXPECT_NE(w.err().find(fmt::format("master 127.0.0.1:{} of 'pay'", replica.port())), std::string::npos) << w.err();
  w.process->signal(SIGTERM);
  EXPECT_EQ(w.process->wait(), 0);
}
