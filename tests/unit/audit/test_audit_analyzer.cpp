#include "core/audit/audit_analyzer.hpp"
#include "core/util/time.hpp"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

using namespace dedupctl::core;

namespace {

constexpr std::int64_t k_hour = 3'600'000;
constexpr std::int64_t k_now = 10'000 * k_hour;

struct Planted {
  std::int64_t offset;
  std::int64_t ts;
  std::string id; // empty: no id
  std::string type;
  RecordState record;
  Effect effect = Effect::Unchecked;
};

struct Harness {
  AuditOptions options;
  std::vector<Planted> events;
  std::optional<std::int64_t> committed;
  std::optional<WindowBounds> window;

  AuditResult run() {
    AuditAnalyzer analyzer(options);
    analyzer.set_partition("orders", 0, committed, window);
    for (const auto& p : events) {
      Event e;
      e.topic = "orders";
      e.offset = p.offset;
      e.timestamp_ms = p.ts;
      Identity id;
      id.has_id = !p.id.empty();
      id.id = p.id;
      id.id_hash = std::hash<std::string>{}(p.id) | 1;
      id.type = p.type;
      std::string key;
      std::string_view field;
      render_key(options.key_template, KeyValues{p.id, p.type, "", "orders", 0, p.offset, "", "", &field}, key);
      analyzer.observe(e, id, key, p.record, p.effect);
    }
    return analyzer.finish();
  }
};

RecordState absent() { return RecordState{}; }
RecordState present(std::optional<std::int64_t> pttl, std::string_view value = "1") {
  return present_record(pttl, value);
}

std::int64_t state(const AuditResult& r, Coverage c) { return r.states[static_cast<std::size_t>(c)]; }

const Finding* finding(const AuditResult& r, const std::string& id) {
  for (const auto& f : r.findings) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

Harness classic() {
  // 1h TTL on a topic kept 7 days, a group committed at 8; one event of each state.
  Harness h;
  h.options.policy.now_ms = k_now;
  h.options.ttl = declared_ttl(Span::finite(k_hour));
  h.options.policy.retention = Span::finite(7 * 24 * k_hour);
  h.options.side_effects = {{"EmailSent", SideEffect::Idempotent}};
  h.committed = 8;
  h.window = WindowBounds{0, 8, std::nullopt};
  h.events = {
      {0, k_now - 48 * k_hour, "e-0", "PaymentCharged", absent()},                     // expired (ttl gap)
      {1, k_now - 30 * 60'000, "e-1", "PaymentCharged", absent()},                     // missing (within TTL)
      {2, k_now - 30 * 60'000, "e-2", "PaymentCharged", present(30 * 60'000)},         // expiring
      {3, k_now - 30 * 60'000, "e-3", "EmailSent", present(std::nullopt)},             // covered, no expiry
      {4, k_now - 2 * k_hour, "e-4", "PaymentCharged", present(60'000, "processing")}, // orphaned (< committed)
      {5, k_now - 48 * k_hour, "", "EmailSent", absent()},                             // no id
      {6, k_now - 48 * k_hour, "e-6", "EmailSent", absent()},                          // expired, idempotent
      {7, k_now - 60'000, "e-7", "PaymentCharged", present(60'000, "processing")},     // orphaned too (< committed)
      {8, k_now - 60'000, "e-8", "PaymentCharged", present(60'000, "processing")},     // in progress
      {9, k_now - 60'000, "e-9", "PaymentCharged", absent()},                          // pending
  };
  return h;
}

} // namespace

TEST(AuditAnalyzer, EveryEventLandsInExactlyOneState) {
  auto r = classic().run();
  EXPECT_EQ(r.events, 10);
  EXPECT_EQ(state(r, Coverage::Expired), 2);
  EXPECT_EQ(state(r, Coverage::Missing), 1);
  EXPECT_EQ(state(r, Coverage::Expiring), 1);
  EXPECT_EQ(state(r, Coverage::Covered), 1);
  EXPECT_EQ(state(r, Coverage::Orphaned), 2);
  EXPECT_EQ(state(r, Coverage::InProgress), 1);
  EXPECT_EQ(state(r, Coverage::NoId), 1);
  EXPECT_EQ(state(r, Coverage::Pending), 1);
  std::int64_t sum = 0;
  for (auto n : r.states) {
    sum += n;
  }
  EXPECT_EQ(sum, r.events);
  EXPECT_EQ(r.no_expiry, 1);
}

TEST(AuditAnalyzer, FindingsFollowTheStates) {
  auto r = classic().run();
  ASSERT_NE(finding(r, "ttl-shorter-than-retention"), nullptr);
  EXPECT_EQ(finding(r, "ttl-gap")->count, 2);
  EXPECT_EQ(finding(r, "ttl-gap")->severity, Severity::Error);
  EXPECT_EQ(finding(r, "missing-record")->count, 1);
  EXPECT_EQ(finding(r, "orphaned-claim")->count, 2);
  EXPECT_EQ(finding(r, "expiring-before-retention")->count, 1);
  EXPECT_EQ(finding(r, "no-expiry")->count, 1);
  EXPECT_EQ(finding(r, "key-template-lacks-event-id"), nullptr);
  EXPECT_EQ(finding(r, "ttl-gap")->examples[0].dedup_key, "e-0");
  EXPECT_NE(finding(r, "expiring-before-retention")->examples[0].note.find("before the event leaves the log"),
            std::string::npos);
}

TEST(AuditAnalyzer, TheReplayWindowCountsSkipsReapplicationsAndSafeFrom) {
  auto r = classic().run();
  const auto& replay = r.replay;
  EXPECT_EQ(replay.events, 8);        // offsets 0..7
  EXPECT_EQ(replay.would_reapply, 4); // e-0, e-1 (payments), offset 5 (no id), e-6 (email)
  EXPECT_EQ(replay.would_skip, 2);    // e-2, e-3
  EXPECT_EQ(replay.would_skip_unfinished, 2);
  EXPECT_EQ(replay.by_type.at("PaymentCharged").would_reapply, 2);
  EXPECT_EQ(replay.by_type.at("PaymentCharged").side_effects, SideEffect::External);
  EXPECT_EQ(replay.by_type.at("EmailSent").would_reapply, 2);
  EXPECT_EQ(replay.by_type.at("EmailSent").side_effects, SideEffect::Idempotent);
  ASSERT_EQ(replay.safe_from.size(), 1u);
  EXPECT_EQ(replay.safe_from[0].offset, 2); // the last external re-application is offset 1
  EXPECT_EQ(replay.safe_from[0].timestamp_ms, k_now - 30 * 60'000);
  const Finding* risk = finding(r, "replay-risk");
  ASSERT_NE(risk, nullptr);
  EXPECT_EQ(risk->severity, Severity::Error);
  EXPECT_EQ(risk->count, 4);
}

TEST(AuditAnalyzer, OnlyIdempotentReapplicationsAreInfo) {
  auto h = classic();
  h.options.side_effects = {{"PaymentCharged", SideEffect::Idempotent}, {"EmailSent", SideEffect::Internal}};
  auto r = h.run();
  EXPECT_EQ(finding(r, "replay-risk")->severity, Severity::Warning);
  h.options.side_effects["EmailSent"] = SideEffect::Idempotent;
  EXPECT_EQ(finding(h.run(), "replay-risk")->severity, Severity::Info);
}

TEST(AuditAnalyzer, WithoutATtlTheEstimateClassifiesAbsentRecords) {
  Harness h;
  h.options.policy.now_ms = k_now;
  h.options.policy.retention = Span::finite(7 * 24 * k_hour);
  h.events = {
      // Records written at the event's time with a 1h TTL: pttl = 1h - age.
      {0, k_now - 10 * 60'000, "a", "T", present(50 * 60'000)},
      {1, k_now - 20 * 60'000, "b", "T", present(40 * 60'000)},
      {2, k_now - 2 * k_hour, "c", "T", absent()},  // older than 1h: expired
      {3, k_now - 30 * 60'000, "d", "T", absent()}, // within 1h: missing
  };
  auto r = h.run();
  EXPECT_EQ(r.ttl.estimate_low, 50 * 60'000);
  EXPECT_EQ(r.ttl.estimate_high, 60 * 60'000);
  EXPECT_EQ(r.ttl.span, Span::finite(60 * 60'000));
  EXPECT_EQ(r.ttl.source, TtlSource::Estimated);
  // The title says where the TTL came from.
  EXPECT_NE(finding(r, "ttl-shorter-than-retention")->title.find("(1h, estimated from the records)"), std::string::npos)
      << finding(r, "ttl-shorter-than-retention")->title;
  EXPECT_EQ(state(r, Coverage::Expired), 1);
  EXPECT_EQ(state(r, Coverage::Missing), 1);
  EXPECT_EQ(finding(r, "ttl-gap")->examples[0].event_id, "c");
  EXPECT_NE(finding(r, "ttl-shorter-than-retention"), nullptr);
}

TEST(AuditAnalyzer, NoTtlAndNoRecordsSaysSoAndCountsMissing) {
  Harness h;
  h.options.policy.now_ms = k_now;
  h.events = {{0, 0, "a", "T", absent()}};
  auto r = h.run();
  EXPECT_EQ(state(r, Coverage::Missing), 1);
  EXPECT_NE(finding(r, "ttl-unknown"), nullptr);
  EXPECT_NE(finding(r, "retention-unknown"), nullptr);
  EXPECT_EQ(finding(r, "ttl-shorter-than-retention"), nullptr);
}

TEST(AuditAnalyzer, KeysFromABusinessIdCollideAndAreFlagged) {
  Harness h;
  h.options.policy.now_ms = k_now;
  h.options.ttl = declared_ttl(Span::finite(k_hour));
  h.options.key_template = KeyTemplate::parse("dedup:{type}");
  h.events = {{0, k_now, "a", "Refund", present(k_hour)},
              {1, k_now, "b", "Refund", present(k_hour)},
              {2, k_now, "c", "Refund", present(k_hour)},
              {3, k_now, "a", "Refund", present(k_hour)}, // the same id again: not a collision
              {4, k_now, "d", "Charge", present(k_hour)}};
  auto r = h.run();
  EXPECT_EQ(r.key_collisions, 2);
  EXPECT_EQ(finding(r, "key-collision")->count, 2);
  EXPECT_NE(finding(r, "key-template-lacks-event-id"), nullptr);
}

// A key with {event_id} in it is not always injective: through lower, Ab is covered by ab's record;
// through json-ascii, an id that is not UTF-8 renders the key of the id holding U+FFFD in its place.
// Both are collisions, counted as such; a key that renders the id whole has none to look for.
TEST(AuditAnalyzer, KeysThroughAFilterThatIsNotInjectiveAreCheckedForCollisions) {
  for (const auto& [tmpl, a, b] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"dedup:{event_id|lower}", "Ab", "ab"},
           {"p#{event_id|json-ascii|md5}", "a\xff", "a\xef\xbf\xbd"},
           {"{event_id|java}", "x\xc3", "x\xef\xbf\xbd"}}) {
    SCOPED_TRACE(tmpl);
    Harness h;
    h.options.policy.now_ms = k_now;
    h.options.ttl = declared_ttl(Span::finite(k_hour));
    h.options.key_template = KeyTemplate::parse(tmpl);
    h.events = {{0, k_now, a, "T", present(k_hour)},
                {1, k_now, "e-2", "T", present(k_hour)},
                {2, k_now, b, "T", present(k_hour)},
                {3, k_now, a, "T", present(k_hour)}}; // a again: a redelivery, not a collision
    auto r = h.run();
    EXPECT_EQ(r.key_collisions, 1);
    ASSERT_NE(finding(r, "key-collision"), nullptr);
    EXPECT_EQ(finding(r, "key-collision")->count, 1);
  }
  Harness h;
  h.options.policy.now_ms = k_now;
  h.options.key_template = KeyTemplate::parse("dedup:{event_id}");
  h.events = {{0, k_now, "Ab", "T", present(k_hour)}, {1, k_now, "ab", "T", present(k_hour)}};
  EXPECT_EQ(h.run().key_collisions, 0);
}

TEST(AuditAnalyzer, TtlMarginAndOffsetTemplates) {
  Harness h;
  h.options.policy.now_ms = k_now;
  h.options.ttl = declared_ttl(Span::finite(7 * 24 * k_hour + k_hour));
  h.options.policy.retention = Span::finite(7 * 24 * k_hour);
  h.options.key_template = KeyTemplate::parse("dedup:{partition}:{offset}:{event_id}");
  auto r = h.run();
  EXPECT_NE(finding(r, "ttl-margin-thin"), nullptr);
  EXPECT_EQ(finding(r, "ttl-shorter-than-retention"), nullptr);
  EXPECT_NE(finding(r, "key-template-uses-offset"), nullptr);
  h.options.ttl = declared_ttl(Span::finite(9 * 24 * k_hour));
  EXPECT_EQ(finding(h.run(), "ttl-margin-thin"), nullptr);
}

namespace dedupctl::core {
namespace {} // namespace
} // namespace dedupctl::core

// A seek by time the broker could not look up (the mock cluster): the window starts at the first
// event read at or after the time, as ListOffsets would answer, not at the log start.
TEST(AuditAnalyzer, ASeekByTimeStartsTheWindowAtTheFirstEventAtOrAfterIt) {
  Harness h = classic();
  std::int64_t time = k_now - 20 * 60'000; // offset 7 is the first event at or after it
  h.window = WindowBounds{0, 8, time};
  auto r = h.run();
  ASSERT_EQ(r.partitions.size(), 1u);
  EXPECT_EQ(r.partitions[0].seek_found, 7);
  EXPECT_EQ(r.partitions[0].window->from, 7);
  EXPECT_EQ(r.replay.events, 1) << "offset 7 only, not 0..7";
  h.window = WindowBounds{0, 8, k_now + k_hour}; // after every event
  auto after = h.run();
  EXPECT_FALSE(after.partitions[0].seek_found);
  EXPECT_EQ(after.replay.events, 0);
}

// safe_from's timestamp is that of the event right after the last external re-application: also
// when the records decide the TTL (absent records are classified at the end), never one across a gap
// of offsets; with nothing re-applied it is the window start's.
TEST(AuditAnalyzer, SafeFromTakesTheTimestampOfTheEventRightAfterTheLastReapplication) {
  Harness deferred;
  deferred.options.policy.now_ms = k_now;
  deferred.options.policy.retention = Span::finite(7 * 24 * k_hour);
  deferred.committed = 6;
  deferred.window = WindowBounds{0, 6, std::nullopt};
  deferred.events = {
      {0, k_now - 50 * 60'000, "e-0", "PaymentCharged", absent()},
      {1, k_now - 40 * 60'000, "e-1", "PaymentCharged", present(20 * 60'000)},
      {2, k_now - 30 * 60'000, "e-2", "PaymentCharged", absent()},
      {3, k_now - 20 * 60'000, "e-3", "PaymentCharged", present(40 * 60'000)},
      {4, k_now - 10 * 60'000, "e-4", "PaymentCharged", present(50 * 60'000)},
  };
  auto r = deferred.run();
  ASSERT_EQ(r.replay.safe_from.size(), 1U);
  EXPECT_EQ(r.replay.would_reapply, 2);
  EXPECT_EQ(r.replay.safe_from[0].offset, 3);
  EXPECT_EQ(r.replay.safe_from[0].timestamp_ms, k_now - 20 * 60'000);

  Harness gap = deferred;
  gap.events.erase(gap.events.begin() + 3); // offset 3 compacted away
  auto g = gap.run();
  EXPECT_EQ(g.replay.safe_from[0].offset, 3);
  EXPECT_FALSE(g.replay.safe_from[0].timestamp_ms.has_value()) << "no event at offset 3";

  Harness clean = deferred;
  clean.window = WindowBounds{3, 6, std::nullopt};
  auto c = clean.run();
  EXPECT_EQ(c.replay.would_reapply, 0);
  EXPECT_EQ(c.replay.safe_from[0].offset, 3);
  EXPECT_EQ(c.replay.safe_from[0].timestamp_ms, k_now - 20 * 60'000);
}

// Only an external re-application moves safe_from: a later idempotent one, or one without an id of
// an idempotent type, leaves it (and its timestamp) right after the last external one, whether the
// records decide the TTL at the end or the TTL is declared.
TEST(AuditAnalyzer, SafeFromIgnoresLaterReapplicationsWithoutExternalEffects) {
  for (bool declared : {false, true}) {
    Harness h;
    h.options.policy.now_ms = k_now;
    h.options.policy.retention = Span::finite(7 * 24 * k_hour);
    if (declared) {
      h.options.ttl = declared_ttl(Span::finite(k_hour));
    }
    h.options.side_effects["EmailSent"] = SideEffect::Idempotent;
    h.committed = 7;
    h.window = WindowBounds{0, 7, std::nullopt};
    h.events = {
        {0, k_now - 60 * 60'000, "e-0", "PaymentCharged", present(30 * 60'000)},
        {1, k_now - 50 * 60'000, "e-1", "PaymentCharged", absent()},
        {2, k_now - 45 * 60'000, "e-2", "PaymentCharged", present(40 * 60'000)},
        {3, k_now - 40 * 60'000, "e-3", "EmailSent", absent()},
        {4, k_now - 30 * 60'000, "e-4", "PaymentCharged", present(50 * 60'000)},
        {5, k_now - 20 * 60'000, "", "EmailSent", absent()},
        {6, k_now - 10 * 60'000, "e-6", "PaymentCharged", present(55 * 60'000)},
    };
    auto r = h.run();
    SCOPED_TRACE(declared ? "TTL declared" : "TTL from the records");
    EXPECT_EQ(r.replay.would_reapply, 3);
    ASSERT_EQ(r.replay.safe_from.size(), 1U);
    EXPECT_EQ(r.replay.safe_from[0].offset, 2);
    EXPECT_EQ(r.replay.safe_from[0].timestamp_ms, k_now - 45 * 60'000);
  }
}

// Where the layout's library takes an orphaned claim over (Powertools), a seek re-applies the
// orphans: they count in would_reapply, move safe_from past them and are listed in replay-risk.
TEST(AuditAnalyzer, OrphansCountAsReappliedWhereTheLibraryTakesThemOver) {
  Harness h = classic();
  h.options.policy.orphans_reapplied = true;
  h.options.max_examples = 10;
  auto r = h.run();
  EXPECT_EQ(state(r, Coverage::Orphaned), 2);
  EXPECT_EQ(r.replay.would_skip_unfinished, 0);
  EXPECT_EQ(r.replay.would_reapply, 6) << "e-4 and e-7 join e-0, e-1, offset 5 and e-6";
  EXPECT_EQ(r.replay.by_type.at("PaymentCharged").would_reapply, 4);
  ASSERT_EQ(r.replay.safe_from.size(), 1u);
  EXPECT_EQ(r.replay.safe_from[0].offset, 8) << "the last external re-application is now e-7 at offset 7";
  const Finding* risk = finding(r, "replay-risk");
  ASSERT_NE(risk, nullptr);
  bool listed = false;
  for (const auto& example : risk->examples) {
    listed = listed || example.event_id == "e-7";
  }
  EXPECT_TRUE(listed);
}

// Records that never expire under one key (a Spring metadata hash, a Camel set) make that key grow
// without bound: the finding names it and says to prune it.
TEST(AuditAnalyzer, NoExpiryUnderOneKeyNamesTheCollection) {
  Harness h = classic();
  h.options.collection = "MetaData";
  auto r = h.run();
  const Finding* f = finding(r, "no-expiry");
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->title.find("members of MetaData, which only grows"), std::string::npos) << f->title;
  EXPECT_NE(f->advice.find("Prune it"), std::string::npos) << f->advice;
  EXPECT_EQ(finding(classic().run(), "no-expiry")->title, "1 dedup records never expire");
}

// --effects: each event's effect beside its record. Lost = the record says processed, the effect is
// absent; unguarded = the effect exists, no record guards it. The replay splits its re-applications
// into certain duplicates and repairs, and safe_from counts only the duplicates.
TEST(AuditAnalyzer, EffectsTellLostFromUnguardedAndSplitTheReplay) {
  Harness h = classic();
  h.options.effects = true;
  const Effect applied = Effect::Applied, absent_effect = Effect::NotApplied;
  Effect effects[] = {applied,       // e-0 expired: unguarded, re-applied twice
                      absent_effect, // e-1 missing: a delivery that repairs
                      absent_effect, // e-2 expiring: lost
                      applied,       // e-3 covered: as it should be
                      applied,       // e-4 orphaned: unguarded
                      applied,       // no id: never looked up
                      absent_effect, // e-6 expired: repairs (idempotent anyway)
                      absent_effect, // e-7 orphaned, never applied: neither
                      applied,       // e-8 in progress: neither
                      applied};      // e-9 pending: unguarded
  for (std::size_t i = 0; i < h.events.size(); ++i) {
    h.events[i].effect = h.events[i].id.empty() ? Effect::Unchecked : effects[i];
  }
  auto r = h.run();
  ASSERT_TRUE(r.effects.has_value());
  EXPECT_EQ(r.effects->checked, 9);
  EXPECT_EQ(r.effects->applied, 5);
  EXPECT_EQ(r.effects->not_applied, 4);
  EXPECT_EQ(r.effects->lost, 1);
  EXPECT_EQ(r.effects->unguarded, 3);
  EXPECT_EQ(r.replay.would_reapply, 4);
  EXPECT_EQ(r.replay.would_reapply_applied, 2) << "e-0, and the event without id, whose effect is unknown";
  EXPECT_EQ(r.replay.would_reapply_unapplied, 2) << "e-1, e-6";
  ASSERT_EQ(r.replay.safe_from.size(), 1u);
  EXPECT_EQ(r.replay.safe_from[0].offset, 1) << "e-1 repairs: past e-0, the last certain duplicate";
  EXPECT_EQ(r.replay.safe_from[0].timestamp_ms, k_now - 30 * 60'000);
  const Finding* lost = finding(r, "lost-effect");
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->severity, Severity::Error);
  EXPECT_EQ(lost->count, 1);
  EXPECT_EQ(lost->title, "1 events are marked processed but their effect is absent: no seek will apply them");
  ASSERT_EQ(lost->examples.size(), 1u);
  EXPECT_EQ(lost->examples[0].event_id, "e-2");
  const Finding* unguarded = finding(r, "unguarded-effect");
  ASSERT_NE(unguarded, nullptr);
  EXPECT_EQ(unguarded->count, 3);
  EXPECT_EQ(unguarded->title, "3 events were applied but nothing guards them: a seek applies them twice");
  std::vector<std::string> ids;
  for (const auto& ex : unguarded->examples) {
    ids.push_back(ex.event_id);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"e-0", "e-4", "e-9"}));
  EXPECT_EQ(finding(r, "replay-risk")->title,
            "a seek over [from, to) would re-apply 4 events: 2 already applied (charged twice), 2 never applied");
}

// Absent records wait for the TTL's estimate before they are expired or missing: their effects wait
// with them, examples included.
TEST(AuditAnalyzer, EffectsOfRecordsWaitingForTheTtlEstimateAreCountedWithThem) {
  Harness h;
  h.options.policy.now_ms = k_now;
  h.options.policy.retention = Span::finite(7 * 24 * k_hour);
  h.options.effects = true;
  h.window = WindowBounds{0, 3, std::nullopt};
  h.events = {
      {0, k_now - 10 * 60'000, "a", "T", present(50 * 60'000), Effect::NotApplied}, // lost
      {1, k_now - 2 * k_hour, "c", "T", absent(), Effect::Applied},                 // expired: unguarded
      {2, k_now - 30 * 60'000, "d", "T", absent(), Effect::NotApplied},             // missing, never applied
      {3, k_now - 10 * 60'000, "b", "T", present(50 * 60'000), Effect::Applied},    // the lookup matches
  };
  auto r = h.run();
  EXPECT_EQ(state(r, Coverage::Expired), 1);
  ASSERT_TRUE(r.effects.has_value());
  EXPECT_EQ(r.effects->lost, 1);
  EXPECT_EQ(r.effects->unguarded, 1);
  ASSERT_NE(finding(r, "unguarded-effect"), nullptr);
  ASSERT_EQ(finding(r, "unguarded-effect")->examples.size(), 1u);
  EXPECT_EQ(finding(r, "unguarded-effect")->examples[0].event_id, "c");
  EXPECT_EQ(r.replay.would_reapply_applied, 1);
  EXPECT_EQ(r.replay.would_reapply_unapplied, 1);
}

// An effects lookup that matches none of the events marked processed (a column no id fits, an
// --effects-id no output record carries) proves nothing: it is not "all lost". The audit says
// effects-unmatched naming the source, claims no lost event, and keeps safe_from and the replay's
// counts as without --effects (no re-application is called a repair).
TEST(AuditAnalyzer, EffectsThatMatchNoProcessedEventAreUnmatchedNotLost) {
  Harness h = classic();
  h.options.effects = true;
  h.options.effects_source = "--effects postgres://db (charges.charged_event)";
  for (auto& e : h.events) {
    e.effect = e.id.empty() ? Effect::Unchecked : Effect::NotApplied;
  }
  auto r = h.run();
  auto plain = classic().run();
  ASSERT_TRUE(r.effects.has_value());
  EXPECT_EQ(r.effects->checked, 9);
  EXPECT_EQ(r.effects->not_applied, 9);
  EXPECT_EQ(r.effects->lost, 0) << "nothing is shown lost by a lookup that cannot match";
  EXPECT_EQ(finding(r, "lost-effect"), nullptr);
  const Finding* unmatched = finding(r, "effects-unmatched");
  ASSERT_NE(unmatched, nullptr);
  EXPECT_EQ(unmatched->severity, Severity::Error);
  EXPECT_EQ(unmatched->count, 2) << "e-2 and e-3 are marked processed";
  EXPECT_NE(unmatched->title.find("--effects postgres://db (charges.charged_event)"), std::string::npos)
      << unmatched->title;
  EXPECT_FALSE(r.replay.would_reapply_applied.has_value());
  EXPECT_FALSE(r.replay.would_reapply_unapplied.has_value());
  ASSERT_EQ(r.replay.safe_from.size(), 1u);
  EXPECT_EQ(r.replay.safe_from[0].offset, plain.replay.safe_from[0].offset);
  EXPECT_EQ(finding(r, "replay-risk")->title, finding(plain, "replay-risk")->title);

  // One processed event whose effect is found proves the lookup: the rest are lost as before.
  h.events[3].effect = Effect::Applied; // e-3, covered
  auto proven = h.run();
  EXPECT_EQ(finding(proven, "effects-unmatched"), nullptr);
  EXPECT_EQ(proven.effects->lost, 1);
  ASSERT_NE(finding(proven, "lost-effect"), nullptr);
}

TEST(AuditAnalyzer, WithoutEffectsNothingOfThemIsReported) {
  auto r = classic().run();
  EXPECT_FALSE(r.effects.has_value());
  EXPECT_FALSE(r.replay.would_reapply_applied.has_value());
  EXPECT_FALSE(r.replay.would_reapply_unapplied.has_value());
  EXPECT_EQ(finding(r, "lost-effect"), nullptr);
  EXPECT_EQ(finding(r, "unguarded-effect"), nullptr);
  EXPECT_EQ(finding(r, "replay-risk")->title,
            "a seek over [from, to) would re-apply 4 events (2 with external effects)");
}

TEST(AuditAnalyzer, AVersionGuardsVerdictsCountAsDecidedAndItsReplayIsWhatTheWalkApplies) {
  AuditOptions options;
  options.version_guard = true;
  options.ttl = projection_ttl();
  options.key_template = KeyTemplate::parse("{entity}");
  AuditAnalyzer analyzer(options);
  analyzer.set_partition("orders", 0, 4, WindowBounds{0, 4, std::nullopt});
  struct Decided {
    std::int64_t offset;
    Coverage state;
    bool superseded, applied;
  };
  // 0 covered; 1 superseded and applied; 2 missing, dropped by the walk (a higher one went first);
  // 3 missing and applied; 4, past the committed offset, is a first delivery whatever the walk says.
  for (const auto& d : std::vector<Decided>{{0, Coverage::Covered, false, false},
                                            {1, Coverage::Missing, true, true},
                                            {2, Coverage::Missing, false, false},
                                            {3, Coverage::Missing, false, true},
                                            {4, Coverage::Missing, false, true}}) {
    Event e;
    e.topic = "orders";
    e.offset = d.offset;
    e.timestamp_ms = k_now - k_hour + d.offset;
    Identity id;
    id.has_id = true;
    std::string text = "e-" + std::to_string(d.offset);
    id.id = text;
    id.type = "OrderPaid";
    analyzer.observe_guarded(e, id, "o-1", d.state, d.superseded, d.applied, "entity o-1");
  }
  AuditResult r = analyzer.finish();
  EXPECT_EQ(state(r, Coverage::Covered), 1);
  EXPECT_EQ(state(r, Coverage::Missing), 3);
  EXPECT_EQ(state(r, Coverage::Pending), 1);
  EXPECT_EQ(r.superseded, 1);
  EXPECT_EQ(r.replay.events, 4);
  EXPECT_EQ(r.replay.would_reapply, 2);
  EXPECT_EQ(r.replay.would_skip, 2);
  ASSERT_EQ(r.replay.safe_from.size(), 1u);
  EXPECT_EQ(r.replay.safe_from[0].offset, 4);
  const Finding* behind = finding(r, "projection-behind");
  ASSERT_NE(behind, nullptr);
  EXPECT_EQ(behind->count, 3);
  EXPECT_EQ(finding(r, "missing-record"), nullptr);
  EXPECT_EQ(finding(r, "key-template-lacks-event-id"), nullptr) << "a projection is keyed by entity";
  EXPECT_EQ(finding(r, "ttl-unknown"), nullptr);
  const Finding* risk = finding(r, "replay-risk");
  ASSERT_NE(risk, nullptr);
  ASSERT_EQ(risk->examples.size(), 2u);
  EXPECT_EQ(risk->examples[0].event_id, "e-1");
  EXPECT_EQ(risk->examples[1].event_id, "e-3");
}
