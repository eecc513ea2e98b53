// audit and snapshot against a real Redis Cluster and through a real sentinel, end to end: the
// coverage states are exactly those of one server; a master killed mid-audit is exit 3 and an
// incomplete report; cluster and sentinel URIs that cannot work are refused with the right code.
#include "tests/cli/report_json.hpp"
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <thread>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

std::string setting(const Json& doc, const std::string& name) {
  return doc.contains("settings") ? doc.at("settings").value(name, "") : "";
}

} // namespace

class AuditRedisCluster : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_cluster.available(), m_cluster.why_unavailable());
    m_now = wall_ms();
    m_topic = fresh_topic("mock", "pay", 1, planted(m_now, m_now - 30 * k_minute), "billing", {{0, 8}});
    DEDUPCTL_REQUIRE_SERVER(!m_topic.bootstrap.empty(), m_topic.why);
    plant_records(m_cluster);
  }
  std::vector<std::string> audit(const std::string& store, std::vector<std::string> extra = {}) const {
    return audit_args(m_topic.bootstrap, store, std::move(extra), "json", m_topic.topic);
  }

  RedisCluster m_cluster{3, 0};
  TestTopic m_topic;
  long long m_now = 0;
};

TEST_F(AuditRedisCluster, EveryCoverageStateIsExactlyAsOnOneServer) {
  for (const std::string& store : {m_cluster.seed_uri(), m_cluster.nodes()[2]->uri()}) {
    auto result = run_dedupctl(audit(store));
    EXPECT_EQ(result.exit_code, 1) << store << ": " << result.err;
    auto doc = parse(result);
    EXPECT_EQ(doc.at("complete"), true);
    expect_planted(doc);
    EXPECT_NE(setting(doc, "redis nodes").find("Redis Cluster of 3 masters"), std::string::npos) << doc.dump(2);
  }
}

TEST_F(AuditRedisCluster, ASnapshotCoversEveryMasterAndAuditsAsTheLiveCluster) {
  TempDir dir;
  auto snap = run_dedupctl(
      {"snapshot", "--store", m_cluster.seed_uri(), "--match", "dedup:pay:*", "--output", dir.file("keys.tsv")});
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  std::string text = read_file(dir.file("keys.tsv"));
  for (auto* node : m_cluster.nodes()) {
    EXPECT_NE(text.substr(0, text.find('\n')).find(fmt::format("127.0.0.1:{}", node->port())), std::string::npos)
        << "the header names every master: " << text.substr(0, text.find('\n'));
  }
  EXPECT_NE(snap.err.find("masters 127.0.0.1:"), std::string::npos) << snap.err;
  auto live = parse(run_dedupctl(audit(m_cluster.seed_uri())));
  auto offline = parse(run_dedupctl(audit("file:" + dir.file("keys.tsv"))));
  EXPECT_EQ(offline.at("summary"), live.at("summary"));
  EXPECT_EQ(finding_counts(offline), finding_counts(live));
}

// A one-key layout's collection lives in one slot: its lookups go to that slot's master, and discover
// samples the keys of every master.
TEST_F(AuditRedisCluster, AOneKeyLayoutIsLookedUpOnItsSlotsMasterAndDiscovered) {
  auto set = m_cluster.cli({"HSET", "dedup-meta", "e-2", "1", "e-3", "1", "e-6", "1"});
  ASSERT_EQ(set.out, "3\n") << set.err;
  auto args = audit(m_cluster.seed_uri(), {"--layout", "spring-hash", "--collection", "dedup-meta"});
  args.erase(std::find(args.begin(), args.end(), "--key-template"),
             std::find(args.begin(), args.end(), "--key-template") + 2); // the layout's own
  auto result = run_dedupctl(args);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(parse(result).at("summary").at("covered"), 3) << result.out;
  auto discovered = run_dedupctl(
      {"discover", "-b", m_topic.bootstrap, "--topic", m_topic.topic, "--store", m_cluster.seed_uri(), "-o", "json"});
  ASSERT_EQ(discovered.exit_code, 0) << discovered.err;
  std::set<std::string> layouts;
  Json doc = Json::parse(discovered.out);
  for (const auto& c : doc.at("candidates")) {
    layouts.insert(c.at("layout").get<std::string>());
  }
  EXPECT_EQ(layouts, (std::set<std::string>{"plain", "spring-hash"})) << discovered.out;
}

// A JSON layout's records are read with a GET a key on its slot's master, their expiration from the
// record; the key's TTL only for a record that names none.
TEST_F(AuditRedisCluster, AJsonLayoutsRecordsAreReadOnTheirSlotsMastersWithTheirOwnExpiration) {
  std::string later = std::to_string(m_now / 1000 + 8 * 24 * 3600);
  ASSERT_EQ(m_cluster.cli({"SET", "pt:e-2", R"({"status": "COMPLETED", "expiration": )" + later + "}", "EX", "60"}).out,
            "OK\n");
  ASSERT_EQ(m_cluster.cli({"SET", "pt:e-3", R"({"status": "COMPLETED"})", "PX", std::to_string(8 * 24 * k_hour)}).out,
            "OK\n");
  ASSERT_EQ(m_cluster.cli({"SET", "pt:e-6", R"({"status": "COMPLETED"})"}).out, "OK\n");
  auto args = audit(m_cluster.seed_uri(), {"--layout", "json"});
  auto at = std::find(args.begin(), args.end(), "--key-template");
  ASSERT_NE(at, args.end());
  *(at + 1) = "pt:{event_id}";
  auto result = run_dedupctl(args);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto summary = parse(result).at("summary");
  EXPECT_EQ(summary.at("covered"), 3) << "e-2 by its expiration (not its key's minute), e-3 by its key's TTL, e-6: "
                                      << summary.dump();
  EXPECT_EQ(summary.at("no_expiry"), 1) << "e-6 alone: " << summary.dump();
}

TEST_F(AuditRedisCluster, AMasterKilledMidAuditIsExit3AndIncomplete) {
  // The master of e-2's record: paused so the audit's lookups wait on it, then killed. It has no
  // replica, so no verdict can be given over its keys.
  RedisServer* victim = nullptr;
  std::string seeds = "redis+cluster://";
  auto owners = m_cluster.slot_owners();
  for (auto* node : m_cluster.nodes()) {
    if (node->command("EXISTS dedup:pay:e-2") == ":1\r\n") {
      victim = node;
    } else {
      seeds += fmt::format("{}127.0.0.1:{}", seeds.back() == '/' ? "" : ",", node->port());
    }
  }
  ASSERT_NE(victim, nullptr);
  ASSERT_EQ(victim->command("CLIENT PAUSE 5000"), "+OK\r\n");
  SpawnOptions options;
  options.pipe_stdout = true;
  std::vector<std::string> argv{DEDUPCTL_BINARY};
  auto args = audit(seeds, {"-q", "--timeout", "2s"});
  argv.insert(argv.end(), args.begin(), args.end());
  Process run(argv, options);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  victim->kill();
  std::string out;
  while (auto line = run.read_line(std::chrono::seconds(30))) {
    out += *line + "\n";
  }
  EXPECT_EQ(run.wait(), 3);
  auto doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), false);
  std::string message = doc.at("error").at("message");
  EXPECT_NE(message.find(fmt::format("127.0.0.1:{}", victim->port())), std::string::npos) << message;
  EXPECT_NE(message.find("were not looked up"), std::string::npos) << message;
}

// A cluster URI that cannot work: 2 before anything is contacted, 3 once a node said no.
TEST(RedisClusterUris, MistakesAreRefusedWithTheRightCode) {
  RedisServer single;
  DEDUPCTL_REQUIRE_SERVER(single.available(), single.why_unavailable());
  struct Case {
    std::string store;
    int exit_code;
    std::string says;
  };
  int dead = free_port();
  std::vector<Case> cases{
      {"redis+cluster://127.0.0.1:7000/3", 2, "no databases but 0"},
      {"redis+sentinel://127.0.0.1:26379", 2, "the master's name is missing"},
      {"redis+cluster://127.0.0.1:" + std::to_string(single.port()), 3, "is not a Redis Cluster node"},
      {fmt::format("redis+cluster://127.0.0.1:{}", dead), 3, "no seed node of the cluster answered"},
      {fmt::format("redis+sentinel://127.0.0.1:{}/orders", dead), 3, "no sentinel answered"},
  };
  for (const auto& c : cases) {
    auto result = run_dedupctl(
        {"audit", "--input", "-", "--store", c.store, "--ttl", "1h", "-o", "json"},
        kcat_line(OwnedEvent{.topic = "t", .timestamp_ms = 1, .headers = {{"event_id", "e"}}, .payload = "{}"}));
    EXPECT_EQ(result.exit_code, c.exit_code) << c.store << ": " << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << c.store << ": " << result.err;
    if (c.exit_code == 3) {
      EXPECT_EQ(parse(result).at("complete"), false) << c.store;
    }
  }
}

// Through a sentinel: the same verdicts as the master itself, and an unknown name is exit 3.
TEST(AuditRedisSentinel, TheMasterTheSentinelNamesIsAudited) {
  RedisServer master;
  DEDUPCTL_REQUIRE_SERVER(master.available(), master.why_unavailable());
  RedisSentinel sentinel(master.port(), "pay");
  DEDUPCTL_REQUIRE_SERVER(sentinel.available(), sentinel.why_unavailable());
  long long now = wall_ms();
  auto topic = fresh_topic("mock", "pay", 1, planted(now, now - 30 * k_minute), "billing", {{0, 8}});
  DEDUPCTL_REQUIRE_SERVER(!topic.bootstrap.empty(), topic.why);
  plant_records(master);
  auto result = run_dedupctl(audit_args(
      topic.bootstrap, fmt::format("redis+sentinel://127.0.0.1:{}/pay", sentinel.port()), {}, "json", topic.topic));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = parse(result);
  expect_planted(doc);
  EXPECT_NE(setting(doc, "redis nodes").find(fmt::format("master 127.0.0.1:{} of 'pay'", master.port())),
            std::string::npos)
      << doc.dump(2);
  auto unknown = run_dedupctl(audit_args(
      topic.bootstrap, fmt::format("redis+sentinel://127.0.0.1:{}/billing", sentinel.port()), {}, "json", topic.topic));
  EXPECT_EQ(unknown.exit_code, 3) << unknown.err;
  EXPECT_NE(unknown.err.find("know no master named 'billing'"), std::string::npos) << unknown.err;
}
