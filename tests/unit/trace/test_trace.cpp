#include "core/trace/trace.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

constexpr std::int64_t k_hour = 3'600'000;
constexpr std::int64_t k_now = 1'795'000'000'000;

TraceOccurrence copy(std::int64_t offset, std::int64_t age, std::optional<bool> delivered, std::uint64_t fp = 7) {
  TraceOccurrence o;
  o.topic = "pay";
  o.offset = offset;
  o.timestamp_ms = k_now - age;
  o.type = "PaymentCharged";
  o.fingerprint = fp;
  o.size = 120;
  o.delivered = delivered;
  return o;
}

TracePolicy policy(std::int64_t ttl = k_hour) {
  TracePolicy p;
  p.now_ms = k_now;
  p.ttl = Span::finite(ttl);
  return p;
}

Trace trace_of(std::vector<TraceOccurrence> occ, TraceRecord::State state, std::string value = "") {
  Trace t;
  t.event_id = "e-1";
  t.occurrences = std::move(occ);
  t.dedup_keys = {"dedup:e-1"};
  t.record.state = state;
  if (state == TraceRecord::State::Present) {
    t.record.value = value;
    t.record.pttl_ms = 10 * 60'000;
  }
  return t;
}

TEST(Trace, TwoConsumedCopiesFurtherApartThanTheTtlWereLikelyAppliedTwice) {
  auto t = trace_of({copy(3, 5 * k_hour, true), copy(90, 2 * k_hour, true)}, TraceRecord::State::Absent);
  auto v = decide_trace(t, policy());
  EXPECT_EQ(v.id, "applied-twice");
  EXPECT_NE(v.text.find("the record had expired when the second copy arrived"), std::string::npos);
  ASSERT_GE(v.evidence.size(), 2u);
  EXPECT_NE(v.evidence[0].find("3h apart"), std::string::npos) << v.evidence[0];
  // Within the TTL of each other, the second copy met the record: not applied twice.
  auto close = trace_of({copy(3, 90 * 60'000, true), copy(90, 60 * 60'000, true)}, TraceRecord::State::Absent);
  EXPECT_NE(decide_trace(close, policy()).id, "applied-twice");
}

TEST(Trace, AMissingRecordWithinTheTtlIsLostState) {
  auto t = trace_of({copy(3, 10 * 60'000, true)}, TraceRecord::State::Absent);
  auto v = decide_trace(t, policy());
  EXPECT_EQ(v.id, "state-lost");
  EXPECT_NE(v.text.find("flush, failover or eviction"), std::string::npos);
}

TEST(Trace, DifferentPayloadsUnderOneIdAreIdReuseWhateverTheRecord) {
  auto t = trace_of({copy(3, 10 * 60'000, true, 1), copy(4, 9 * 60'000, true, 2)}, TraceRecord::State::Present, "done");
  auto v = decide_trace(t, policy());
  EXPECT_EQ(v.id, "id-reused");
  EXPECT_EQ(v.evidence.size(), 2u);
}

TEST(Trace, AnInProgressClaimBelowTheCommittedOffsetIsOrphaned) {
  auto t = trace_of({copy(3, 10 * 60'000, true)}, TraceRecord::State::Present, "processing");
  EXPECT_EQ(decide_trace(t, policy()).id, "claim-orphaned");
  auto pending = trace_of({copy(3, 10 * 60'000, false)}, TraceRecord::State::Present, "processing");
  EXPECT_EQ(decide_trace(pending, policy()).id, "protected") << "not consumed yet: the claim is live";
}

TEST(Trace, AConsumedEventWhoseRecordLapsedIsExposedAndAHeldRecordProtects) {
  auto exposed = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Absent);
  EXPECT_EQ(decide_trace(exposed, policy()).id, "exposed");
  auto held =
      trace_of({copy(3, 5 * k_hour, true), copy(4, 5 * k_hour - 1000, true)}, TraceRecord::State::Present, "done");
  auto v = decide_trace(held, policy());
  EXPECT_EQ(v.id, "protected");
  EXPECT_NE(v.evidence[0].find("dedup:e-1 holds 'done', 10m left"), std::string::npos) << v.evidence[0];
  auto ahead = trace_of({copy(3, 5 * k_hour, false)}, TraceRecord::State::Absent);
  EXPECT_EQ(decide_trace(ahead, policy()).id, "protected");
}

// --effects: a held record over an absent effect is lost; a record gone says whether the seek applies
// the event a second time or for the first time; the effect is the first evidence.
TEST(Trace, TheEffectBesideTheRecordDecidesLostAndWhatASeekWouldDo) {
  auto held = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Present, "done");
  held.effect = false;
  auto lost = decide_trace(held, policy(24 * k_hour));
  EXPECT_EQ(lost.id, "effect-lost");
  EXPECT_NE(lost.text.find("no seek will apply it"), std::string::npos) << lost.text;
  ASSERT_FALSE(lost.evidence.empty());
  EXPECT_EQ(lost.evidence[0], "its effect is absent (--effects)");
  held.effect = true;
  EXPECT_EQ(decide_trace(held, policy(24 * k_hour)).id, "protected");
  held.effect.reset();
  EXPECT_EQ(decide_trace(held, policy(24 * k_hour)).id, "protected") << "not checked: as before";

  auto gone = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Absent);
  gone.effect = true;
  auto twice = decide_trace(gone, policy());
  EXPECT_EQ(twice.id, "exposed");
  EXPECT_EQ(twice.text.rfind("applied once, unguarded; ", 0), 0u) << twice.text;
  EXPECT_NE(twice.text.find("(a second time)"), std::string::npos) << twice.text;
  gone.effect = false;
  auto repair = decide_trace(gone, policy());
  EXPECT_EQ(repair.text.rfind("never applied; ", 0), 0u) << repair.text;
  EXPECT_NE(repair.text.find("the seek repairs it"), std::string::npos) << repair.text;
  // A claim whose work was done: its effect is evidence, its verdict the claim's.
  auto claimed = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Present, "processing");
  claimed.effect = true;
  auto orphan = decide_trace(claimed, policy(24 * k_hour));
  EXPECT_EQ(orphan.id, "claim-orphaned");
  EXPECT_EQ(orphan.evidence[0], "its effect exists (--effects)");
}

TEST(Trace, AnIdNotInTheLogIsNotFoundWithNotesOnItsShape) {
  Trace t;
  t.event_id = " e-17";
  t.notes = id_notes(t.event_id, {"e-170", "e-171"});
  auto v = decide_trace(t, policy());
  EXPECT_EQ(v.id, "not-found");
  ASSERT_EQ(v.evidence.size(), 2u);
  EXPECT_NE(v.evidence[0].find("stray whitespace"), std::string::npos);
  EXPECT_NE(v.evidence[1].find("looks truncated: the log has e-170, e-171"), std::string::npos);
  EXPECT_TRUE(id_notes("e-17", {}).empty());
}

TEST(Trace, TheTimelineIsInTimeOrderWithTheLapseAndNow) {
  auto t = trace_of({copy(90, 2 * k_hour, true), copy(3, 5 * k_hour, true)}, TraceRecord::State::Absent);
  auto lines = timeline(t, policy());
  ASSERT_GE(lines.size(), 4u);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    EXPECT_LE(lines[i - 1].at_ms, lines[i].at_ms);
  }
  EXPECT_NE(lines[0].what.find("@3"), std::string::npos);
  EXPECT_NE(lines[1].what.find("lapses at the latest"), std::string::npos) << lines[1].what;
  EXPECT_NE(lines.back().what.find("now: no record under dedup:e-1"), std::string::npos) << lines.back().what;
}

// A layout's record past its own expiry is exposed although its key is there (not state-lost, even
// within the TTL): its library applies the event again. A claim past its own lease is orphaned and
// taken over, where a plain claim is skipped; the record's fields are its evidence.
TEST(Trace, ALayoutsLapsedRecordIsExposedAndALapsedClaimIsTakenOver) {
  TracePolicy p = policy();
  p.layout = "powertools-python";
  auto expired = trace_of({copy(3, 10 * 60'000, true)}, TraceRecord::State::Present, "{}");
  expired.record.lapsed = true;
  expired.record.fields = {{"status", "COMPLETED"}, {"expiration", "1794999999"}};
  auto v = decide_trace(expired, p);
  EXPECT_EQ(v.id, "exposed");
  EXPECT_NE(v.text.find("powertools-python treats it as expired although the key is still there"), std::string::npos)
      << v.text;
  EXPECT_NE(v.evidence.at(0).find("status=COMPLETED expiration=1794999999"), std::string::npos) << v.evidence.at(0);
  auto fresh = expired;
  fresh.record.lapsed = false;
  EXPECT_EQ(decide_trace(fresh, p).id, "protected");

  auto claim = trace_of({(copy)(3, 10 * 60'000, std::nullopt)}, TraceRecord::State::Present, "{}"); // not consumed
  claim.record.claim = true;
  claim.record.lapsed = true;
  auto taken = decide_trace(claim, p);
  EXPECT_EQ(taken.id, "claim-orphaned") << "its lease passed, whether or not the group moved past it";
  EXPECT_NE(taken.text.find("powertools-python takes the claim over and applies the event again"), std::string::npos)
      << taken.text;
}

// A value the library cannot use (core::RecordState): taken over, it is exposed as a lapsed record is;
// failed on at every delivery, it holds the event, and the verdict says why.
TEST(Trace, AValueTheLibraryCannotUseIsExposedWhenTakenOverAndHeldWhenFailedOn) {
  TracePolicy p = policy();
  p.layout = "powertools-python";
  auto taken = trace_of({copy(3, 10 * 60'000, true)}, TraceRecord::State::Present, "done");
  taken.record.taken_over = true;
  taken.record.lapsed = true;
  auto v = decide_trace(taken, p);
  EXPECT_EQ(v.id, "exposed");
  EXPECT_NE(v.text.find("powertools-python cannot read its record and takes it over"), std::string::npos) << v.text;
  auto failed = trace_of({copy(3, 10 * 60'000, true)}, TraceRecord::State::Present, R"({"expiration": 1})");
  failed.record.fails = true;
  auto held = decide_trace(failed, p);
  EXPECT_EQ(held.id, "protected");
  EXPECT_NE(held.text.find("the library fails on its record at every delivery"), std::string::npos) << held.text;
}

// A window in memory (--store memory:): each copy carries what the simulated window did with it.
TraceOccurrence windowed(std::int64_t offset, std::optional<bool> delivered, WindowCall call) {
  TraceOccurrence o = copy(offset, 10 * 60'000, delivered);
  o.window = call;
  return o;
}

TracePolicy window_policy(bool alone) {
  TracePolicy p = policy();
  p.ttl = Span::infinite();
  p.window = "the lru-bloom window of the test";
  p.window_alone = alone;
  return p;
}

TEST(Trace, AnIdTheWindowDroppedAtEveryCopyIsABloomFalsePositiveNeverApplied) {
  auto t = trace_of({windowed(7, true, WindowCall::Dropped), windowed(30, false, WindowCall::Dropped)},
                    TraceRecord::State::Absent);
  for (bool alone : {true, false}) { // dropped before any later tier is asked
    auto v = decide_trace(t, window_policy(alone));
    EXPECT_EQ(v.id, "bloom-false-positive");
    EXPECT_NE(v.text.find("the Bloom filter of the lru-bloom window of the test said seen"), std::string::npos)
        << v.text;
    ASSERT_EQ(v.evidence.size(), 3u);
    EXPECT_NE(v.evidence[0].find("pay[0]@7"), std::string::npos) << v.evidence[0];
    EXPECT_NE(v.evidence[1].find("pay[0]@30"), std::string::npos) << v.evidence[1];
  }
  // Applied once, then dropped: the drop was a caught duplicate's, not a loss.
  auto applied = trace_of({windowed(7, true, WindowCall::Applied), windowed(30, true, WindowCall::Skipped)},
                          TraceRecord::State::Absent);
  EXPECT_NE(decide_trace(applied, window_policy(true)).id, "bloom-false-positive");
}

TEST(Trace, ACopyAWindowAloneHadForgottenWasAppliedTwiceButInAChainTheNextTierIsAsked) {
  auto t = trace_of({windowed(7, true, WindowCall::Applied), windowed(900, true, WindowCall::Reapplied)},
                    TraceRecord::State::Absent);
  auto v = decide_trace(t, window_policy(true));
  EXPECT_EQ(v.id, "applied-twice");
  EXPECT_NE(v.text.find("no longer held the id"), std::string::npos) << v.text;
  ASSERT_GE(v.evidence.size(), 2u);
  EXPECT_NE(v.evidence[0].find("pay[0]@7"), std::string::npos);
  EXPECT_NE(v.evidence[1].find("pay[0]@900"), std::string::npos);
  EXPECT_NE(decide_trace(t, window_policy(false)).id, "applied-twice") << "a later tier decides a window's miss";
  // Not consumed yet: a miss still ahead is no second application.
  auto ahead = trace_of({windowed(7, true, WindowCall::Applied), windowed(900, false, WindowCall::Reapplied)},
                        TraceRecord::State::Absent);
  EXPECT_NE(decide_trace(ahead, window_policy(true)).id, "applied-twice");
}

TEST(Trace, TheTimelineSaysWhatTheWindowDidWithEachCopy) {
  auto t = trace_of({windowed(7, true, WindowCall::Applied), windowed(8, true, WindowCall::Skipped)},
                    TraceRecord::State::Absent);
  auto entries = timeline(t, window_policy(true));
  std::string all;
  for (const auto& e : entries) {
    all += e.what + "\n";
  }
  EXPECT_NE(all.find("pay[0]@7: PaymentCharged, payload 0000000000000007 (120 bytes), consumed by the group; the "
                     "window applied it (a new id)"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("@8: PaymentCharged, payload 0000000000000007 (120 bytes), consumed by the group; the window "
                     "skipped it (a repeat it still held)"),
            std::string::npos)
      << all;
  EXPECT_EQ(to_string(WindowCall::Reapplied), "re-applied");
  EXPECT_EQ(to_string(WindowCall::Dropped), "dropped");
}

// A version guard: the record is the projection's row of the entity, its value the version.
GuardTrace guard(std::string version, bool higher_follows = false, VersionOrder order = VersionOrder::Numeric) {
  GuardTrace g;
  g.entity = "o-1";
  g.version = std::move(version);
  g.order = order;
  g.higher_follows = higher_follows;
  return g;
}

TEST(GuardTrace, AProjectionAtOrAboveTheEventsVersionDropsARedelivery) {
  for (const char* held : {"3", "4", "3.0", "100000000000000000000"}) {
    auto t = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Present, held);
    auto v = decide_guard_trace(t, guard("3"), policy());
    EXPECT_EQ(v.id, "protected") << held;
    EXPECT_NE(v.text.find(fmt::format("holds version {} of entity o-1, at or above this event's 3", held)),
              std::string::npos)
        << v.text;
  }
}

TEST(GuardTrace, AProjectionBelowTheEventOrWithoutItsRowIsExposedAndSaysWhatFollows) {
  auto below = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Present, "2.99999999999999999999");
  auto v = decide_guard_trace(below, guard("3", true), policy());
  EXPECT_EQ(v.id, "exposed");
  EXPECT_NE(v.text.find("holds version 2.99999999999999999999 of entity o-1, below this event's 3"), std::string::npos)
      << v.text;
  EXPECT_NE(v.text.find("a higher version follows it in the range"), std::string::npos) << v.text;
  auto no_row = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Absent);
  auto none = decide_guard_trace(no_row, guard("1"), policy());
  EXPECT_EQ(none.id, "exposed");
  EXPECT_NE(none.text.find("the projection has no row of entity o-1"), std::string::npos) << none.text;
  EXPECT_EQ(none.text.find("higher version"), std::string::npos) << none.text;
  // Lexical order, as a text column compares: "10" is below "9".
  auto text = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Present, "10");
  EXPECT_EQ(decide_guard_trace(text, guard("9", false, VersionOrder::Lexical), policy()).id, "exposed");
}

TEST(GuardTrace, AHigherVersionEarlierInTheRangeIsAppliedFirstByAReplayOfIt) {
  auto t = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Present, "1");
  GuardTrace g = guard("2", true);
  g.earlier = {"1", "3", "2.5"};
  auto v = decide_guard_trace(t, g, policy());
  EXPECT_EQ(v.id, "exposed"); // a redelivery of it alone is applied
  EXPECT_NE(v.text.find("a replay of the range from its start applies version 3 first and then drops this one"),
            std::string::npos)
      << v.text;
  EXPECT_EQ(v.text.find("a higher version follows"), std::string::npos) << v.text;
  // Versions at or below the projection's are dropped by the replay, and so do not drop this one.
  g.earlier = {"0", "1"};
  EXPECT_NE(decide_guard_trace(t, g, policy()).text.find("; a higher version follows it in the range"),
            std::string::npos);
  auto no_row = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Absent);
  g.earlier = {"2"};
  EXPECT_NE(decide_guard_trace(no_row, g, policy()).text.find("applies version 2 first and then drops this one"),
            std::string::npos);
}

TEST(GuardTrace, WhatTheGuardCannotCompareIsNeverProtected) {
  auto t = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Present, "n/a");
  auto v = decide_guard_trace(t, guard("3"), policy());
  EXPECT_EQ(v.id, "exposed");
  EXPECT_NE(v.text.find("the projection's version 'n/a' of entity o-1 does not parse under --version-order numeric"),
            std::string::npos)
      << v.text;
  auto held = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Present, "3");
  EXPECT_NE(decide_guard_trace(held, guard("three"), policy()).text.find("the event's version 'three'"),
            std::string::npos);
  EXPECT_EQ(decide_guard_trace(held, GuardTrace{}, policy()).id, "exposed");
  auto unknown = trace_of({copy(3, 5 * k_hour, true)}, TraceRecord::State::Unknown);
  EXPECT_EQ(decide_guard_trace(unknown, guard("3"), policy()).id, decide_trace(unknown, policy()).id);
  auto missing = trace_of({}, TraceRecord::State::Absent);
  EXPECT_EQ(decide_guard_trace(missing, guard("3"), policy()).id, "not-found");
}

} // namespace
} // namespace dedupctl::core
