#include "core/audit/audit_analyzer.hpp"
#include "core/audit/tiers.hpp"

#include <gtest/gtest.h>

#include <array>

using namespace dedupctl::core;

namespace {

constexpr std::int64_t k_hour = 3'600'000;
constexpr std::int64_t k_day = 24 * k_hour;
constexpr std::int64_t k_now = 1'000 * k_hour;

Tier tier(std::string name, Span ttl = Span::unknown(), bool durable = true) {
  Tier t;
  t.name = std::move(name);
  t.policy.now_ms = k_now;
  t.policy.ttl = ttl;
  t.policy.retention = Span::finite(7 * k_day);
  t.survives_restart = durable;
  return t;
}

// memory:, then Redis with a 1h TTL (read from each key), then an inbox whose cleanup keeps rows 30 days.
std::vector<Tier> chain() {
  return {tier("memory:", Span::finite(0), false), tier("redis://r:6379"),
          tier("postgres://p/db", Span::finite(30 * k_day))};
}

struct Probe {
  Event event;
  Identity identity;
  std::array<std::string_view, 3> keys{"m", "r", "p"};
};

Probe at(std::int64_t age_ms, std::int64_t offset = 5) {
  Probe p;
  p.event.topic = "pay";
  p.event.offset = offset;
  p.event.timestamp_ms = k_now - age_ms;
  p.identity.has_id = true;
  p.identity.id = "e-1";
  return p;
}

// The record the chain hands its analyzer, classified as that analyzer would (any TTL: it is the
// chain's; the same retention).
Verdict judged(const RecordState& record, const Probe& p, std::optional<std::int64_t> committed = 100) {
  CoveragePolicy policy = tier("chain").policy;
  return classify(record, EventFacts{p.event.timestamp_ms, p.event.offset, committed}, policy);
}

const RecordState k_absent{};

} // namespace

TEST(Tiers, ARecordTheShortTtlTierLostIsTheInboxsAndTheGapIsCountedForRedis) {
  TierChain tiers(chain(), 5);
  auto p = at(3 * k_hour);
  RecordState row = inbox_row(k_now - 3 * k_hour, "");
  std::array<const RecordState*, 3> records{&k_absent, &k_absent, &row};
  const RecordState& best = tiers.best(p.event, p.identity, p.keys, records, 100);
  auto verdict = judged(best, p);
  // The row lapses 27 days from now, past the event's 7 days in the log: covered.
  EXPECT_EQ(verdict.state, Coverage::Covered);
  EXPECT_FALSE(verdict.no_expiry);
  EXPECT_EQ(tiers.held_by_others(), (std::vector<std::int64_t>{0, 1, 0}));
  auto findings = tiers.findings();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "tier-gap-covered");
  EXPECT_EQ(findings[0].severity, Severity::Info);
  EXPECT_EQ(findings[0].count, 1);
  EXPECT_NE(findings[0].title.find("redis://r:6379"), std::string::npos);
  ASSERT_EQ(findings[0].examples.size(), 1u);
  EXPECT_EQ(findings[0].examples[0].dedup_key, "r");
  EXPECT_EQ(findings[0].examples[0].note, "missing here; postgres://p/db holds it (covered)");
}

TEST(Tiers, AnExpiringRecordIsAGapWhereAnotherTierCoversTheEvent) {
  TierChain tiers(chain(), 5);
  auto p = at(k_hour / 2);
  RecordState key = present_record(k_hour / 2, "1");
  RecordState row = inbox_row(k_now - k_hour / 2, "");
  std::array<const RecordState*, 3> records{&k_absent, &key, &row};
  EXPECT_EQ(judged(tiers.best(p.event, p.identity, p.keys, records, 100), p).state, Coverage::Covered);
  EXPECT_EQ(tiers.held_by_others(), (std::vector<std::int64_t>{0, 1, 0}));
}

TEST(Tiers, OfTwoExpiringRecordsTheOneThatLapsesLaterIsTheVerdict) {
  TierChain tiers({tier("redis://a"), tier("redis://b")}, 5);
  auto p = at(k_hour);
  RecordState soon = present_record(k_hour, "1");
  RecordState later = present_record(3 * k_day, "1");
  std::array<const RecordState*, 2> records{&soon, &later};
  std::array<std::string_view, 2> keys{"a", "b"};
  auto verdict = judged(tiers.best(p.event, p.identity, keys, records, 100), p);
  EXPECT_EQ(verdict.state, Coverage::Expiring);
  // The event leaves the log in 7d - 1h; the later record lapses in 3d.
  EXPECT_EQ(verdict.gap_ms, 7 * k_day - k_hour - 3 * k_day);
  EXPECT_EQ(tiers.held_by_others(), (std::vector<std::int64_t>{0, 0})); // both expire: neither covers the other
}

TEST(Tiers, AWindowInMemoryProtectsNothingAcrossASeekAndIsNoGap) {
  TierChain tiers(chain(), 5);
  auto p = at(k_hour);
  RecordState held = present_record(std::nullopt, "1"); // what a window would say live
  std::array<const RecordState*, 3> records{&held, &k_absent, &k_absent};
  const RecordState& best = tiers.best(p.event, p.identity, p.keys, records, 100);
  EXPECT_EQ(best.kind, RecordState::Kind::Absent);
  EXPECT_EQ(tiers.held_by_others(), (std::vector<std::int64_t>{0, 0, 0}));
  EXPECT_TRUE(tiers.findings().empty());
}

TEST(Tiers, AbsentEverywhereIsAbsentAndPendingIsNoGap) {
  TierChain tiers(chain(), 5);
  auto p = at(k_hour, 200);
  RecordState row = inbox_row(k_now - k_hour, "");
  std::array<const RecordState*, 3> nothing{&k_absent, &k_absent, &k_absent};
  EXPECT_EQ(tiers.best(p.event, p.identity, p.keys, nothing, 100).kind, RecordState::Kind::Absent);
  // Not consumed yet (offset 200, committed 100): Redis's absence is no gap, the row is the verdict.
  std::array<const RecordState*, 3> records{&k_absent, &k_absent, &row};
  EXPECT_EQ(judged(tiers.best(p.event, p.identity, p.keys, records, 100), p).state, Coverage::Covered);
  EXPECT_EQ(tiers.held_by_others(), (std::vector<std::int64_t>{0, 0, 0}));
}

TEST(Tiers, AClaimProtectsAndARecordItsLibraryTakesOverIsExpired) {
  TierChain tiers(chain(), 5);
  auto p = at(5 * 60'000); // within its lease, and no group has moved past it
  RecordState claim = present_record(k_hour, "processing");
  std::array<const RecordState*, 3> claimed{&k_absent, &claim, &k_absent};
  EXPECT_EQ(judged(tiers.best(p.event, p.identity, p.keys, claimed, std::nullopt), p, std::nullopt).state,
            Coverage::InProgress);
  EXPECT_EQ(tiers.held_by_others(), (std::vector<std::int64_t>{0, 0, 1}));

  RecordState lapsed = present_record(k_hour, "{}");
  lapsed.expires_at_ms = k_now - 1; // the library's own expiry passed
  std::array<const RecordState*, 3> records{&k_absent, &lapsed, &k_absent};
  const RecordState& best = tiers.best(p.event, p.identity, p.keys, records, 100);
  EXPECT_EQ(judged(best, p).state, Coverage::Expired);
}

TEST(Tiers, AnOrphanedClaimProtectsOnlyWhereItsLibraryLeavesIt) {
  auto p = at(k_hour);
  RecordState orphan = present_record(std::nullopt, "{}");
  orphan.claim = true;
  orphan.claim_until_ms = k_now - 1;
  for (bool reapplied : {false, true}) {
    auto tiers_of = chain();
    tiers_of[1].policy.orphans_reapplied = reapplied;
    TierChain tiers(tiers_of, 5);
    std::array<const RecordState*, 3> records{&k_absent, &orphan, &k_absent};
    auto verdict = judged(tiers.best(p.event, p.identity, p.keys, records, 100), p);
    EXPECT_EQ(verdict.state, reapplied ? Coverage::Expired : Coverage::Orphaned) << reapplied;
  }
}

TEST(Tiers, TheChainsTtlIsTheLongestOfTheDurableTiers) {
  auto ttl = [](Span span) {
    TtlDecision d;
    d.span = span;
    d.source = TtlSource::Flag;
    return d;
  };
  auto tiers = chain();
  EXPECT_EQ(TierChain::chain_ttl({window_ttl(), ttl(Span::finite(k_hour)), ttl(Span::finite(30 * k_day))}, tiers).span,
            Span::finite(30 * k_day));
  EXPECT_EQ(TierChain::chain_ttl({window_ttl(), ttl(Span::unknown()), ttl(Span::finite(30 * k_day))}, tiers).span,
            Span::unknown());
  EXPECT_EQ(TierChain::chain_ttl({window_ttl(), ttl(Span::unknown()), ttl(Span::infinite())}, tiers).span,
            Span::infinite());
  EXPECT_EQ(
      TierChain::chain_ttl({ttl(Span::infinite()), ttl(Span::finite(k_hour)), ttl(Span::finite(2 * k_hour))}, tiers)
          .span,
      Span::finite(2 * k_hour)); // the first tier is memory: its figure does not count
}

TEST(Tiers, ASettledTtlDecidesTheDeferredAbsentRecords) {
  AuditOptions options;
  options.policy.now_ms = k_now;
  options.policy.retention = Span::finite(7 * k_day);
  AuditAnalyzer analyzer(options); // no TTL: absent records wait for the end
  analyzer.set_partition("pay", 0, 100, WindowBounds{0, 100, std::nullopt});
  auto old = at(2 * k_day, 1);
  auto young = at(k_hour, 2);
  analyzer.observe(old.event, old.identity, "k1", k_absent);
  analyzer.observe(young.event, young.identity, "k2", k_absent);
  TtlDecision settled;
  settled.span = Span::finite(k_day);
  settled.source = TtlSource::InboxRetentionFlag;
  analyzer.settle_ttl(settled);
  auto result = analyzer.finish();
  EXPECT_EQ(result.ttl.span, Span::finite(k_day));
  EXPECT_EQ(result.ttl.source, TtlSource::InboxRetentionFlag);
  EXPECT_EQ(result.states[static_cast<std::size_t>(Coverage::Expired)], 1);
  EXPECT_EQ(result.states[static_cast<std::size_t>(Coverage::Missing)], 1);
}
