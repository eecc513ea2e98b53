// A key's slot and a redirect, as Redis Cluster decides them; the cluster and sentinel URI forms.
#include "core/util/errors.hpp"
#include "core/store/redis_cluster.hpp"
#include "core/store/store_uri.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;

TEST(KeySlot, Crc16IsTheXModemVariantTheSpecificationGives) {
  EXPECT_EQ(crc16("123456789"), 0x31C3); // the specification's check value
  EXPECT_EQ(crc16(""), 0);
}

TEST(KeySlot, SlotsAsRedisClusterKeyslotAnswers) {
  // Values from CLUSTER KEYSLOT on Redis 7.
  EXPECT_EQ(key_slot("foo"), 12182);
  EXPECT_EQ(key_slot("bar"), 5061);
  EXPECT_EQ(key_slot("dedup:pay:e-1"), key_slot("dedup:pay:e-1"));
  // A hash tag: only what is between the first { and the next } counts.
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("{user1000}.followers"));
  EXPECT_EQ(key_slot("{user1000}.following"), key_slot("user1000"));
  // An empty tag, or no closing brace: the whole key.
  EXPECT_EQ(key_slot("foo{}{bar}"), crc16("foo{}{bar}") % 16384);
  EXPECT_EQ(key_slot("foo{{bar}}zap"), key_slot("{bar"));
  EXPECT_EQ(key_slot("foo{bar"), crc16("foo{bar") % 16384);
}

TEST(Redirect, MovedAndAskNameTheSlotAndTheNode) {
  HostPort from{"10.0.0.1", 7000};
  auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381", from);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->kind, Redirect::Kind::Moved);
  EXPECT_EQ(moved->slot, 3999);
  EXPECT_EQ(moved->node, (HostPort{"127.0.0.1", 6381}));
  auto ask = parse_redirect("ASK 12 :7002", from);
  ASSERT_TRUE(ask);
  EXPECT_EQ(ask->kind, Redirect::Kind::Ask);
  EXPECT_EQ(ask->node, (HostPort{"10.0.0.1", 7002})) << "an empty host is the replying node's";
  for (const char* other :
       {"ERR unknown command", "MOVED", "MOVED 99999 h:1", "MOVED 1 h", "ASK x h:1", "MOVED 1 h:0"}) {
    EXPECT_FALSE(parse_redirect(other, from)) << other;
  }
}

TEST(StoreUri, ClusterAndSentinelForms) {
  auto cluster = parse_store_uri("redis+cluster://app:pw@10.0.0.1:7000,10.0.0.2,10.0.0.3:7002");
  EXPECT_EQ(cluster.mode, StoreUri::RedisMode::Cluster);
  ASSERT_EQ(cluster.seeds.size(), 3u);
  EXPECT_EQ(cluster.seeds[1], (HostPort{"10.0.0.2", 6379}));
  EXPECT_EQ(cluster.seeds[2], (HostPort{"10.0.0.3", 7002}));
  EXPECT_EQ(cluster.user, "app");
  EXPECT_EQ(cluster.password, "pw");
  EXPECT_EQ(cluster.redacted().find("pw"), std::string::npos);

  auto sentinel = parse_store_uri("redis+sentinel://s1:26379,s2/orders-dedup/3");
  EXPECT_EQ(sentinel.mode, StoreUri::RedisMode::Sentinel);
  ASSERT_EQ(sentinel.seeds.size(), 2u);
  EXPECT_EQ(sentinel.seeds[1], (HostPort{"s2", 26379}));
  EXPECT_EQ(sentinel.master_name, "orders-dedup");
  EXPECT_EQ(sentinel.db, 3);
  EXPECT_EQ(parse_store_uri("redis://h:1").mode, StoreUri::RedisMode::Server);
}

TEST(StoreUri, ClusterAndSentinelMistakesAreUsageErrors) {
  auto message = [](const char* text) {
    try {
      parse_store_uri(text);
    } catch (const dedupctl::UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("redis+sentinel://s1:26379").find("the master's name is missing"), std::string::npos);
  EXPECT_NE(message("redis+sentinel://s1:26379/").find("the master's name is missing"), std::string::npos);
  EXPECT_NE(message("redis+cluster://h1:7000/2").find("no databases but 0"), std::string::npos);
  EXPECT_NE(message("redis+cluster://h1:7000,h2:x").find("'x' is not a port"), std::string::npos);
  EXPECT_NE(message("redis+cluster://h1:7000,,h2").find("a node without a host"), std::string::npos);
  EXPECT_NE(message("redis+sentinel://:pw@s1:99999/m").find("'99999' is not a port"), std::string::npos);
  EXPECT_EQ(message("redis+sentinel://:s3cr3t@s1:x/m").find("s3cr3t"), std::string::npos) << "redacted";
}
