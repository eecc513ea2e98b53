// A key's slot and a redirect, as Redis Cluster decides them; the cluster and sentinel URI forms.
#include "core/store/redis_cluster.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"

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
