#include "core/audit/coverage.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;

namespace {

constexpr std::int64_t k_hour = 3'600'000;
constexpr std::int64_t k_now = 1'000 * k_hour;

CoveragePolicy policy(std::optional<std::int64_t> ttl = k_hour,
                      std::optional<std::int64_t> retention = 7 * 24 * k_hour) {
  CoveragePolicy p;
  p.now_ms = k_now;
  p.ttl = ttl ? Span::finite(*ttl) : Span::unknown();
  p.retention = retention ? Span::finite(*retention) : Span::unknown();
  return p;
}

RecordState absent() { return RecordState{}; }
RecordState present(std::optional<std::int64_t> pttl, std::string_view value = "done") {
  return present_record(pttl, value);
}
EventFacts at(std::int64_t ts, std::int64_t offset = 10, std::optional<std::int64_t> committed = std::nullopt) {
  return EventFacts{ts, offset, committed};
}

} // namespace

TEST(Coverage, AbsentAtExactlyTheTtlEdgeIsStillMissingOneMsLaterExpired) {
  // expired when ts + TTL + G < now; at equality the record should still be there.
  EXPECT_EQ(classify(absent(), at(k_now - k_hour), policy()).state, Coverage::Missing);
  EXPECT_EQ(classify(absent(), at(k_now - k_hour - 1), policy()).state, Coverage::Expired);
  auto lag = policy();
  lag.max_lag_ms = 10 * 60'000;
  EXPECT_EQ(classify(absent(), at(k_now - k_hour - 1), lag).state, Coverage::Missing);
  EXPECT_EQ(classify(absent(), at(k_now - k_hour - 10 * 60'000 - 1), lag).state, Coverage::Expired);
}

TEST(Coverage, AbsentAtOrPastTheCommittedOffsetIsPending) {
  EXPECT_EQ(classify(absent(), at(0, 10, 10), policy()).state, Coverage::Pending);
  EXPECT_EQ(classify(absent(), at(0, 9, 10), policy()).state, Coverage::Expired);
  // A record present past the committed offset is simply covered (processed, not yet committed).
  EXPECT_EQ(classify(present(8 * 24 * k_hour), at(k_now, 12, 10), policy()).state, Coverage::Covered);
}

TEST(Coverage, UnknownOrInfiniteTtlMakesAbsentRecordsMissing) {
  EXPECT_EQ(classify(absent(), at(0), policy(std::nullopt)).state, Coverage::Missing);
  auto none = policy(std::nullopt);
  none.ttl = Span::infinite();
  EXPECT_EQ(classify(absent(), at(0), none).state, Coverage::Missing);
}

TEST(Coverage, PresentRecordsAreCoveredOrExpiringBeforeRetentionEnds) {
  std::int64_t ts = k_now - 2 * k_hour;
  std::int64_t replayable_until = ts + 7 * 24 * k_hour;
  auto exact = classify(present(replayable_until - k_now), at(ts), policy());
  EXPECT_EQ(exact.state, Coverage::Covered); // lapses exactly when the event leaves the log
  auto short_by_one = classify(present(replayable_until - k_now - 1), at(ts), policy());
  EXPECT_EQ(short_by_one.state, Coverage::Expiring);
  EXPECT_EQ(short_by_one.gap_ms, 1);
  auto no_expiry = classify(present(std::nullopt), at(ts), policy());
  EXPECT_EQ(no_expiry.state, Coverage::Covered);
  EXPECT_TRUE(no_expiry.no_expiry);
  // Unknown retention: nothing is expiring. Infinite: every TTL'd record is.
  EXPECT_EQ(classify(present(1), at(ts), policy(k_hour, std::nullopt)).state, Coverage::Covered);
  auto forever = policy();
  forever.retention = Span::infinite();
  EXPECT_EQ(classify(present(k_hour), at(ts), forever).state, Coverage::Expiring);
}

TEST(Coverage, ClaimsAreInProgressUntilTheGroupMovesPastOrTheLeaseEnds) {
  auto p = policy();
  EXPECT_EQ(classify(present(60'000, "processing"), at(k_now - 60'000, 10, 10), p).state, Coverage::InProgress);
  EXPECT_EQ(classify(present(60'000, "processing:run-7"), at(k_now - 60'000, 9, 10), p).state, Coverage::Orphaned);
  EXPECT_EQ(classify(present(60'000, "INPROGRESS"), at(k_now - p.lease_ms - 1), p).state, Coverage::Orphaned);
  EXPECT_EQ(classify(present(60'000, "INPROGRESS"), at(k_now - p.lease_ms), p).state, Coverage::InProgress);
  EXPECT_EQ(classify(present(std::nullopt, "processingX"), at(k_now), p).state, Coverage::Covered);
  p.in_progress_values = {"SENDING"};
  EXPECT_EQ(classify(present(60'000, "SENDING"), at(k_now), p).state, Coverage::InProgress);
}

TEST(TtlEstimator, BoundsTheConfiguredTtl) {
  TtlEstimator estimator;
  EXPECT_TRUE(estimator.empty());
  // TTL 1h: a record written 10 min after its event, looked at 30 min after the write.
  estimator.observe(30 * 60'000, k_now - 40 * 60'000, k_now);
  estimator.observe(55 * 60'000, k_now - 5 * 60'000, k_now);
  EXPECT_EQ(estimator.low(), 55 * 60'000);
  EXPECT_EQ(estimator.high(), 60 * 60'000);
}

#include "core/audit/retention.hpp"
#include "core/util/errors.hpp"
