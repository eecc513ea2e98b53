#include "core/source/offset_spec.hpp"
#include "core/source/source_info.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

TEST(OffsetSpec, ParsesEveryForm) {
  EXPECT_EQ(parse_offset_spec("earliest", "--from").kind, SpecKind::Earliest);
  EXPECT_EQ(parse_offset_spec("latest", "--from").kind, SpecKind::Latest);
  EXPECT_EQ(parse_offset_spec("committed", "--from").kind, SpecKind::Committed);
  auto n = parse_offset_spec("1200", "--from");
  EXPECT_EQ(n.kind, SpecKind::Absolute);
  EXPECT_EQ(n.value, 1200);
  auto rel = parse_offset_spec("-500", "--from");
  EXPECT_EQ(rel.kind, SpecKind::Relative);
  EXPECT_EQ(rel.value, 500);
  auto at = parse_offset_spec("@2026-11-20T08:00:00Z", "--from");
  EXPECT_EQ(at.kind, SpecKind::Timestamp);
  EXPECT_EQ(at.value, 1'795'161'600'000LL);
  EXPECT_EQ(parse_offset_spec("@1795161600000", "--from").value, 1'795'161'600'000LL);
  auto ago = parse_offset_spec("-6h", "--from");
  EXPECT_EQ(ago.kind, SpecKind::Ago);
  EXPECT_EQ(ago.value, 6 * 3'600'000);
  EXPECT_EQ(parse_offset_spec("-PT6H", "--from").kind, SpecKind::Ago);
  auto s = parse_offset_spec("s@1000", "--from");
  EXPECT_EQ(s.kind, SpecKind::Timestamp);
  EXPECT_EQ(s.value, 1000);
  EXPECT_EQ(parse_offset_spec("e@2000", "--to").value, 2000);
}

TEST(OffsetSpec, RejectsGarbageNamingTheFlag) {
  for (const char* bad : {"", "soon", "-", "--5", "12abc", "@", "@tomorrow", "s@", "s@x", "-5x", "+5"}) {
    try {
      parse_offset_spec(bad, "--seek");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--seek"), std::string::npos);
    }
  }
}

namespace {
PartitionFacts facts(std::int64_t start, std::int64_t end, std::optional<std::int64_t> committed = std::nullopt) {
  PartitionFacts f;
  f.log_start = start;
  f.log_end = end;
  f.committed = committed;
  return f;
}
ResolvedOffset resolve(const std::string& spec, SpecRole role, PartitionFacts f, bool group = false) {
  return resolve_offset(parse_offset_spec(spec, "--from"), role, f, group, 10'000'000);
}
} // namespace

TEST(ResolveOffset, EarliestLatestAndAbsolute) {
  EXPECT_EQ(resolve("earliest", SpecRole::From, facts(100, 900)).offset, 100);
  EXPECT_EQ(resolve("latest", SpecRole::From, facts(100, 900)).offset, 900);
  EXPECT_EQ(resolve("500", SpecRole::From, facts(100, 900)).offset, 500);
  EXPECT_EQ(resolve("5000", SpecRole::To, facts(100, 900)).offset, 900);
}

TEST(ResolveOffset, AStartBeforeTheLogStartIsClampedAndSaysSo) {
  auto r = resolve("5", SpecRole::From, facts(100, 900));
  EXPECT_EQ(r.offset, 100);
  EXPECT_TRUE(r.clamped);
  EXPECT_EQ(r.requested, 5);
  auto exact = resolve("100", SpecRole::From, facts(100, 900));
  EXPECT_FALSE(exact.clamped);
  // An end before the log start makes an empty range; it is not a clamped start.
  auto end = resolve("5", SpecRole::To, facts(100, 900));
  EXPECT_EQ(end.offset, 100);
  EXPECT_FALSE(end.clamped);
}

TEST(ResolveOffset, RelativeCountsBackFromTheEndOrFromCommitted) {
  EXPECT_EQ(resolve("-300", SpecRole::From, facts(100, 900)).offset, 600);
  auto far = resolve("-5000", SpecRole::From, facts(100, 900));
  EXPECT_EQ(far.offset, 100);
  EXPECT_TRUE(far.clamped);
  EXPECT_EQ(resolve("-300", SpecRole::Seek, facts(100, 900, 700), true).offset, 400);
  EXPECT_THROW(resolve("-300", SpecRole::Seek, facts(100, 900)), UsageError);
}

TEST(ResolveOffset, CommittedNeedsAGroupAndFallsBackToTheLogStart) {
  EXPECT_THROW(resolve("committed", SpecRole::From, facts(0, 10)), UsageError);
  EXPECT_EQ(resolve("committed", SpecRole::From, facts(0, 10, 7), true).offset, 7);
  auto none = resolve("committed", SpecRole::From, facts(3, 10), true);
  EXPECT_EQ(none.offset, 3);
  EXPECT_TRUE(none.no_committed);
}

TEST(ResolveOffset, TimesUseTheBrokersAnswerOrFallBackToSkipping) {
  auto f = facts(100, 900);
  f.time_lookup = 450;
  EXPECT_EQ(resolve("@5000", SpecRole::From, f).offset, 450);
  EXPECT_FALSE(resolve("@5000", SpecRole::From, f).timestamp_filter.has_value());
  f.time_lookup = -1; // the mock, or a broker that cannot answer
  auto from = resolve("@5000", SpecRole::From, f);
  EXPECT_EQ(from.offset, 100);
  EXPECT_EQ(from.timestamp_filter, 5000);
  auto to = resolve("@5000", SpecRole::To, f);
  EXPECT_EQ(to.offset, 900);
  EXPECT_EQ(to.timestamp_filter, 5000);
  // -DURATION is now - DURATION.
  auto ago = resolve("-1h", SpecRole::From, f);
  EXPECT_EQ(ago.timestamp_filter, 10'000'000 - 3'600'000);
  // An empty partition has nothing to skip: the range is empty at the log end.
  auto empty = resolve("@5000", SpecRole::From, facts(50, 50));
  EXPECT_EQ(empty.offset, 50);
  EXPECT_FALSE(empty.timestamp_filter.has_value());
}

namespace {

SourceInfo group_source(std::vector<std::optional<std::int64_t>> committed) {
  SourceInfo info;
  info.kind = core::SourceKind::Kafka;
  info.group = "billing";
  for (std::size_t p = 0; p < committed.size(); ++p) {
    PartitionRange range;
    range.topic = "orders";
    range.partition = static_cast<std::int32_t>(p);
    range.log_start = 0;
    range.log_end = p == 3 ? 0 : 100; // partition 3 holds no events
    range.committed = committed[p];
    info.partitions.push_back(range);
  }
  return info;
}

} // namespace

// Like kafka-consumer-groups, which will not shift a partition that has no committed offset: a
// window counted from a committed offset that is not there is refused, never the whole log.
TEST(CommittedOffsetsMissing, ASpecCountingFromCommittedNeedsItWhereEventsAre) {
  auto back = parse_offset_spec("-10", "--seek");
  auto at = parse_offset_spec("40", "--seek");
  auto committed = parse_offset_spec("committed", "--from");
  auto earliest = parse_offset_spec("earliest", "--from");

  auto partial = group_source({50, std::nullopt, 70, std::nullopt});
  auto why = committed_offsets_missing(partial, &back, {&earliest});
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("group 'billing' has no committed offset on orders[1] (1 of 3 partitions holding events)"),
            std::string::npos)
      << *why;
  EXPECT_NE(why->find("'-10' counts from the committed offset"), std::string::npos) << *why;
  EXPECT_NE(why->find("kafka-consumer-groups --describe --group billing"), std::string::npos) << *why;
  EXPECT_FALSE(committed_offsets_missing(partial, &at, {&earliest})) << "an absolute seek has a base";
  EXPECT_TRUE(committed_offsets_missing(partial, nullptr, {&committed}));
  EXPECT_FALSE(committed_offsets_missing(partial, nullptr, {&earliest}));

  auto none = group_source({std::nullopt, std::nullopt, std::nullopt, std::nullopt});
  auto empty_window = committed_offsets_missing(none, &at, {&earliest});
  ASSERT_TRUE(empty_window) << "a group that committed nothing here is most likely misspelt";
  EXPECT_NE(empty_window->find("3 of 3 partitions"), std::string::npos) << *empty_window;
  EXPECT_NE(empty_window->find("would have no end"), std::string::npos) << *empty_window;
  EXPECT_FALSE(committed_offsets_missing(none, nullptr, {&earliest})) << "a scan of the range needs no commits";

  EXPECT_FALSE(committed_offsets_missing(group_source({50, 60, 70, std::nullopt}), &back, {}))
      << "an empty partition needs no committed offset";
  auto many = group_source(std::vector<std::optional<std::int64_t>>(9, std::nullopt));
  auto listed = committed_offsets_missing(many, &back, {});
  ASSERT_TRUE(listed);
  EXPECT_NE(listed->find("orders[5] and 3 more (8 of 8 partitions holding events)"), std::string::npos) << *listed;

  auto no_group = partial;
  no_group.group.reset();
  EXPECT_FALSE(committed_offsets_missing(no_group, &back, {}));
}

// A group the connector found to be no consumer group is said as what it is, never as a misspelt
// name; only when the window needs the commits it lacks.
TEST(CommittedOffsetsMissing, AGroupThatIsNoConsumerGroupIsSaidAsSuch) {
  auto back = parse_offset_spec("-10", "--seek");
  auto earliest = parse_offset_spec("earliest", "--from");
  auto none = group_source({std::nullopt, std::nullopt, std::nullopt, std::nullopt});
  none.group_kind = GroupKindInfo{GroupKind::Share, "", ""};
  auto share = committed_offsets_missing(none, &back, {&earliest});
  ASSERT_TRUE(share);
  EXPECT_NE(share->find("group 'billing' is a share group (KIP-932), not a consumer group"), std::string::npos);
  EXPECT_NE(share->find("kafka-share-groups --reset-offsets --group billing"), std::string::npos) << *share;
  EXPECT_NE(share->find("group.share.delivery.count.limit"), std::string::npos) << *share;
  EXPECT_EQ(share->find("Check the group name"), std::string::npos) << *share;
  EXPECT_FALSE(committed_offsets_missing(none, nullptr, {&earliest})) << "a range that needs no commits";

  none.group_kind = GroupKindInfo{GroupKind::Streams, "", ""};
  EXPECT_NE(committed_offsets_missing(none, &back, {})->find("is a Kafka Streams group (KIP-1071)"), std::string::npos);
  none.group_kind = GroupKindInfo{GroupKind::Other, "connect", ""};
  EXPECT_NE(committed_offsets_missing(none, &back, {})->find("is a 'connect' group, not a consumer group"),
            std::string::npos);
  none.group_kind = GroupKindInfo{GroupKind::Listed, "", "reading __consumer_offsets: not authorized"};
  auto listed = committed_offsets_missing(none, &back, {});
  EXPECT_NE(listed->find("is not a consumer group: the cluster lists it"), std::string::npos) << *listed;
  EXPECT_NE(listed->find("(reading __consumer_offsets: not authorized)"), std::string::npos) << *listed;
}

// What an operator types to kafka-consumer-groups --reset-offsets works as a SPEC too.
TEST(OffsetSpec, KafkaConsumerGroupsSpellingsAreAccepted) {
  auto by_duration = parse_offset_spec("P1DT2H", "--seek");
  EXPECT_EQ(by_duration.kind, SpecKind::Ago);
  EXPECT_EQ(by_duration.value, 26 * 3'600'000LL);
  auto datetime = parse_offset_spec("2026-11-20T00:09:30.000Z", "--seek");
  EXPECT_EQ(datetime.kind, SpecKind::Timestamp);
  EXPECT_EQ(datetime.value, parse_offset_spec("@2026-11-20T00:09:30Z", "--seek").value);
  try {
    parse_offset_spec("2026-11-20T00:09:30.000", "--seek");
    ADD_FAILURE() << "a time without a zone was guessed";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("give the time zone"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_offset_spec("Pnope", "--seek"), UsageError);
}
