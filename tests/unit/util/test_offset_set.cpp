#include "core/util/offset_set.hpp"

#include <gtest/gtest.h>

#include <random>
#include <set>

using dedupctl::core::OffsetSet;

TEST(OffsetSet, InOrderIsOneRunAndRepeatsAreFound) {
  OffsetSet set;
  for (std::int64_t offset = 0; offset < 100; ++offset) {
    EXPECT_TRUE(set.insert(offset));
  }
  EXPECT_EQ(set.runs(), 1u);
  for (std::int64_t offset = 0; offset < 100; ++offset) {
    EXPECT_FALSE(set.insert(offset)) << offset;
  }
  EXPECT_FALSE(set.contains(100));
  EXPECT_FALSE(set.contains(-1));
}

TEST(OffsetSet, GapsAreNotSeenAndFillingThemJoinsRuns) {
  OffsetSet set;
  for (std::int64_t offset : {0, 1, 2, 5, 6, 9}) {
    EXPECT_TRUE(set.insert(offset));
  }
  EXPECT_EQ(set.runs(), 3u);
  EXPECT_FALSE(set.contains(3));
  EXPECT_FALSE(set.contains(8));
  EXPECT_TRUE(set.insert(4)); // extends [5,6] down
  EXPECT_TRUE(set.insert(3)); // joins [0,2] and [4,6]
  EXPECT_EQ(set.runs(), 2u);
  EXPECT_TRUE(set.insert(7));
  EXPECT_TRUE(set.insert(8));
  EXPECT_EQ(set.runs(), 1u);
  EXPECT_FALSE(set.insert(4));
}

TEST(OffsetSet, AgreesWithStdSetOnRandomOrders) {
  std::mt19937_64 random(7);
  for (int round = 0; round < 50; ++round) {
    OffsetSet set;
    std::set<std::int64_t> truth;
    for (int i = 0; i < 400; ++i) {
      std::int64_t offset = static_cast<std::int64_t>(random() % 300);
      ASSERT_EQ(set.insert(offset), truth.insert(offset).second) << "round " << round << " offset " << offset;
    }
    for (std::int64_t offset = -1; offset < 302; ++offset) {
      ASSERT_EQ(set.contains(offset), truth.count(offset) == 1) << offset;
    }
  }
}
