#include "core/finding.hpp"
#include "core/util/errors.hpp"
#include "core/util/flat_map.hpp"
#include <gtest/gtest.h>
#include <map>
#include <random>
#include <vector>

using namespace dedupctl;
using namespace dedupctl::core;

// The state of an audit grows with its events: a map sized for N takes about 1.25 N slots and holds
// N without growing (a power of two would take up to 2.7 N).
TEST(FlatHashMap, SizedForNItHoldsNInAboutAQuarterMoreSlots) {
  FlatHashMap<std::uint32_t> map(1'000'000);
  EXPECT_LE(map.capacity(), 1'250'001U);
  std::size_t capacity = map.capacity();
  bool inserted = false;
  for (std::uint64_t k = 1; k <= 1'000'000; ++k) {
    map.find_or_insert(k * 0x9e3779b97f4a7c15ULL, inserted) = static_cast<std::uint32_t>(k);
  }
  EXPECT_EQ(map.capacity(), capacity) << "no growth up to the expected size";
  EXPECT_EQ(*map.find(500'000 * 0x9e3779b97f4a7c15ULL), 500'000U);
}

// Tables from 2 MiB up live on memory of their own, aligned for huge pages: a map that grows from
// a few slots past that size moves from one kind of memory to the other and loses nothing (under
// ASan a block freed the wrong way fails the unit tier).
TEST(FlatHashMap, GrowingPastTwoMebibytesKeepsEveryKeyOnHugePageMemory) {
  HugePageAllocator<std::uint64_t> allocator;
  std::uint64_t* large = allocator.allocate(300'000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(large) % (std::size_t{2} << 20), 0U);
  large[299'999] = 1; // the whole block is usable
  allocator.deallocate(large, 300'000);
  std::uint64_t* small = allocator.allocate(16);
  small[15] = 1;
  allocator.deallocate(small, 16);

  FlatHashMap<std::uint32_t> map(4);
  bool inserted = false;
  for (std::uint64_t k = 1; k <= 400'000; ++k) { // 8-byte keys: past 2 MiB at 262,144 slots
    map.find_or_insert(k * 0x9e3779b97f4a7c15ULL, inserted) = static_cast<std::uint32_t>(k);
  }
  EXPECT_GT(map.capacity() * sizeof(std::uint64_t), std::size_t{2} << 20);
  for (std::uint64_t k = 1; k <= 400'000; ++k) {
    const std::uint32_t* value = map.find(k * 0x9e3779b97f4a7c15ULL);
    ASSERT_NE(value, nullptr) << k;
    EXPECT_EQ(*value, static_cast<std::uint32_t>(k));
  }
}

// A replay's chunk empties its index and fills it again, two hundred times in 1M events: clear()
// forgets every entry, and keeps the slots when they fit the next size (no allocation a chunk).
TEST(FlatHashMap, ClearForgetsEveryEntryAndKeepsSlotsThatFit) {
  FlatHashMap<std::uint32_t> map(5000);
  bool inserted = false;
  for (std::uint64_t k = 0; k < 5000; ++k) {
    map.find_or_insert(k * 0x9e3779b97f4a7c15ULL, inserted) = static_cast<std::uint32_t>(k + 1);
  }
  std::size_t capacity = map.capacity();
  map.clear(5000);
  EXPECT_EQ(map.size(), 0u);
  EXPECT_EQ(map.capacity(), capacity);
  for (std::uint64_t k = 0; k < 5000; ++k) {
    ASSERT_EQ(map.find(k * 0x9e3779b97f4a7c15ULL), nullptr) << k;
  }
  map.find_or_insert(0, inserted) = 7; // key 0 too
  EXPECT_TRUE(inserted);
  EXPECT_EQ(map.find_or_insert(0, inserted), 7u);
  EXPECT_FALSE(inserted);
  map.clear(40'000); // more than the slots hold: sized again, for the larger number
  EXPECT_EQ(map.size(), 0u);
  EXPECT_GE(map.capacity(), 50'000u);
  EXPECT_EQ(map.find(0), nullptr);
}

TEST(FlatHashMap, FindsWhatItInsertedThroughGrowthIncludingKeyZero) {
  FlatHashMap<int> map(4);
  bool inserted = false;
  for (std::uint64_t k = 0; k < 10'000; ++k) {
    map.find_or_insert(k * 7919, inserted) = static_cast<int>(k);
    EXPECT_TRUE(inserted);
  }
  EXPECT_EQ(map.size(), 10'000u);
  for (std::uint64_t k = 0; k < 10'000; ++k) {
    const int* value = map.find(k * 7919);
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(*value, static_cast<int>(k));
  }
  EXPECT_EQ(map.find(3), nullptr);
  map.find_or_insert(0, inserted);
  EXPECT_FALSE(inserted);
}

// Taking out the entries a predicate picks, in place, again and again with inserts between: what
// stays is found (including key 0), what is taken is exactly what the predicate picked, handed out
// in ascending order key, and each order key maps back to its key.
TEST(FlatHashMap, ExtractIfTakesWhatThePredicatePicksInOrderAndKeepsTheRestFindable) {
  struct Taken {
    std::uint64_t key;
    std::uint32_t value;
  };
  std::mt19937_64 rng(53);
  FlatHashMap<std::uint32_t> map(2000);
  std::map<std::uint64_t, std::uint32_t> truth;
  for (int round = 0; round < 20; ++round) {
    while (map.size() < 1990) { // near the load limit: long clusters, some wrapping round the end
      std::uint64_t key = truth.empty() || rng() % 500 != 0 ? rng() : 0;
      bool inserted = false;
      map.find_or_insert(key, inserted) = static_cast<std::uint32_t>(key >> 40);
      truth[FlatHashMap<std::uint32_t>::stored(key)] = static_cast<std::uint32_t>(key >> 40);
    }
    std::uint64_t pick = rng() % 3 + 2;
    std::vector<Taken> taken;
    map.extract_if([&](std::uint64_t key, std::uint32_t) { return key % pick == 0; }, taken);
    std::size_t picked = 0;
    for (auto it = truth.begin(); it != truth.end();) {
      if (it->first % pick == 0) {
        ++picked;
        it = truth.erase(it);
      } else {
        ++it;
      }
    }
    ASSERT_EQ(taken.size(), picked) << "round " << round;
    ASSERT_EQ(map.size(), truth.size());
    for (std::size_t i = 0; i < taken.size(); ++i) {
      if (i > 0) {
        ASSERT_LT(taken[i - 1].key, taken[i].key) << "round " << round << " at " << i;
      }
      std::uint64_t key = FlatHashMap<std::uint32_t>::key_of_order(taken[i].key);
      ASSERT_EQ(key % pick, 0u);
      ASSERT_EQ(taken[i].value, static_cast<std::uint32_t>(key >> 40));
      ASSERT_EQ(map.find(key), nullptr);
    }
    for (const auto& [key, value] : truth) {
      const std::uint32_t* found = map.find(key);
      ASSERT_NE(found, nullptr) << "round " << round << ": a key left behind is lost";
      ASSERT_EQ(*found, value);
    }
  }
}
