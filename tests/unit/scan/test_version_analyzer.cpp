// The log's side of a version guard (issue 63): what a handler that applies an event only when its
// version is above the entity's drops for good, cannot tell apart, and never sees.
#include "core/identity/field_spec.hpp"
#include "core/identity/identify.hpp"
#include "core/scan/version_analyzer.hpp"
#include "core/util/errors.hpp"
#include "tests/support/transitions.hpp"
#include "tests/unit/fakes.hpp"

#include <span>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::testing::OwnedEvent;
using dedupctl::testing::with_header_id;

namespace {

// An event of entity `order` at `version` (JSON number), `change` its content.
// A version's text without the quotes of a JSON string, for a status that stays valid JSON.
std::string unquoted(const std::string& version) {
  std::string out;
  for (char c : version) {
    if (c != '"') {
      out += c;
    }
  }
  return out;
}

OwnedEvent change(std::int32_t partition, std::int64_t offset, std::int64_t ts, const std::string& id,
                  const std::string& order, const std::string& version, const std::string& what = "") {
  return with_header_id(partition, offset, ts, id,
                        fmt::format(R"({{"order":"{}","version":{},"status":"{}"}})", order, version,
                                    what.empty() ? "v" + unquoted(version) : what));
}

struct Run {
  VersionCounters counters;
  std::vector<Finding> findings;
  const Finding* find(const std::string& id) const {
    for (const auto& f : findings) {
      if (f.id == id) {
        return &f;
      }
    }
    return nullptr;
  }
};

// Every event, identified by `options`, in order (seq its place).
void observe_with(VersionAnalyzer& analyzer, const std::vector<OwnedEvent>& events, const IdentifyOptions& options) {
  Identifier identifier(options);
  std::uint64_t seq = 0;
  for (const auto& owned : events) {
    std::vector<Header> headers;
    Event e = dedupctl::testing::view(owned, headers);
    e.seq = seq++;
    analyzer.observe(e, identifier.identify_one(e));
  }
}

// Every event, identified with `entity` and json:/version.
void observe_all(VersionAnalyzer& analyzer, const std::vector<OwnedEvent>& events, const std::string& entity) {
  IdentifyOptions options = default_identify_options();
  options.entity = parse_field_specs(entity, "--entity");
  options.version = parse_field_specs("json:/version", "--version");
  observe_with(analyzer, events, options);
}

Run analyze(const std::vector<OwnedEvent>& events, VersionOrder order = VersionOrder::Numeric,
            const std::string& entity = "json:/order") {
  VersionAnalyzer analyzer(order, 5);
  observe_all(analyzer, events, entity);
  return {analyzer.counters(), analyzer.findings()};
}

} // namespace

TEST(VersionAnalyzer, AnOlderVersionAfterANewerOneInOnePartitionIsARegressionTheGuardDrops) {
  auto run = analyze({change(0, 0, 100, "e-1", "o-1", "1"), change(0, 1, 200, "e-3", "o-1", "3"),
                      change(0, 2, 300, "e-2", "o-1", "2"), change(0, 3, 400, "e-4", "o-1", "4")});
  EXPECT_EQ(run.counters.checked, 4);
  EXPECT_EQ(run.counters.regressions, 1);
  EXPECT_EQ(run.counters.cross_partition, 0);
  const Finding* f = run.find("version-regression");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Error);
  ASSERT_EQ(f->examples.size(), 1u);
  EXPECT_EQ(f->examples[0].event_id, "e-2");
  EXPECT_EQ(f->examples[0].offset, 2);
  EXPECT_EQ(f->examples[0].cross_partition, false);
  EXPECT_NE(f->examples[0].note.find("entity o-1 version 2 after version 3 (e-3 orders[0]@1"), std::string::npos)
      << f->examples[0].note;
  EXPECT_EQ(run.find("version-gap"), nullptr) << "1 to 4 are all there";
}

TEST(VersionAnalyzer, AcrossPartitionsTimestampOrderDecidesAndTheExampleSaysSo) {
  // Partition 1 is read after partition 0, but its version 5 is the earlier event by time.
  auto run = analyze({change(0, 0, 300, "e-4", "o-1", "4"), change(1, 0, 100, "e-5", "o-1", "5")});
  EXPECT_EQ(run.counters.regressions, 1);
  EXPECT_EQ(run.counters.cross_partition, 1);
  const Finding* f = run.find("version-regression");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->examples[0].event_id, "e-4") << "version 4 comes after 5 in time: the guard drops it";
  EXPECT_EQ(f->examples[0].cross_partition, true);
  EXPECT_NE(f->examples[0].note.find("an estimate across partitions"), std::string::npos);
  EXPECT_NE(f->advice.find("key the topic by the entity"), std::string::npos);
}

TEST(VersionAnalyzer, APartitionKeepsItsLogOrderWhenItsTimestampsGoBack) {
  // Partition 0 holds v1 then v3, whose timestamp is earlier; partition 1's v2 lies between them.
  // The consumer meets partition 0 in log order: v2 (70) before v1 (100), then v3. A sort by
  // timestamp would drop v2 and v1; the read order would drop v2.
  auto run = analyze(
      {change(0, 0, 100, "e-a", "o-1", "1"), change(0, 1, 50, "e-b", "o-1", "3"), change(1, 0, 70, "e-c", "o-1", "2")});
  EXPECT_EQ(run.counters.regressions, 1);
  const Finding* f = run.find("version-regression");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->examples.size(), 1u);
  EXPECT_EQ(f->examples[0].event_id, "e-a") << "v1 comes after v2 (70 < 100): the guard drops it";
}

TEST(VersionAnalyzer, ALongHistoryIsWalkedAsAShortOne) {
  // More events than the walk searches in a vector: its redeliveries, conflicts and regressions are
  // found as in a short one.
  std::vector<OwnedEvent> events;
  std::int64_t offset = 0;
  for (int v = 1; v <= 30; ++v) {
    events.push_back(change(0, offset, offset, fmt::format("e-{}", v), "o-1", std::to_string(v)));
    ++offset;
  }
  events.push_back(change(0, offset, offset, "e-7", "o-1", "7")); // a redelivery of e-7
  ++offset;
  events.push_back(change(0, offset, offset, "e-x", "o-1", "30", "refunded")); // v30 with another change
  ++offset;
  events.push_back(change(0, offset, offset, "e-y", "o-1", "12")); // below 30 under a new id
  auto run = analyze(events);
  EXPECT_EQ(run.counters.checked, 33);
  EXPECT_EQ(run.counters.conflicts, 1);
  EXPECT_EQ(run.counters.regressions, 1);
  const Finding* f = run.find("version-regression");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->examples[0].event_id, "e-y");
  const Finding* c = run.find("version-conflict");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->examples[0].event_id, "e-x");
}

TEST(VersionAnalyzer, EntitiesAreApartAndARedeliveryIsNoChange) {
  auto run = analyze({change(0, 0, 1, "e-1", "o-1", "5"), change(0, 1, 2, "e-2", "o-2", "1"),
                      change(0, 2, 3, "e-1", "o-1", "5"), change(0, 3, 4, "e-3", "o-1", "6"),
                      change(0, 4, 5, "e-1", "o-1", "5")}); // e-1 again after 6: a redelivery
  EXPECT_EQ(run.counters.regressions, 0);
  EXPECT_EQ(run.counters.conflicts, 0);
  EXPECT_TRUE(run.findings.empty());
}

TEST(VersionAnalyzer, OneVersionWithTwoChangesIsAConflictCountedAfterTheFirst) {
  auto run = analyze({change(0, 0, 1, "e-1", "o-1", "2", "paid"), change(0, 1, 2, "e-2", "o-1", "2", "refunded"),
                      change(0, 2, 3, "e-3", "o-1", "2", "shipped"),
                      change(0, 3, 4, "e-4", "o-1", "2", "paid")}); // a retry of e-1 under a new id
  EXPECT_EQ(run.counters.conflicts, 2);
  const Finding* f = run.find("version-conflict");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 2);
  EXPECT_EQ(f->examples[0].event_id, "e-2");
  EXPECT_NE(f->examples[0].note.find("another change than e-1"), std::string::npos) << f->examples[0].note;
  EXPECT_EQ(run.counters.regressions, 0);
}

TEST(VersionAnalyzer, MissingWholeVersionsAreAGapCountedInVersions) {
  auto run = analyze({change(0, 0, 1, "e-1", "o-1", "1"), change(0, 1, 2, "e-2", "o-1", "2"),
                      change(0, 2, 3, "e-5", "o-1", "5"), change(0, 3, 4, "e-7", "o-1", "7"),
                      change(0, 4, 5, "e-9", "o-2", "9")});
  EXPECT_EQ(run.counters.gaps, 3) << "3, 4 and 6 of o-1; o-2 has one version: nothing between";
  const Finding* f = run.find("version-gap");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->count, 3);
  ASSERT_EQ(f->examples.size(), 2u);
  EXPECT_EQ(f->examples[0].note, "entity o-1: versions 3 to 4 missing between 2 and 5");
  EXPECT_EQ(f->examples[1].note, "entity o-1: version 6 missing between 5 and 7");
}

TEST(VersionAnalyzer, AVersionRepeatedInsideAGapIsCountedOnceAndTheGapNamesItsFirstEvent) {
  // o-1 has 1, 3 (twice: a redelivery under the same id, then a conflict under another), 6.
  auto run = analyze({change(0, 0, 1, "e-1", "o-1", "1"), change(0, 1, 2, "e-3", "o-1", "3"),
                      change(0, 2, 3, "e-3", "o-1", "3"), change(0, 3, 4, "e-3b", "o-1", "3", "refunded"),
                      change(0, 4, 5, "e-6", "o-1", "6")});
  EXPECT_EQ(run.counters.gaps, 3) << "2, then 4 and 5";
  const Finding* f = run.find("version-gap");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(f->examples.size(), 2u);
  EXPECT_EQ(f->examples[0].event_id, "e-3") << "the first event of version 3 in read order";
  EXPECT_EQ(f->examples[0].offset, 1);
  EXPECT_EQ(f->examples[1].event_id, "e-6");
  EXPECT_EQ(run.counters.conflicts, 1);
}

TEST(VersionAnalyzer, DecimalsAndNumbersBeyond64BitsCompareAsNumbersWithoutAGap) {
  auto decimals = analyze({change(0, 0, 1, "e-1", "o-1", "2.25"), change(0, 1, 2, "e-2", "o-1", "10.5"),
                           change(0, 2, 3, "e-3", "o-1", "9.75")});
  EXPECT_EQ(decimals.counters.regressions, 1) << "9.75 after 10.5";
  const Finding* f = decimals.find("version-regression");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->examples[0].event_id, "e-3");
  EXPECT_NE(f->examples[0].note.find("version 9.75 after version 10.5"), std::string::npos) << f->examples[0].note;
  EXPECT_EQ(decimals.find("version-gap"), nullptr) << "no count of what lies between two decimals";
  // Beyond 64 bits and past a long double's 19 digits: compared exactly, as PostgreSQL's numeric does.
  auto wide = analyze({change(0, 0, 1, "e-1", "o-1", "99999999999999999999"),
                       change(0, 1, 2, "e-2", "o-1", "100000000000000000000"),
                       change(0, 2, 3, "e-3", "o-1", "99999999999999999998"),
                       change(0, 3, 4, "e-4", "o-1", "100000000000000000000.000000000000000000001")});
  EXPECT_EQ(wide.counters.unparsed, 0);
  EXPECT_EQ(wide.counters.regressions, 1) << "only e-3 is below one before it";
  ASSERT_NE(wide.find("version-regression"), nullptr);
  EXPECT_EQ(wide.find("version-regression")->examples[0].event_id, "e-3");
  EXPECT_EQ(wide.counters.conflicts, 0) << "e-4 is above e-2, if by 10^-21";
  // A whole number and a decimal of one entity: compared as numbers, 3 < 3.5 < 4.
  auto mixed = analyze(
      {change(0, 0, 1, "e-1", "o-1", "3"), change(0, 1, 2, "e-2", "o-1", "4"), change(0, 2, 3, "e-3", "o-1", "3.5")});
  EXPECT_EQ(mixed.counters.regressions, 1);
}

TEST(VersionAnalyzer, ABatchObservedAtOnceIsJudgedAsEventByEvent) {
  // Many entities over two partitions, some with a regression, a conflict or a gap: the batch path
  // (its entities looked up ahead) and the event-by-event path give the same counters and examples.
  std::vector<OwnedEvent> events;
  for (int i = 0; i < 300; ++i) {
    int order = i / 3;
    int nth = i % 3;
    int version = 1 + nth; // 1, 2, 3
    std::string what;      // "v<version>"
    if (order % 5 == 0) {
      version = 1 + 2 * nth; // 1, 3, 5: two gaps
    }
    if (order % 7 == 0 && nth == 2) {
      version = 1; // below 2: a regression
    }
    if (order % 11 == 0 && nth == 1) {
      version = 1; // the first's version with another change: a conflict
      what = "again";
    }
    events.push_back(change(i % 2, i / 2, 1000 + i, fmt::format("e-{}", i), fmt::format("o-{}", order),
                            std::to_string(version), what));
  }
  IdentifyOptions options = default_identify_options();
  options.entity = parse_field_specs("json:/order", "--entity");
  options.version = parse_field_specs("json:/version", "--version");
  VersionAnalyzer one_by_one(VersionOrder::Numeric, 50);
  observe_with(one_by_one, events, options);
  Identifier identifier(options);
  std::vector<std::vector<Header>> headers(events.size());
  EventBatch batch;
  for (std::size_t i = 0; i < events.size(); ++i) {
    batch.events.push_back(dedupctl::testing::view(events[i], headers[i]));
    batch.events.back().seq = i;
  }
  std::vector<Identity> identities;
  identifier.identify(batch, identities); // one batch: every identity's text stays valid
  const std::vector<Event>& views = batch.events;
  VersionAnalyzer batched(VersionOrder::Numeric, 50);
  batched.observe(std::span<const Event>(views.data(), 120), std::span<const Identity>(identities.data(), 120));
  batched.observe(std::span<const Event>(views.data() + 120, 180),
                  std::span<const Identity>(identities.data() + 120, 180));
  const VersionCounters& a = one_by_one.counters();
  const VersionCounters& b = batched.counters();
  EXPECT_EQ(a.checked, 300);
  EXPECT_GT(a.regressions, 0);
  EXPECT_GT(a.conflicts, 0);
  EXPECT_GT(a.gaps, 0);
  EXPECT_EQ(std::tie(a.checked, a.regressions, a.cross_partition, a.conflicts, a.gaps),
            std::tie(b.checked, b.regressions, b.cross_partition, b.conflicts, b.gaps));
  auto fa = one_by_one.findings();
  auto fb = batched.findings();
  ASSERT_EQ(fa.size(), fb.size());
  for (std::size_t i = 0; i < fa.size(); ++i) {
    EXPECT_EQ(fa[i].id, fb[i].id);
    ASSERT_EQ(fa[i].examples.size(), fb[i].examples.size()) << fa[i].id;
    for (std::size_t k = 0; k < fa[i].examples.size(); ++k) {
      EXPECT_EQ(fa[i].examples[k].event_id, fb[i].examples[k].event_id) << fa[i].id;
      EXPECT_EQ(fa[i].examples[k].note, fb[i].examples[k].note) << fa[i].id;
    }
  }
}

TEST(VersionAnalyzer, AVersionThatDoesNotParseIsCountedAndNamedNeverCompared) {
  auto run = analyze({change(0, 0, 1, "e-1", "o-1", "3"), change(0, 1, 2, "e-2", "o-1", "\"v2\"")});
  EXPECT_EQ(run.counters.unparsed, 1);
  EXPECT_EQ(run.counters.regressions, 0) << "v2 is not guessed to be 2";
  const Finding* f = run.find("version-unparsed");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->examples[0].note, "version 'v2' is not a number");
}

TEST(VersionAnalyzer, AnEntitySpecThatYieldsNothingChecksNoGuardAndSaysSoAsAnError) {
  auto run = analyze({change(0, 0, 1, "e-1", "o-1", "3"), change(0, 1, 2, "e-2", "o-1", "2")}, VersionOrder::Numeric,
                     "json:/customer");
  EXPECT_EQ(run.counters.checked, 0);
  EXPECT_EQ(run.counters.unversioned, 2);
  const Finding* f = run.find("version-unchecked");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Error) << "nothing was checked: never a clean verdict";
  EXPECT_EQ(f->examples[0].note, "no entity");
}

TEST(VersionAnalyzer, TheOrdersCompareAsTheHandlerDoes) {
  // Lexically "10" < "9": a handler comparing strings drops version 10.
  auto lexical = analyze({change(0, 0, 1, "e-9", "o-1", "\"9\""), change(0, 1, 2, "e-10", "o-1", "\"10\"")},
                         VersionOrder::Lexical);
  EXPECT_EQ(lexical.counters.regressions, 1);
  auto numeric = analyze({change(0, 0, 1, "e-9", "o-1", "\"9\""), change(0, 1, 2, "e-10", "o-1", "\"10\"")});
  EXPECT_EQ(numeric.counters.regressions, 0);
  auto times = analyze({change(0, 0, 1, "e-1", "o-1", "\"2026-11-20T09:00:00+01:00\""),
                        change(0, 1, 2, "e-2", "o-1", "\"2026-11-20T07:30:00Z\"")},
                       VersionOrder::Rfc3339);
  EXPECT_EQ(times.counters.regressions, 1) << "07:30Z is before 08:00Z";
  EXPECT_EQ(times.find("version-gap"), nullptr);
  EXPECT_FALSE(parse_version("1700000000000", VersionOrder::Rfc3339)) << "epoch digits are not a time";
  EXPECT_FALSE(parse_version("2.5x", VersionOrder::Numeric));
  EXPECT_TRUE(parse_version("2.5", VersionOrder::Numeric));
  auto numeric_less = [](std::string_view a, std::string_view b) {
    return compare_versions(*parse_version(a, VersionOrder::Numeric), *parse_version(b, VersionOrder::Numeric),
                            VersionOrder::Numeric);
  };
  EXPECT_EQ(numeric_less("3", "3.0"), 0);
  EXPECT_EQ(numeric_less("-0", "0.000"), 0);
  EXPECT_EQ(numeric_less("007.50", "7.5"), 0);
  EXPECT_LT(numeric_less("-2.5", "-2.25"), 0);
  EXPECT_GT(numeric_less("-2", "-12.5"), 0);
  EXPECT_LT(numeric_less("-0.1", "0"), 0);
  EXPECT_LT(numeric_less("9.99", "10"), 0);
  EXPECT_LT(numeric_less("12345678901234567890.1", "12345678901234567890.10000000000000000001"), 0);
  EXPECT_EQ(parse_version_order("rfc3339"), VersionOrder::Rfc3339);
  EXPECT_THROW(parse_version_order("semver"), UsageError);
}

namespace {

// A kept event's verdict, copied out of the analyzer.
struct Verdict {
  std::string id, entity;
  std::optional<std::string> projection;
  GuardState state;
  bool applied;
};

// The guard's verdicts over `events` against `projection` (entity → version; absent: no row), with
// the events from `window_from` on (in read order) in the replay window.
std::vector<Verdict> guard(const std::vector<OwnedEvent>& events,
                           const std::vector<std::pair<std::string, std::optional<std::string>>>& projection,
                           std::size_t window_from = 0) {
  VersionAnalyzer analyzer(VersionOrder::Numeric, 5);
  analyzer.keep_every_event();
  observe_all(analyzer, events, "json:/order");
  for (const auto& [entity, version] : projection) {
    analyzer.set_projection(entity, version ? std::optional<std::string_view>(*version) : std::nullopt);
  }
  std::vector<std::uint8_t> in_window(analyzer.kept(), 0);
  for (std::size_t i = window_from; i < in_window.size(); ++i) {
    in_window[i] = 1;
  }
  analyzer.decide_guard(in_window);
  std::vector<Verdict> out;
  for (std::size_t i = 0; i < analyzer.kept(); ++i) {
    GuardEvent e = analyzer.guard_event(i);
    out.push_back({std::string(e.id), std::string(e.entity),
                   e.projection ? std::optional<std::string>(*e.projection) : std::nullopt, e.state, e.applied});
  }
  return out;
}

std::string verdicts(const std::vector<Verdict>& events) {
  std::string out;
  for (const auto& e : events) {
    const char* state = e.state == GuardState::Covered      ? "covered"
                        : e.state == GuardState::Missing    ? "missing"
                        : e.state == GuardState::Superseded ? "superseded"
                        : e.state == GuardState::NoId       ? "no-id"
                                                            : "unchecked";
    out += fmt::format("{}:{}{} ", e.id, state, e.applied ? "+applied" : "");
  }
  return out;
}

} // namespace

TEST(VersionAnalyzer, TheProjectionsVersionDecidesCoveredMissingAndSuperseded) {
  // o-1 is at 2 in the projection: 1 and 2 are in; 3 is below 4, which the range has; 4 is the last.
  auto events = guard({change(0, 0, 100, "e-1", "o-1", "1"), change(0, 1, 200, "e-2", "o-1", "2"),
                       change(0, 2, 300, "e-3", "o-1", "3"), change(0, 3, 400, "e-4", "o-1", "4")},
                      {{"o-1", "2"}});
  EXPECT_EQ(verdicts(events), "e-1:covered e-2:covered e-3:superseded+applied e-4:missing+applied ");
  EXPECT_EQ(events[2].projection, std::optional<std::string>("2"));
  EXPECT_EQ(events[2].entity, "o-1");
}

TEST(VersionAnalyzer, AReplayAppliesWhatIsAboveTheProjectionAndEverythingAppliedBeforeIt) {
  // In the consumer's order o-1 meets 3, then 5, then 4 (dropped: below 5), then 5 again under its id.
  auto events = guard({change(0, 0, 100, "e-3", "o-1", "3"), change(0, 1, 200, "e-5", "o-1", "5"),
                       change(0, 2, 300, "e-4", "o-1", "4"), change(0, 3, 400, "e-5", "o-1", "5")},
                      {{"o-1", "2"}});
  EXPECT_EQ(verdicts(events), "e-3:superseded+applied e-5:missing+applied e-4:superseded e-5:missing ");
}

TEST(VersionAnalyzer, AcrossPartitionsTheGuardsReplayFollowsTimestamps) {
  // Partition 1's version 5 comes first by time: partition 0's version 4, read first, is dropped.
  auto events = guard({change(0, 0, 300, "e-4", "o-1", "4"), change(1, 0, 100, "e-5", "o-1", "5")}, {{"o-1", "1"}});
  EXPECT_EQ(verdicts(events), "e-4:superseded e-5:missing+applied ");
}

TEST(VersionAnalyzer, OnlyTheWindowIsReplayedAndNoRowTakesEveryVersion) {
  // o-2 has no row: the first delivery of the window inserts it. Events before the window are not
  // delivered again, so they raise nothing.
  auto events = guard({change(0, 0, 100, "e-7", "o-2", "7"), change(0, 1, 200, "e-6", "o-2", "6"),
                       change(0, 2, 300, "e-8", "o-2", "8")},
                      {{"o-2", std::nullopt}}, 1);
  EXPECT_EQ(verdicts(events), "e-7:superseded e-6:superseded+applied e-8:missing+applied ");
  EXPECT_FALSE(events[0].projection);
}

TEST(VersionAnalyzer, WhatTheGuardCannotCompareIsKeptUndecidedNeverCovered) {
  auto unversioned = with_header_id(0, 2, 300, "e-9", R"({"order":"o-1"})");
  auto events = guard({change(0, 0, 100, "e-1", "o-1", "1"), change(0, 1, 200, "e-2", "o-3", "2"), unversioned},
                      {{"o-1", "5"}, {"o-3", "not a number"}});
  EXPECT_EQ(verdicts(events), "e-1:covered e-2:unchecked+applied e-9:unchecked+applied ");
}

TEST(VersionAnalyzer, AnEntityWhoseProjectionWasNeverLookedUpIsNotJudgedAsHavingNoRow) {
  // The store failed before o-4's batch was looked up: no row is not what it said.
  auto events = guard({change(0, 0, 100, "e-1", "o-1", "1"), change(0, 1, 200, "e-4", "o-4", "1")}, {{"o-1", "1"}});
  EXPECT_EQ(verdicts(events), "e-1:covered e-4:unchecked+applied ");
}

namespace {

OwnedEvent step(std::int32_t partition, std::int64_t offset, std::int64_t ts, const std::string& id,
                const std::string& order, const std::string& type) {
  return with_header_id(partition, offset, ts, id, fmt::format(R"({{"order":"{}","type":"{}"}})", order, type));
}

// A state guard's verdicts over `events` against `projection` (entity → state; absent: no row), the
// events from `window_from` on in the window; `findings` gets the log's findings.
std::vector<Verdict> state_guard(const std::vector<OwnedEvent>& events,
                                 const std::vector<std::pair<std::string, std::optional<std::string>>>& projection,
                                 std::size_t window_from = 0, std::vector<Finding>* findings = nullptr) {
  static const TransitionTable table = TransitionTable::parse(dedupctl::testing::k_order_transitions, "orders.toml");
  VersionAnalyzer analyzer(VersionOrder::Lexical, 5);
  analyzer.use_transitions(&table);
  analyzer.keep_every_event();
  IdentifyOptions options = default_identify_options();
  options.entity = parse_field_specs("json:/order", "--entity");
  observe_with(analyzer, events, options);
  for (const auto& [entity, state] : projection) {
    analyzer.set_projection(entity, state ? std::optional<std::string_view>(*state) : std::nullopt);
  }
  std::vector<std::uint8_t> in_window(analyzer.kept(), 0);
  for (std::size_t i = window_from; i < in_window.size(); ++i) {
    in_window[i] = 1;
  }
  analyzer.decide_guard(in_window);
  if (findings) {
    *findings = analyzer.findings();
  }
  std::vector<Verdict> out;
  for (std::size_t i = 0; i < analyzer.kept(); ++i) {
    GuardEvent e = analyzer.guard_event(i);
    out.push_back({std::string(e.id), std::string(e.entity),
                   e.projection ? std::optional<std::string>(*e.projection) : std::nullopt, e.state, e.applied});
  }
  return out;
}

const Finding* find(const std::vector<Finding>& findings, const std::string& id) {
  for (const auto& f : findings) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

} // namespace

// A projection restored to "pending": the placement is in, the payment and the shipment are not, and
// a replay applies both, in order. Another order already shipped is covered throughout.
TEST(VersionAnalyzerStates, TheProjectionsStateDecidesCoveredAndTheReplayFollowsTheTransitions) {
  auto events = state_guard({step(0, 0, 100, "e-1", "o-1", "OrderPlaced"), step(0, 1, 200, "e-2", "o-1", "OrderPaid"),
                             step(0, 2, 300, "e-3", "o-1", "OrderShipped"), step(0, 3, 400, "e-4", "o-2", "OrderPaid")},
                            {{"o-1", "pending"}, {"o-2", "shipped"}});
  EXPECT_EQ(verdicts(events), "e-1:covered e-2:missing+applied e-3:missing+applied e-4:covered ");
  EXPECT_EQ(events[1].projection, std::optional<std::string>("pending"));
}

// The guard drops a shipment read before its payment (another partition, an earlier timestamp): it is
// missing and a replay does not apply it, while the payment after it is applied.
TEST(VersionAnalyzerStates, AChangeBeforeTheStateItMovesFromIsNotApplied) {
  auto events = state_guard({step(0, 0, 300, "e-2", "o-1", "OrderPaid"), step(1, 0, 200, "e-3", "o-1", "OrderShipped")},
                            {{"o-1", "pending"}});
  EXPECT_EQ(verdicts(events), "e-2:missing+applied e-3:missing ");
}

// Only the window is delivered; without a row only what creates the entity applies, and a state the
// transitions do not name (or an entity never looked up) is not judged.
TEST(VersionAnalyzerStates, OnlyTheWindowIsDeliveredAndAStateTheTableLacksIsNotJudged) {
  auto none = state_guard({step(0, 0, 100, "e-1", "o-1", "OrderPlaced"), step(0, 1, 200, "e-2", "o-1", "OrderPaid")},
                          {{"o-1", std::nullopt}}, 1);
  EXPECT_EQ(verdicts(none), "e-1:missing e-2:missing ") << "no row and the placement not delivered: nothing moves";
  auto odd = state_guard({step(0, 0, 100, "e-1", "o-1", "OrderPaid"), step(0, 1, 200, "e-2", "o-9", "OrderPaid")},
                         {{"o-1", "archived"}});
  EXPECT_EQ(verdicts(odd), "e-1:unchecked+applied e-2:unchecked+applied ");
}

// The log's findings under a state guard: a delivery whose shipment the range lacks is a
// transition-gap; a type the transitions do not name is not checked (counted, named); no version
// finding is made.
TEST(VersionAnalyzerStates, AStateTheRangeNeverReachesIsATransitionGapAndAnUnknownTypeIsUnchecked) {
  std::vector<Finding> findings;
  auto events =
      state_guard({step(0, 0, 100, "e-1", "o-1", "OrderPlaced"), step(0, 1, 200, "e-2", "o-1", "OrderPaid"),
                   step(0, 2, 300, "e-3", "o-1", "OrderDelivered"), step(0, 3, 400, "e-4", "o-1", "OrderRefunded")},
                  {{"o-1", "delivered"}}, 0, &findings);
  EXPECT_EQ(verdicts(events), "e-1:covered e-2:covered e-3:covered e-4:unchecked+applied ");
  const Finding* gap = find(findings, "transition-gap");
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->count, 1);
  EXPECT_EQ(gap->severity, Severity::Warning);
  ASSERT_EQ(gap->examples.size(), 1u);
  EXPECT_EQ(gap->examples[0].event_id, "e-3");
  EXPECT_NE(gap->examples[0].note.find("entity o-1 OrderDelivered moves from shipped"), std::string::npos)
      << gap->examples[0].note;
  const Finding* unchecked = find(findings, "version-unchecked");
  ASSERT_NE(unchecked, nullptr);
  EXPECT_EQ(unchecked->count, 1);
  EXPECT_NE(unchecked->examples[0].note.find("type 'OrderRefunded' is not in the transitions"), std::string::npos);
  EXPECT_EQ(find(findings, "version-regression"), nullptr);
  EXPECT_EQ(find(findings, "version-gap"), nullptr);
}
