#include "core/store/record_state.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

TEST(RecordState, AnInboxRowIsPresentWithItsStatusAndProcessedAtAndNoPttl) {
  RecordState row = inbox_row(1'795'000'000'000, "processing");
  EXPECT_EQ(row.kind, RecordState::Kind::Present);
  EXPECT_EQ(row.value, "processing");
  EXPECT_EQ(row.processed_at_ms, 1'795'000'000'000);
  EXPECT_FALSE(row.pttl_ms) << "an inbox row's remaining TTL is the policy's, counted from processed_at";
  RecordState never = inbox_row(std::nullopt, "");
  EXPECT_EQ(never.kind, RecordState::Kind::Present);
  EXPECT_FALSE(never.processed_at_ms) << "a NULL processed_at: the row never expires";
}

TEST(RecordState, ADefaultRecordIsAbsent) {
  RecordState none;
  EXPECT_EQ(none.kind, RecordState::Kind::Absent);
  EXPECT_FALSE(none.pttl_ms);
  EXPECT_FALSE(none.processed_at_ms);
}

} // namespace
} // namespace dedupctl::core
