#include "core/audit/audit_analyzer.hpp"
#include "core/util/time.hpp"
#include <gtest/gtest.h>

using namespace dedupctl::core;

namespace dedupctl::core {
namespace {

TEST(TimeHistogram, CountsEveryEventOnceInAtMost48BucketsWhateverTheOrder) {
  TimeHistogram h;
  std::int64_t base = 1'795'000'000'000;
  std::int64_t total = 0;
  // Two days in random-ish order, some before the first event, one without a timestamp.
  for (int i = 0; i < 2000; ++i) {
    std::int64_t ts = base + static_cast<std::int64_t>((i * 7919) % 2000) * 86'400;
    h.add(ts, i % 3 == 0 ? Coverage::Expired : Coverage::Covered);
    ++total;
  }
  h.add(base - 3 * 3'600'000, Coverage::Missing);
  ++total;
  h.add(-1, Coverage::Missing);
  ASSERT_LE(h.buckets().size(), TimeHistogram::k_buckets);
  std::int64_t counted = 0;
  for (const auto& bucket : h.buckets()) {
    for (auto n : bucket) {
      counted += n;
    }
  }
  EXPECT_EQ(counted, total) << "the event without a timestamp is left out, every other counted once";
  EXPECT_LE(h.origin_ms(), base - 3 * 3'600'000);
  EXPECT_GT(h.origin_ms() + static_cast<std::int64_t>(h.buckets().size()) * h.width_ms(), base + 1999 * 86'400);
  EXPECT_EQ(h.origin_ms() % h.width_ms(), 0) << "buckets are aligned to their width";
  EXPECT_EQ(h.buckets().front()[static_cast<std::size_t>(Coverage::Missing)], 1);
}

TEST(TimeHistogram, AFewMinutesStayInMinuteBuckets) {
  TimeHistogram h;
  h.add(120'000, Coverage::Covered);
  h.add(125'000, Coverage::Covered);
  h.add(300'000, Coverage::Expired);
  EXPECT_EQ(h.width_ms(), 60'000);
  EXPECT_EQ(h.origin_ms(), 120'000);
  ASSERT_EQ(h.buckets().size(), 4u);
  EXPECT_EQ(h.buckets()[0][static_cast<std::size_t>(Coverage::Covered)], 2);
  EXPECT_EQ(h.buckets()[3][static_cast<std::size_t>(Coverage::Expired)], 1);
}

} // namespace
} // namespace dedupctl::core
