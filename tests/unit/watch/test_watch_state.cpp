#include "core/watch/watch_state.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace dedupctl::core;

namespace {

constexpr std::int64_t k_s = 1000;
constexpr std::int64_t k_hour = 3600 * k_s;
constexpr std::int64_t k_t0 = 1'000 * k_hour;

WatchPolicy policy(std::optional<std::int64_t> ttl = k_hour, std::optional<std::int64_t> retention = 24 * k_hour) {
  WatchPolicy p;
  p.policy.ttl = ttl ? Span::finite(*ttl) : Span::unknown();
  p.ttl_declared = ttl.has_value();
  p.policy.retention = retention ? Span::finite(*retention) : Span::infinite();
  return p;
}

TrackedRecord present(std::int64_t lapses_at = k_never_ms) { return {TrackedRecord::Kind::Present, lapses_at}; }
TrackedRecord absent() { return {TrackedRecord::Kind::Absent, k_never_ms}; }
TrackedRecord no_id() { return {TrackedRecord::Kind::NoId, k_never_ms}; }
TrackedRecord claim(std::int64_t lapses_at = k_never_ms) { return {TrackedRecord::Kind::Claim, lapses_at}; }

std::int64_t count(const WatchGauges& g, Coverage state, std::int32_t partition = 0) {
  for (const auto& p : g.partitions) {
    if (p.partition == partition) {
      return p.states[static_cast<std::size_t>(state)];
    }
  }
  ADD_FAILURE() << "no gauge for partition " << partition;
  return -1;
}

} // namespace

TEST(WatchState, TrackTurnsARemainingTtlIntoTheTimeTheRecordLapses) {
  CoveragePolicy p = policy().policy;
  RecordState redis = present_record(30 * k_s, "done");
  EXPECT_EQ(track(redis, k_t0, p).kind, TrackedRecord::Kind::Present);
  EXPECT_EQ(track(redis, k_t0, p).lapses_at_ms, k_t0 + 30 * k_s);
  RecordState forever = present_record(std::nullopt, "done");
  EXPECT_EQ(track(forever, k_t0, p).lapses_at_ms, k_never_ms);
  RecordState claimed = present_record(60 * k_s, "processing:run-1");
  EXPECT_EQ(track(claimed, k_t0, p).kind, TrackedRecord::Kind::Claim);
  // An inbox row keeps its processed_at: it stays until the cleanup job deletes it.
  RecordState row = inbox_row(k_t0 - 10 * k_s, "done");
  EXPECT_EQ(track(row, k_t0, p).kind, TrackedRecord::Kind::Row);
  EXPECT_EQ(track(row, k_t0, p).lapses_at_ms, k_t0 - 10 * k_s);
  EXPECT_EQ(track(inbox_row(k_t0, "processing"), k_t0, p).kind, TrackedRecord::Kind::RowClaim);
  // A NULL processed_at never expires, as a record without a TTL.
  EXPECT_EQ(track(inbox_row(std::nullopt, "done"), k_t0, p).lapses_at_ms, k_never_ms);
  EXPECT_EQ(track(RecordState{}, k_t0, p).kind, TrackedRecord::Kind::Absent);
}

TEST(WatchState, APartitionShowsNoGaugeUntilItWasReadFromItsStart) {
  WatchState state(policy());
  state.set_partition("orders", 0, std::nullopt, 0);
  state.append("orders", 0, 0, k_t0, "", present());
  EXPECT_TRUE(state.evaluate(k_t0, {}).partitions.empty());
  state.set_complete("orders", 0);
  auto g = state.evaluate(k_t0, {});
  ASSERT_EQ(g.partitions.size(), 1u);
  EXPECT_EQ(count(g, Coverage::Covered), 1);
}

TEST(WatchState, ARecordIsExpiredAtItsExpiryTimeWithoutAnotherLookup) {
  WatchState state(policy(10 * k_s, 24 * k_hour));
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  // Written at its event's time with a 10 s TTL.
  state.append("orders", 0, 5, k_t0, "", present(k_t0 + 10 * k_s));
  auto before = state.evaluate(k_t0 + 4 * k_s, {});
  EXPECT_EQ(count(before, Coverage::Expiring), 1); // it lapses long before the event leaves the log
  EXPECT_DOUBLE_EQ(before.seconds_until_ttl_gap.at("orders"), 6.0);
  auto after = state.evaluate(k_t0 + 11 * k_s, {});
  EXPECT_EQ(count(after, Coverage::Expired), 1);
  EXPECT_EQ(count(after, Coverage::Expiring), 0);
  EXPECT_DOUBLE_EQ(after.seconds_until_ttl_gap.at("orders"), 0.0);
}

TEST(WatchState, NoGapAheadIsInfinityAndARecordOutlivingItsEventIsCovered) {
  WatchState state(policy(48 * k_hour, 24 * k_hour));
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  state.append("orders", 0, 0, k_t0, "", present(k_t0 + 48 * k_hour));
  state.append("orders", 0, 1, k_t0, "", present());
  auto g = state.evaluate(k_t0 + k_s, {});
  EXPECT_EQ(count(g, Coverage::Covered), 2);
  EXPECT_TRUE(std::isinf(g.seconds_until_ttl_gap.at("orders")));
}

TEST(WatchState, ARecordThatVanishedAtARefreshIsMissingWithinItsTtl) {
  WatchState state(policy());
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  state.append("orders", 0, 7, k_t0, "", present(k_t0 + k_hour));
  EXPECT_TRUE(state.update("orders", 0, 7, absent()));
  auto g = state.evaluate(k_t0 + k_s, {});
  EXPECT_EQ(count(g, Coverage::Missing), 1);
  EXPECT_EQ(count(g, Coverage::Covered), 0);
  EXPECT_FALSE(state.update("orders", 0, 8, absent())); // not held
  EXPECT_FALSE(state.update("orders", 1, 7, absent()));
}

TEST(WatchState, UpdateFindsEventsAcrossBlocksAndGaps) {
  WatchState state(policy());
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  for (std::int64_t o = 0; o < 10'000; ++o) {
    state.append("orders", 0, o * 3, k_t0, "", present());
  }
  EXPECT_TRUE(state.update("orders", 0, 3 * 4096, absent()));
  EXPECT_TRUE(state.update("orders", 0, 3 * 9999, absent()));
  EXPECT_FALSE(state.update("orders", 0, 3 * 4096 + 1, absent()));
  auto g = state.evaluate(k_t0, {});
  EXPECT_EQ(count(g, Coverage::Missing), 2);
  EXPECT_EQ(count(g, Coverage::Covered), 9998);
  EXPECT_EQ(state.next_offset("orders", 0), 3 * 9999 + 1);
}

TEST(WatchState, EventsLeavingTheLogLeaveTheGauges) {
  WatchState state(policy());
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  for (std::int64_t o = 0; o < 5000; ++o) {
    state.append("orders", 0, o, k_t0, "", present());
  }
  state.set_partition("orders", 0, std::nullopt, 4500);
  EXPECT_EQ(state.events(), 500);
  EXPECT_EQ(count(state.evaluate(k_t0, {}), Coverage::Covered), 500);
  state.append("orders", 0, 3, k_t0, "", present()); // before the log start: not held
  EXPECT_EQ(state.events(), 500);
  state.set_partition("orders", 0, std::nullopt, 6000);
  EXPECT_EQ(state.events(), 0);
  EXPECT_EQ(state.next_offset("orders", 0), 6000);
}

TEST(WatchState, ClaimsAreInProgressWithinTheLeaseAndOrphanedAfter) {
  WatchPolicy p = policy();
  p.policy.lease_ms = 60 * k_s;
  WatchState state(p);
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  state.append("orders", 0, 0, k_t0, "", claim());
  EXPECT_EQ(count(state.evaluate(k_t0 + 30 * k_s, {}), Coverage::InProgress), 1);
  EXPECT_EQ(count(state.evaluate(k_t0 + 61 * k_s, {}), Coverage::Orphaned), 1);
}

TEST(WatchState, AbsentRecordsAtOrPastTheCommittedOffsetArePending) {
  WatchState state(policy());
  state.set_partition("orders", 0, 10, 0);
  state.set_complete("orders", 0);
  state.append("orders", 0, 9, k_t0, "", absent());
  state.append("orders", 0, 10, k_t0, "", absent());
  auto g = state.evaluate(k_t0 + k_s, {});
  EXPECT_EQ(count(g, Coverage::Missing), 1);
  EXPECT_EQ(count(g, Coverage::Pending), 1);
}

TEST(WatchState, ASeekRepliesWhatItsWindowWouldReapplyBySideEffectClass) {
  WatchPolicy p = policy(10 * k_s);
  p.side_effects = {{"charge", SideEffect::External}, {"cache", SideEffect::Idempotent}};
  WatchState state(p);
  state.set_partition("orders", 0, 100, 0);
  state.set_complete("orders", 0);
  state.append("orders", 0, 10, k_t0, "charge", absent());                // before the seek
  state.append("orders", 0, 50, k_t0, "charge", absent());                // missing → re-applied
  state.append("orders", 0, 51, k_t0, "cache", absent());                 // idempotent class
  state.append("orders", 0, 52, k_t0, "unknown-type", no_id());           // no id: re-applied, external
  state.append("orders", 0, 53, k_t0, "charge", present());               // covered: skipped
  state.append("orders", 0, 54, k_t0, "charge", present(k_t0 + 5 * k_s)); // lapses at +5 s
  state.append("orders", 0, 120, k_t0, "charge", absent());               // past committed: pending
  WatchSeek seek{"@-1h", {{{"orders", 0}, 50}}};
  auto g = state.evaluate(k_t0 + k_s, {seek});
  using Key = std::tuple<std::string, std::string, std::string>;
  EXPECT_EQ(g.would_reapply.at(Key("orders", "@-1h", "external")), 2);
  EXPECT_EQ(g.would_reapply.at(Key("orders", "@-1h", "idempotent")), 1);
  EXPECT_EQ(g.would_reapply.at(Key("orders", "@-1h", "internal")), 0);
  // Time passes: the record at 54 lapses, and 10 s after the events they are expired, not missing.
  auto later = state.evaluate(k_t0 + 11 * k_s, {seek});
  EXPECT_EQ(later.would_reapply.at(Key("orders", "@-1h", "external")), 3);
  EXPECT_EQ(count(later, Coverage::Expired), 4);
  EXPECT_EQ(count(later, Coverage::Pending), 1);
}

TEST(WatchState, AnUndeclaredTtlIsEstimatedFromTheRecordsSeen) {
  WatchState state(policy(std::nullopt));
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  state.append("orders", 0, 0, k_t0, "", absent());
  EXPECT_EQ(count(state.evaluate(k_t0 + 2 * k_hour, {}), Coverage::Missing), 1); // TTL unknown
  // A record written at its event's time showed 10 s left 50 s later: the TTL is at most 60 s.
  state.observe_ttl(10 * k_s, k_t0, k_t0 + 50 * k_s);
  auto g = state.evaluate(k_t0 + 2 * k_hour, {});
  EXPECT_EQ(g.ttl_estimate_high_ms, 60 * k_s);
  EXPECT_EQ(count(g, Coverage::Expired), 1);
}

TEST(WatchState, EventsCostAtMostTwentyFourBytesInFullBlocks) {
  WatchState state(policy());
  state.set_partition("orders", 0, std::nullopt, 0);
  for (std::int64_t o = 0; o < 4096 * 16; ++o) {
    state.append("orders", 0, o, k_t0, "", present());
  }
  EXPECT_LE(static_cast<double>(state.bytes()) / static_cast<double>(state.events()), 24.0);
}

TEST(WatchState, AKeyspaceLostRecordsWhenItIsAnotherServerOrShrankMoreThanExpiryExplains) {
  KeyspaceProbe before{"abc/master;", 100, 10, 0};
  EXPECT_FALSE(keyspace_lost_records(before, before));
  EXPECT_FALSE(keyspace_lost_records(before, {"abc/master;", 95, 15, 0}));  // five expired
  EXPECT_FALSE(keyspace_lost_records(before, {"abc/master;", 90, 12, 8}));  // two expired, eight evicted
  EXPECT_FALSE(keyspace_lost_records(before, {"abc/master;", 150, 10, 0})); // grew
  EXPECT_TRUE(keyspace_lost_records(before, {"abc/master;", 94, 15, 0}));   // one more went
  EXPECT_TRUE(keyspace_lost_records(before, {"abc/master;", 0, 10, 0}));    // FLUSHALL
  EXPECT_TRUE(keyspace_lost_records(before, {"def/master;", 100, 0, 0}));   // restarted
  EXPECT_TRUE(keyspace_lost_records(before, {"abc/slave;", 100, 10, 0}));   // demoted
}

// An inbox row is not gone when processed_at + the inbox retention has passed: the row is there until
// the cleanup job deletes it, so a claim left `processing` two hours ago is orphaned (as the audit
// says), never expired; a done row is expiring with the time the cleanup has left.
TEST(WatchState, AnInboxRowStaysUntilALookupSeesItGone) {
  WatchState state(policy(k_hour, 24 * k_hour));
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  CoveragePolicy p = policy(k_hour).policy;
  state.append("orders", 0, 0, k_t0 - 2 * k_hour, "", track(inbox_row(k_t0 - 2 * k_hour, "processing"), k_t0, p));
  state.append("orders", 0, 1, k_t0 - 2 * k_hour, "", track(inbox_row(k_t0 - 2 * k_hour, "done"), k_t0, p));
  state.append("orders", 0, 2, k_t0, "", track(inbox_row(k_t0 - 10 * k_s, "done"), k_t0, p));
  auto g = state.evaluate(k_t0, {});
  EXPECT_EQ(count(g, Coverage::Orphaned), 1);
  EXPECT_EQ(count(g, Coverage::Expiring), 2);
  EXPECT_EQ(count(g, Coverage::Expired), 0);
  EXPECT_DOUBLE_EQ(g.seconds_until_ttl_gap.at("orders"), 0.0); // the row of offset 1 is past its retention
}

// A layout's record: its own expiry bounds when it lapses, and a claim with a lease of its own is
// tracked until the lease ends (then the library takes it over).
TEST(WatchState, TrackKeepsALayoutsExpiryAndAClaimsLease) {
  CoveragePolicy p = policy().policy;
  RecordState json = present_record(3600 * k_s, "{}");
  json.expires_at_ms = k_t0 + 60 * k_s;
  EXPECT_EQ(track(json, k_t0, p).lapses_at_ms, k_t0 + 60 * k_s) << "the library's expiry comes first";
  RecordState claim = present_record(3600 * k_s, "{}");
  claim.claim = true;
  claim.claim_until_ms = k_t0 + 5 * k_s;
  EXPECT_EQ(track(claim, k_t0, p).kind, TrackedRecord::Kind::LeasedClaim);
  EXPECT_EQ(track(claim, k_t0, p).lapses_at_ms, k_t0 + 5 * k_s);
}

// A layout's claim with a lease of its own is in progress until the lease ends, whatever the
// plain lease says, then orphaned; where the library takes orphans over, a seek re-applies it.
TEST(WatchState, ALeasedClaimIsOrphanedWhenItsOwnLeaseEndsAndReappliedWhereTheLibrarySays) {
  WatchPolicy p = policy();
  p.policy.lease_ms = 3600 * k_s; // the plain rule would keep it in progress for an hour
  p.policy.orphans_reapplied = true;
  p.side_effects = {{"charge", SideEffect::External}};
  WatchState state(p);
  state.set_partition("orders", 0, 100, 0);
  state.set_complete("orders", 0);
  state.append("orders", 0, 60, k_t0, "charge", {TrackedRecord::Kind::LeasedClaim, k_t0 + 5 * k_s});
  WatchSeek seek{"@-1h", {{{"orders", 0}, 50}}};
  using Key = std::tuple<std::string, std::string, std::string>;
  auto before = state.evaluate(k_t0 + k_s, {seek});
  EXPECT_EQ(count(before, Coverage::InProgress), 1);
  EXPECT_EQ(before.would_reapply.at(Key("orders", "@-1h", "external")), 0);
  auto after = state.evaluate(k_t0 + 5 * k_s, {seek});
  EXPECT_EQ(count(after, Coverage::Orphaned), 1);
  EXPECT_EQ(after.would_reapply.at(Key("orders", "@-1h", "external")), 1);
}

// --effects: each event's effect is kept with its record (in the same byte) and counted beside its
// state, as the audit counts it; a record that lapses turns an applied event unguarded without
// another lookup, and a refresh keeps the effect it brings.
TEST(WatchState, EffectsAreCountedBesideTheStatesAndFollowTheRecordsLapse) {
  WatchPolicy p = policy(10 * k_s, 24 * k_hour);
  p.effects = true;
  WatchState state(p);
  state.set_partition("orders", 0, std::nullopt, 0);
  state.set_complete("orders", 0);
  auto with = [](TrackedRecord r, Effect e) {
    r.effect = e;
    return r;
  };
  state.append("orders", 0, 0, k_t0, "", with(present(k_t0 + 10 * k_s), Effect::Applied)); // covered, then expired
  state.append("orders", 0, 1, k_t0, "", with(present(), Effect::NotApplied));             // lost
  state.append("orders", 0, 2, k_t0, "", with(absent(), Effect::Applied));                 // missing: unguarded
  state.append("orders", 0, 3, k_t0, "", with(claim(k_t0 + 60 * k_s), Effect::Applied));   // in progress
  state.append("orders", 0, 4, k_t0, "", no_id());                                         // not checked
  auto before = state.evaluate(k_t0 + 4 * k_s, {});
  ASSERT_EQ(before.effects.count("orders"), 1u);
  const auto& e = before.effects.at("orders");
  EXPECT_EQ(e.checked, 4);
  EXPECT_EQ(e.applied, 3);
  EXPECT_EQ(e.not_applied, 1);
  EXPECT_EQ(e.lost, 1);
  EXPECT_EQ(e.unguarded, 1);
  EXPECT_EQ(state.evaluate(k_t0 + 11 * k_s, {}).effects.at("orders").unguarded, 2) << "offset 0's record lapsed";
  // A refresh: offset 1's effect appeared.
  state.update("orders", 0, 1, with(present(), Effect::Applied));
  EXPECT_EQ(state.evaluate(k_t0 + 4 * k_s, {}).effects.at("orders").lost, 0);
  // Without --effects, no effect gauge at all.
  WatchState plain(policy());
  plain.set_partition("orders", 0, std::nullopt, 0);
  plain.set_complete("orders", 0);
  plain.append("orders", 0, 0, k_t0, "", present());
  EXPECT_TRUE(plain.evaluate(k_t0, {}).effects.empty());
}
