// A live Bloom filter's pending events: held until the end, since the consumed event that carries a
// key may come later in the order read (another partition's block).
#include "core/audit/bloom_pending.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;

namespace {

Example at(std::int32_t partition, std::int64_t offset) {
  Example e;
  e.topic = "t";
  e.partition = partition;
  e.offset = offset;
  return e;
}

} // namespace

TEST(BloomPending, APendingEventTheFilterHoldsUnderAKeyNoConsumedEventCarriesWillBeDropped) {
  BloomPending bloom(5);
  bloom.observe(1, true, true, false, [] { return at(0, 0); });  // consumed, in the filter
  bloom.observe(2, true, false, true, [] { return at(0, 5); });  // pending, in the filter, never consumed
  bloom.observe(1, true, false, true, [] { return at(0, 6); });  // pending redelivery of a consumed key
  bloom.observe(3, false, false, true, [] { return at(0, 7); }); // pending, not in the filter: applied
  auto f = bloom.finish();
  ASSERT_TRUE(f);
  EXPECT_EQ(f->id, "bloom-false-positive");
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_EQ(f->count, 1);
  ASSERT_EQ(f->examples.size(), 1u);
  EXPECT_EQ(f->examples[0].offset, 5);
}

TEST(BloomPending, AConsumedEventReadLaterInAnotherPartitionStillCounts) {
  BloomPending bloom(5);
  bloom.observe(9, true, false, true, [] { return at(0, 10); }); // pending in partition 0, read first
  bloom.observe(9, true, true, false, [] { return at(1, 3); });  // consumed in partition 1, read later
  EXPECT_FALSE(bloom.finish());
}

TEST(BloomPending, NothingPendingNothingToSay) {
  BloomPending bloom(5);
  bloom.observe(1, true, true, false, [] { return at(0, 0); });
  bloom.observe(2, false, true, false, [] { return at(0, 1); });
  EXPECT_FALSE(bloom.finish());
}
