// The Redis connector against a real Redis Cluster (redis-server --cluster-enabled, joined by
// redis-cli --cluster create) and behind real sentinels (redis-server --sentinel): routing by slot,
// MOVED and ASK, a master killed with and without a replica, SCAN of every master, the worst
// master's settings, and the master a sentinel names before and after a failover.
#include "connectors/redis/connection.hpp"
#include "connectors/redis/redis.hpp"
#include "core/replay/replay.hpp"
#include "core/span.hpp"
#include "core/store/redis_cluster.hpp"
#include "core/util/errors.hpp"
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace dedupctl;
using namespace dedupctl::testing;
using core::RecordState;

namespace {

// What lets a cluster's masters work at once: a batch is on the wire when send() returns, not when
// the first of its replies is read (hiredis' blocking API writes a context's buffer only then, so
// every master but the first would wait for the replies of those read before it).
TEST(RedisConnection, ABatchReachesTheServerWhenItIsSentNotWhenItsRepliesAreRead) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  connectors::redis::RedisSettings settings;
  settings.uri = core::parse_store_uri(redis.uri());
  connectors::redis::Connection connection(settings, {{"127.0.0.1", redis.port()}, ""});
  connectors::redis::CommandBuffer batch;
  batch.add({"SET", "d:sent", "1"});
  batch.add({"PTTL", "d:sent"});
  connection.send(batch);
  std::string seen;
  for (int i = 0; i < 200 && seen != ":1\r\n"; ++i) { // 2 s: the server runs it at once
    seen = redis.command("EXISTS d:sent");
    if (seen != ":1\r\n") {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  EXPECT_EQ(seen, ":1\r\n") << "the SET was still in the client's buffer, nothing read yet";
  EXPECT_EQ(connection.read("the test")->type, REDIS_REPLY_STATUS);
  EXPECT_EQ(connection.read("the test")->integer, -1) << "the replies are still read in order";
}

// The records every test writes: a key in many slots of every master, each of one kind.
struct Planted {
  std::vector<std::string> keys;
  std::vector<RecordState::Kind> kinds;
  std::vector<bool> expires;
  std::vector<std::string> values;
};

// Writes key i straight to the master of its slot as the test computes it with core::key_slot;
// the server answers MOVED (and the write fails the test) if that slot is wrong.
void write_planted(RedisCluster& cluster, Planted& planted, int count) {
  auto owners = cluster.slot_owners();
  for (int i = 0; i < count; ++i) {
    std::string key = fmt::format("dedup:pay:e-{}", i);
    RedisServer* owner = owners[static_cast<std::size_t>(core::key_slot(key))];
    ASSERT_NE(owner, nullptr);
    planted.keys.push_back(key);
    switch (i % 4) {
    case 0: // absent
      planted.kinds.push_back(RecordState::Kind::Absent);
      planted.expires.push_back(false);
      planted.values.push_back("");
      break;
    case 1:
      ASSERT_EQ(owner->command(fmt::format("SET {} done PX 3600000", key)), "+OK\r\n") << key;
      planted.kinds.push_back(RecordState::Kind::Present);
      planted.expires.push_back(true);
      planted.values.push_back("done");
      break;
    case 2:
      ASSERT_EQ(owner->command(fmt::format("SET {} processing:run-9", key)), "+OK\r\n") << key;
      planted.kinds.push_back(RecordState::Kind::Present);
      planted.expires.push_back(false);
      planted.values.push_back("processing:run-9");
      break;
    default:
      ASSERT_EQ(owner->command(fmt::format("HSET {} f 1", key)), ":1\r\n") << key;
      planted.kinds.push_back(RecordState::Kind::Present);
      planted.expires.push_back(false);
      planted.values.push_back(""); // another type: present, no marker
    }
  }
}

void expect_states(core::DedupStore& store, const Planted& planted) {
  std::vector<RecordState> states;
  store.lookup(planted.keys, states);
  ASSERT_EQ(states.size(), planted.keys.size());
  for (std::size_t i = 0; i < states.size(); ++i) {
    EXPECT_EQ(states[i].kind, planted.kinds[i]) << planted.keys[i];
    EXPECT_EQ(states[i].pttl_ms.has_value(), planted.expires[i]) << planted.keys[i];
    EXPECT_EQ(std::string(states[i].value), planted.values[i]) << planted.keys[i];
  }
}

connectors::redis::RedisSettings settings_for(const std::string& uri, std::int64_t timeout_ms = 10'000) {
  connectors::redis::RedisSettings settings;
  settings.uri = core::parse_store_uri(uri);
  settings.timeout_ms = timeout_ms;
  return settings;
}

// A key never written, in a slot no planted key is in: a master refuses to give away a slot it
// holds keys of (CLUSTER SETSLOT … NODE, CLUSTER DELSLOTS).
std::string unplanted_key(const Planted& planted) {
  std::set<int> used;
  for (const auto& key : planted.keys) {
    used.insert(core::key_slot(key));
  }
  std::string key;
  for (int i = 0; key.empty() || used.count(core::key_slot(key)); ++i) {
    key = fmt::format("dedup:pay:unplanted-{}", i);
  }
  return key;
}

std::string unreachable_message(const std::function<void()>& run) {
  try {
    run();
  } catch (const UnreachableError& e) {
    return e.what();
  }
  return "no error";
}

// Whether the master's writes so far reached its replica (WAIT, a few tries).
bool replicated(const RedisServer& master) {
  for (int i = 0; i < 20; ++i) {
    if (master.command("WAIT 1 1000") == ":1\r\n") {
      return true;
    }
  }
  return false;
}

// A failover the sentinel runs once it knows the replica: true when it names the replica master.
bool fail_over(const RedisSentinel& sentinel, const RedisServer& replica) {
  for (int i = 0; i < 200 && sentinel.command("SENTINEL REPLICAS orders").find(std::to_string(replica.port())) ==
                                 std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (sentinel.command("SENTINEL FAILOVER orders") != "+OK\r\n") {
    return false;
  }
  for (int i = 0; i < 200 && sentinel.master_port() != replica.port(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return sentinel.master_port() == replica.port();
}

} // namespace

class RedisClusterTest : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_cluster.available(), m_cluster.why_unavailable());
    write_planted(m_cluster, m_planted, 400);
  }
  RedisCluster m_cluster{3, 0};
  Planted m_planted;
};

TEST_F(RedisClusterTest, LookupsRouteBySlotFromASeedListOrAnyNodeGivenAsRedis) {
  std::set<int> masters_used;
  auto owners = m_cluster.slot_owners();
  for (const auto& key : m_planted.keys) {
    masters_used.insert(owners[static_cast<std::size_t>(core::key_slot(key))]->port());
  }
  ASSERT_EQ(masters_used.size(), 3u) << "the keys are spread over every master";
  auto seeds = settings_for(m_cluster.seed_uri());
  auto store = connectors::redis::open_store(seeds);
  expect_states(*store, m_planted);
  EXPECT_NE(store->topology().find("Redis Cluster of 3 masters"), std::string::npos) << store->topology();
  // Any one node given as redis:// is found to be a cluster node.
  for (auto* node : m_cluster.nodes()) {
    auto one = settings_for(node->uri());
    auto detected = connectors::redis::open_store(one);
    expect_states(*detected, m_planted);
  }
}

// Moves the slot of planted key 1 (a record) to another master by hand mid-run, as redis-cli
// --cluster reshard does: the store follows ASK while it migrates, then MOVED.
static void move_a_slot_mid_run(RedisCluster& cluster, const Planted& planted) {
  auto store_settings = settings_for(cluster.seed_uri());
  auto store = connectors::redis::open_store(store_settings);
  expect_states(*store, planted); // the slot map is loaded
  const std::string& key = planted.keys[1];
  int slot = core::key_slot(key);
  RedisServer* source = cluster.master_of(slot);
  RedisServer* target = nullptr;
  for (auto* node : cluster.nodes()) {
    if (node != source) {
      target = node;
      break;
    }
  }
  auto id_of = [](RedisServer* node) {
    std::string reply = node->command("CLUSTER MYID");
    return reply.substr(reply.find('\n') + 1, 40);
  };
  ASSERT_EQ(target->command(fmt::format("CLUSTER SETSLOT {} IMPORTING {}", slot, id_of(source))), "+OK\r\n");
  ASSERT_EQ(source->command(fmt::format("CLUSTER SETSLOT {} MIGRATING {}", slot, id_of(target))), "+OK\r\n");
  ASSERT_EQ(source->command(fmt::format("MIGRATE 127.0.0.1 {} {} 0 5000", cluster.announced_port(target), key)),
            "+OK\r\n");
  // Midway: the key is on the target; the source answers ASK for it.
  EXPECT_EQ(source->command("GET " + key).substr(0, 4), "-ASK");
  expect_states(*store, planted);
  // Done: every node gives the slot to the target; the source answers MOVED.
  for (auto* node : cluster.nodes()) {
    ASSERT_EQ(node->command(fmt::format("CLUSTER SETSLOT {} NODE {}", slot, id_of(target))), "+OK\r\n");
  }
  EXPECT_EQ(source->command("GET " + key).substr(0, 6), "-MOVED");
  expect_states(*store, planted);
}

TEST_F(RedisClusterTest, ASlotMigratingMidRunIsFollowedByAskThenMoved) { move_a_slot_mid_run(m_cluster, m_planted); }

// The same over TLS (tls-cluster yes): the redirects name the TLS ports, which the store follows.
TEST(RedisClusterTls, ASlotMigratingMidRunIsFollowedToTheTlsPorts) {
  TestCertificates certs;
  DEDUPCTL_REQUIRE_SERVER(certs.available(), certs.why_unavailable());
  RedisCluster cluster(3, 0, &certs);
  DEDUPCTL_REQUIRE_SERVER(cluster.available(), cluster.why_unavailable());
  Planted planted;
  write_planted(cluster, planted, 400);
  ASSERT_EQ(cluster.seed_uri().rfind("rediss+cluster://", 0), 0u) << cluster.seed_uri();
  move_a_slot_mid_run(cluster, planted);
}

TEST_F(RedisClusterTest, AMasterKilledWithoutAReplicaEndsTheRunNamingIt) {
  auto store_settings = settings_for(m_cluster.seed_uri(), 2'000);
  auto store = connectors::redis::open_store(store_settings);
  expect_states(*store, m_planted);
  RedisServer* victim = m_cluster.master_of(core::key_slot(m_planted.keys[0]));
  victim->kill();
  std::vector<RecordState> states;
  std::string message = unreachable_message([&] { store->lookup(m_planted.keys, states); });
  EXPECT_NE(message.find(fmt::format("127.0.0.1:{}", victim->port())), std::string::npos) << message;
  EXPECT_NE(message.find("were not looked up"), std::string::npos) << message;
}

TEST_F(RedisClusterTest, ANodeThatIsNotAClusterAndASeedThatDoesNotAnswer) {
  RedisServer single;
  ASSERT_TRUE(single.available());
  auto not_cluster = settings_for("redis+cluster://127.0.0.1:" + std::to_string(single.port()));
  std::string message = unreachable_message([&] { connectors::redis::open_store(not_cluster); });
  EXPECT_NE(message.find("is not a Redis Cluster node"), std::string::npos) << message;
  EXPECT_NE(message.find("redis://127.0.0.1:" + std::to_string(single.port())), std::string::npos) << message;
  // A dead seed before live ones: the map comes from the next, and the report says which did not answer.
  int dead = free_port();
  auto seeds = settings_for(fmt::format("redis+cluster://127.0.0.1:{},{}", dead, m_cluster.seed_uri().substr(16)));
  auto store = connectors::redis::open_store(seeds);
  expect_states(*store, m_planted);
  EXPECT_NE(store->topology().find(fmt::format("seeds that did not answer: 127.0.0.1:{}", dead)), std::string::npos)
      << store->topology();
  // Only dead seeds.
  auto none = settings_for(fmt::format("redis+cluster://127.0.0.1:{}", dead));
  message = unreachable_message([&] { connectors::redis::open_store(none); });
  EXPECT_NE(message.find("no seed node of the cluster answered"), std::string::npos) << message;
}

// A slot no master serves (a reshard that left it unassigned): the lookup ends naming the slot and
// the key, before anything is sent, never a verdict over keys nobody answered for.
TEST_F(RedisClusterTest, ASlotNoMasterServesEndsTheRunNamingIt) {
  int slot = core::key_slot(m_planted.keys[1]);
  for (auto* node : m_cluster.nodes()) {
    node->command(fmt::format("CLUSTER DELSLOTS {}", slot));
  }
  auto store_settings = settings_for(m_cluster.seed_uri());
  auto store = connectors::redis::open_store(store_settings);
  std::vector<RecordState> states;
  std::string message = unreachable_message([&] { store->lookup(m_planted.keys, states); });
  EXPECT_NE(message.find(fmt::format("no master of the cluster serves slot {}", slot)), std::string::npos) << message;
  EXPECT_NE(message.find(m_planted.keys[1]), std::string::npos) << message;
}

// A slot map that keeps changing under a run: two masters that each say the other serves a slot
// (CLUSTER SETSLOT … NODE on each; nobody claims it, so gossip does not mend it). Every round of the
// slot's keys is redirected, and after 16 the lookup ends saying so and how many keys were left
// unanswered: never a verdict over them.
TEST_F(RedisClusterTest, ASlotMapThatKeepsRedirectingEndsTheRunAfterItsRounds) {
  std::string looping = unplanted_key(m_planted);
  int slot = core::key_slot(looping);
  RedisServer* owner = m_cluster.master_of(slot);
  ASSERT_NE(owner, nullptr);
  RedisServer* other = nullptr;
  for (RedisServer* node : m_cluster.nodes()) {
    if (node != owner) {
      other = node;
      break;
    }
  }
  ASSERT_NE(other, nullptr);
  auto id_of = [](RedisServer* node) { // "$40\r\n<id>\r\n"
    std::string reply = node->command("CLUSTER MYID");
    return reply.substr(reply.find("\r\n") + 2, 40);
  };
  auto store_settings = settings_for(m_cluster.seed_uri());
  auto store = connectors::redis::open_store(store_settings); // the map as it was
  ASSERT_EQ(owner->command(fmt::format("CLUSTER SETSLOT {} NODE {}", slot, id_of(other))), "+OK\r\n");
  ASSERT_EQ(other->command(fmt::format("CLUSTER SETSLOT {} NODE {}", slot, id_of(owner))), "+OK\r\n");
  std::vector<std::string> keys = m_planted.keys;
  keys.push_back(looping);
  std::vector<RecordState> states;
  std::string message = unreachable_message([&] { store->lookup(keys, states); });
  EXPECT_NE(message.find("the cluster's slot map kept changing: 1 keys were still redirected after 16 tries; try "
                         "again when the resharding is done"),
            std::string::npos)
      << message;
  // Mended (the slot given back to its owner on both), the same store answers for every key again.
  ASSERT_EQ(owner->command(fmt::format("CLUSTER SETSLOT {} NODE {}", slot, id_of(owner))), "+OK\r\n");
  ASSERT_EQ(other->command(fmt::format("CLUSTER SETSLOT {} NODE {}", slot, id_of(owner))), "+OK\r\n");
  store->lookup(keys, states);
  ASSERT_EQ(states.size(), keys.size());
  EXPECT_EQ(states.back().kind, RecordState::Kind::Absent);
  expect_states(*store, m_planted);
}

// A cluster that is down (here: one slot no master serves, so every node answers CLUSTERDOWN, as
// during a failover) is waited for until --timeout, not for a fixed number of rounds: back after
// 4 s, the lookups go on and every state is exact; still down at the timeout, the run ends quoting
// the cluster's answer, never a verdict over the keys it did not look up.
// Takes `slot` from every node, so that every node answers CLUSTERDOWN, and waits until one does.
void take_down(RedisCluster& cluster, int slot) {
  for (RedisServer* node : cluster.nodes()) {
    node->command(fmt::format("CLUSTER DELSLOTS {}", slot));
  }
  std::string answer;
  for (int i = 0; i < 50 && answer.find("CLUSTERDOWN") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    answer = cluster.nodes()[0]->command("PTTL any");
  }
  ASSERT_NE(answer.find("CLUSTERDOWN"), std::string::npos) << answer;
}

TEST_F(RedisClusterTest, ADownClusterIsWaitedForUntilItIsUpAgain) {
  int slot = core::key_slot(unplanted_key(m_planted));
  RedisServer* owner = m_cluster.master_of(slot);
  ASSERT_NE(owner, nullptr);
  auto store_settings = settings_for(m_cluster.seed_uri(), 10'000);
  auto store = connectors::redis::open_store(store_settings);
  ASSERT_NO_FATAL_FAILURE(take_down(m_cluster, slot));
  std::jthread mend([&] {                                 // joined however the lookup ends
    std::this_thread::sleep_for(std::chrono::seconds(4)); // longer than 16 rounds of 200 ms
    owner->command(fmt::format("CLUSTER ADDSLOTS {}", slot));
  });
  std::string message = unreachable_message([&] { expect_states(*store, m_planted); });
  mend.join();
  EXPECT_EQ(message, "no error");
}

TEST_F(RedisClusterTest, AClusterStillDownAtTheTimeoutEndsTheRunQuotingItsAnswer) {
  int slot = core::key_slot(unplanted_key(m_planted));
  auto store_settings = settings_for(m_cluster.seed_uri(), 1'500);
  auto store = connectors::redis::open_store(store_settings);
  ASSERT_NO_FATAL_FAILURE(take_down(m_cluster, slot));
  std::vector<RecordState> states;
  std::string message = unreachable_message([&] { store->lookup(m_planted.keys, states); });
  EXPECT_NE(message.find("the cluster kept answering CLUSTERDOWN"), std::string::npos) << message;
  EXPECT_NE(message.find("for 1500 ms, so 400 keys were not looked up; check CLUSTER INFO"), std::string::npos)
      << message;
}

TEST_F(RedisClusterTest, ReplayClaimsAndSettlesBySlot) {
  auto placement_settings = settings_for(m_cluster.seed_uri());
  auto placement = connectors::redis::open_replay_placement(placement_settings, core::Span::finite(86'400'000), 60'000,
                                                            {"processing"});
  std::vector<core::Claim> claims;
  placement->claim(m_planted.keys, "run-1", claims);
  ASSERT_EQ(claims.size(), m_planted.keys.size());
  for (std::size_t i = 0; i < claims.size(); ++i) {
    core::Claim expected = i % 4 == 0   ? core::Claim::Claimed
                           : i % 4 == 2 ? core::Claim::HeldByOther
                                        : core::Claim::Done;
    EXPECT_EQ(claims[i], expected) << m_planted.keys[i];
  }
  std::vector<bool> delivered(claims.size(), true);
  delivered[4] = false; // a failed delivery is released
  placement->settle(m_planted.keys, claims, delivered);
  auto owners = m_cluster.slot_owners();
  auto owner = [&](std::size_t i) { return owners[static_cast<std::size_t>(core::key_slot(m_planted.keys[i]))]; };
  EXPECT_EQ(owner(0)->command("GET " + m_planted.keys[0]), "$4\r\ndone\r\n");
  EXPECT_EQ(owner(8)->command("GET " + m_planted.keys[8]), "$4\r\ndone\r\n");
  EXPECT_EQ(owner(4)->command("EXISTS " + m_planted.keys[4]), ":0\r\n");
  EXPECT_EQ(owner(2)->command("GET " + m_planted.keys[2]), "$16\r\nprocessing:run-9\r\n") << "another's claim stays";
}

TEST_F(RedisClusterTest, ASnapshotScansEveryMasterAndCheckSeesTheWorst) {
  auto scan_settings = settings_for(m_cluster.seed_uri());
  std::set<std::string> keys;
  auto scanned = connectors::redis::scan_records(
      scan_settings, "dedup:pay:*", [&](const connectors::redis::SnapshotRecord& record) { keys.insert(record.key); },
      nullptr);
  EXPECT_EQ(scanned.nodes.size(), 3u);
  EXPECT_EQ(keys.size(), 300u) << "every present key of every master, once";
  RedisServer* lax = m_cluster.nodes()[1];
  ASSERT_EQ(lax->command("CONFIG SET maxmemory-policy allkeys-lru"), "+OK\r\n");
  auto facts = connectors::redis::inspect_server(scan_settings, "dedup:pay:*", 50);
  ASSERT_EQ(facts.nodes.size(), 3u);
  auto worst = core::worst_redis_node(facts.nodes);
  EXPECT_EQ(worst.maxmemory_policy, "allkeys-lru");
  EXPECT_EQ(worst.policy_node, fmt::format("127.0.0.1:{}", lax->port()));
  EXPECT_GT(facts.sampled_keys, 0);
}

// Three masters with a replica each: a master killed mid-run is replaced by its replica and the
// lookups go on there, complete.
TEST(RedisClusterFailover, AKilledMastersReplicaTakesItsKeys) {
  RedisCluster cluster(3, 1);
  DEDUPCTL_REQUIRE_SERVER(cluster.available(), cluster.why_unavailable());
  Planted planted;
  write_planted(cluster, planted, 200);
  for (auto* node : cluster.nodes()) {
    // A master's replica has every write (a replica answers WAIT with an error).
    for (int i = 0; i < 20; ++i) {
      std::string reply = node->command("WAIT 1 1000");
      if (reply == ":1\r\n" || reply.starts_with("-")) {
        break;
      }
    }
  }
  auto store_settings = settings_for(cluster.seed_uri(), 15'000);
  auto store = connectors::redis::open_store(store_settings);
  expect_states(*store, planted);
  RedisServer* victim = cluster.master_of(core::key_slot(planted.keys[1]));
  victim->kill();
  expect_states(*store, planted);
  EXPECT_NE(cluster.master_of(core::key_slot(planted.keys[1])), victim) << "a replica was promoted";
}

// A master, its replica, and a sentinel that watches the master as 'orders'.
class RedisSentinelTest : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(master.available(), master.why_unavailable());
    ASSERT_TRUE(replica.available()) << replica.why_unavailable();
    DEDUPCTL_REQUIRE_SERVER(sentinel.available(), sentinel.why_unavailable());
  }

  RedisServer master;
  RedisServer replica{{"--replicaof", "127.0.0.1", std::to_string(master.port())}};
  RedisSentinel sentinel{master.port(), "orders"};
};

// redis+sentinel://: the master the sentinel names, before and after a failover; an unknown name and
// no sentinel at all are errors that say so.
TEST_F(RedisSentinelTest, TheSentinelsMasterBeforeAndAfterAFailover) {
  ASSERT_EQ(master.command("SET dedup:pay:e-1 done PX 3600000"), "+OK\r\n");
  ASSERT_TRUE(replicated(master)); // the replica is in sync and has the record
  std::string uri = fmt::format("redis+sentinel://127.0.0.1:{},127.0.0.1:{}/orders", free_port(), sentinel.port());
  auto store_settings = settings_for(uri);
  auto store = connectors::redis::open_store(store_settings);
  EXPECT_NE(store->topology().find(fmt::format("master 127.0.0.1:{} of 'orders'", master.port())), std::string::npos)
      << store->topology();
  EXPECT_NE(store->topology().find("sentinels that did not answer"), std::string::npos) << store->topology();
  std::vector<RecordState> states;
  store->lookup({"dedup:pay:e-1", "dedup:pay:e-2"}, states);
  EXPECT_EQ(states[0].kind, RecordState::Kind::Present);
  EXPECT_EQ(states[1].kind, RecordState::Kind::Absent);

  ASSERT_TRUE(fail_over(sentinel, replica));
  auto after = connectors::redis::open_store(store_settings);
  EXPECT_NE(after->topology().find(fmt::format("master 127.0.0.1:{} of 'orders'", replica.port())), std::string::npos)
      << after->topology();
  after->lookup({"dedup:pay:e-1"}, states);
  EXPECT_EQ(states[0].kind, RecordState::Kind::Present) << "the promoted replica has the record";

  auto unknown = settings_for(fmt::format("redis+sentinel://127.0.0.1:{}/billing", sentinel.port()));
  std::string message = unreachable_message([&] { connectors::redis::open_store(unknown); });
  EXPECT_NE(message.find("know no master named 'billing'"), std::string::npos) << message;
  auto none = settings_for(fmt::format("redis+sentinel://127.0.0.1:{}/orders", free_port()));
  message = unreachable_message([&] { connectors::redis::open_store(none); });
  EXPECT_NE(message.find("no sentinel answered"), std::string::npos) << message;
}

// A replay claims through the master the sentinels name; its settles go through a connection of
// their own, opened at the first settle. If the sentinels name another master by then (a failover
// between the claims and the first settle), the claims were taken on a server that is no longer
// the master, and replication is asynchronous: the run cannot vouch that they held. It stops with
// an error naming both masters (exit 3) and settles nothing; the claims the new master has (here
// all, replicated before the failover) stay claims and end with their lease.
TEST_F(RedisSentinelTest, AReplayWhoseMasterChangesBeforeItsFirstSettleStopsAndSettlesNothing) {
  auto settings = settings_for(fmt::format("redis+sentinel://127.0.0.1:{}/orders", sentinel.port()));
  auto placement =
      connectors::redis::open_replay_placement(settings, core::Span::finite(86'400'000), 60'000, {"processing"});
  const std::vector<std::string> keys{"dedup:r-1", "dedup:r-2"};
  std::vector<core::Claim> claims;
  placement->claim(keys, "run-1", claims);
  ASSERT_EQ(claims, (std::vector<core::Claim>{core::Claim::Claimed, core::Claim::Claimed}));
  ASSERT_TRUE(replicated(master));
  ASSERT_TRUE(fail_over(sentinel, replica));

  std::string message = unreachable_message([&] { placement->settle(keys, claims, {true, true}); });
  EXPECT_NE(message.find("the Redis placement changed during the run"), std::string::npos) << message;
  EXPECT_NE(message.find(fmt::format("claimed on master 127.0.0.1:{} of 'orders'", master.port())), std::string::npos)
      << message;
  EXPECT_NE(message.find(fmt::format("settling on master 127.0.0.1:{} of 'orders'", replica.port())), std::string::npos)
      << message;
  for (const auto& key : keys) {
    EXPECT_EQ(replica.command("GET " + key), "$16\r\nprocessing:run-1\r\n")
        << key << ": the new master still holds the claim, not a `done` the run never settled there";
  }
}
