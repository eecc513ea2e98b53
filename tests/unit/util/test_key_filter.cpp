#include "core/identity/identify.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/util/key_filter.hpp"
#include "tests/unit/fakes.hpp"
#include <algorithm>
#include <gtest/gtest.h>
#include <random>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::testing::OwnedEvent;
using dedupctl::testing::with_header_id;

// Every key given passes; of keys never given, under 1% do (12 bits a key).
TEST(KeyFilter, PassesEveryKeyGivenAndFewOthers) {
  std::mt19937_64 rng(47);
  for (std::size_t keys : {std::size_t{1}, std::size_t{1000}, std::size_t{100'000}}) {
    KeyFilter filter(keys);
    std::vector<std::uint64_t> given(keys);
    for (auto& key : given) {
      key = FlatHashMap<int>::order_key(rng());
      filter.add(key);
    }
    for (auto key : given) {
      ASSERT_TRUE(filter.may_contain(key)) << keys;
    }
    int passed = 0;
    constexpr int k_tries = 200'000;
    for (int i = 0; i < k_tries; ++i) {
      passed += filter.may_contain(FlatHashMap<int>::order_key(rng())) ? 1 : 0;
    }
    EXPECT_LT(passed, k_tries / 100) << keys << " keys";
    EXPECT_LE(filter.bytes(), keys * 12 / 8 + 64) << keys;
  }
}
