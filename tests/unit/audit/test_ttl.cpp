#include "core/audit/retention.hpp"
#include "core/audit/ttl.hpp"
#include "core/span.hpp"
#include "tests/unit/fakes.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

constexpr std::int64_t k_hour = 3'600'000;
constexpr std::int64_t k_day = 24 * k_hour;

TEST(TtlDecision, EverySourceHasItsReportNameAndItsWords) {
  struct Row {
    TtlSource source;
    std::string_view report, words;
  };
  for (const auto& row :
       {Row{TtlSource::Flag, "flag", "flag"}, Row{TtlSource::Estimated, "estimate", "estimated from the records"},
        Row{TtlSource::InboxRetentionFlag, "flag", "--inbox-retention"},
        Row{TtlSource::InboxRetentionEstimated, "estimate", "estimated from the oldest row"},
        Row{TtlSource::None, "unknown", "unknown"}}) {
    EXPECT_EQ(report_name(row.source), row.report);
    EXPECT_EQ(describe(row.source), row.words);
  }
}

TEST(TtlDecision, ADeclaredTtlIsTheFlagAndNothingIsNone) {
  EXPECT_EQ(declared_ttl(Span::finite(k_hour)).source, TtlSource::Flag);
  EXPECT_EQ(declared_ttl(Span::infinite()).source, TtlSource::Flag);
  auto none = declared_ttl(Span::unknown());
  EXPECT_EQ(none.source, TtlSource::None);
  EXPECT_FALSE(none.span.known());
}

TEST(TtlDecision, AnInboxTakesTheFlagThenTheOldestRowThenNothing) {
  auto flag = inbox_ttl(Span::finite(7 * k_day), 2 * k_day);
  EXPECT_EQ(flag.source, TtlSource::InboxRetentionFlag);
  EXPECT_EQ(flag.span, Span::finite(7 * k_day));
  auto oldest = inbox_ttl(std::nullopt, 2 * k_day);
  EXPECT_EQ(oldest.source, TtlSource::InboxRetentionEstimated);
  EXPECT_EQ(oldest.span, Span::finite(2 * k_day));
  EXPECT_TRUE(oldest.estimated());
  auto nothing = inbox_ttl(std::nullopt, std::nullopt);
  EXPECT_EQ(nothing.source, TtlSource::None);
  EXPECT_FALSE(nothing.span.known());
}

TEST(TtlDecision, TheEstimateReplacesOnlyAnUndeclaredTtl) {
  TtlEstimator estimator;
  estimator.observe(50 * 60'000, 0, 10 * 60'000); // 1h TTL, written at ts, seen 10 min later
  auto estimated = with_estimate(declared_ttl(Span::unknown()), estimator);
  EXPECT_EQ(estimated.source, TtlSource::Estimated);
  EXPECT_EQ(estimated.span, Span::finite(k_hour)); // the upper bound
  EXPECT_EQ(estimated.estimate_low, 50 * 60'000);
  auto declared = with_estimate(declared_ttl(Span::finite(2 * k_hour)), estimator);
  EXPECT_EQ(declared.source, TtlSource::Flag);
  EXPECT_EQ(declared.span, Span::finite(2 * k_hour));
  EXPECT_EQ(declared.estimate_high, k_hour) << "the bounds are reported beside a declared TTL";
  auto none = with_estimate(declared_ttl(Span::unknown()), TtlEstimator{});
  EXPECT_EQ(none.source, TtlSource::None);
}

TEST(TtlVsRetention, ShorterThinOrFine) {
  auto shorter = ttl_vs_retention("TTL (1h, flag)", Span::finite(k_hour), Span::finite(7 * k_day), 0);
  ASSERT_TRUE(shorter);
  EXPECT_EQ(shorter->id, "ttl-shorter-than-retention");
  EXPECT_EQ(shorter->severity, Severity::Error);
  EXPECT_EQ(shorter->title, "the TTL (1h, flag) is shorter than the topic's retention (7d)");
  EXPECT_NE(shorter->advice.find("at least 8d (retention 7d + max lag 0s + 1 day)"), std::string::npos)
      << shorter->advice;
  // Equal to the retention: not shorter, but within the margin of max lag + 1 day.
  auto thin = ttl_vs_retention("ttl (7d)", Span::finite(7 * k_day), Span::finite(7 * k_day), k_hour);
  ASSERT_TRUE(thin);
  EXPECT_EQ(thin->id, "ttl-margin-thin");
  EXPECT_EQ(thin->severity, Severity::Warning);
  // The margin's edge: retention + lag + 1 day is enough, a millisecond less is thin.
  EXPECT_FALSE(ttl_vs_retention("t", Span::finite(8 * k_day + k_hour), Span::finite(7 * k_day), k_hour));
  EXPECT_TRUE(ttl_vs_retention("t", Span::finite(8 * k_day + k_hour - 1), Span::finite(7 * k_day), k_hour));
}

TEST(TtlVsRetention, InfiniteAndUnknownFigures) {
  // A topic that keeps events forever outlives every finite TTL.
  auto forever = ttl_vs_retention("t", Span::finite(30 * k_day), Span::infinite(), 0);
  ASSERT_TRUE(forever);
  EXPECT_EQ(forever->id, "ttl-shorter-than-retention");
  EXPECT_NE(forever->advice.find("no expiry at all"), std::string::npos);
  // No expiry, or a figure not known: nothing to compare.
  EXPECT_FALSE(ttl_vs_retention("t", Span::infinite(), Span::finite(k_day), 0));
  EXPECT_FALSE(ttl_vs_retention("t", Span::unknown(), Span::finite(k_day), 0));
  EXPECT_FALSE(ttl_vs_retention("t", Span::finite(k_hour), Span::unknown(), 0));
}

} // namespace
} // namespace dedupctl::core

namespace dedupctl::core {
namespace {

TEST(TtlVsRetention, FiguresNearTheLimitSaturateInsteadOfWrapping) {
  // retention = "106751991167d" once wrapped past INT64_MAX into "9h34m8s384ms" and hid the margin.
  std::int64_t huge = 106'751'991'167LL * 24 * 3'600'000LL;
  auto thin = ttl_vs_retention("ttl (x)", Span::finite(huge + 1000), Span::finite(huge), 3'600'000);
  ASSERT_TRUE(thin);
  EXPECT_EQ(thin->id, "ttl-margin-thin");
  EXPECT_EQ(ttl_needed(Span::finite(huge), 3'600'000).find("at least 9h"), std::string::npos);
  auto shorter = ttl_vs_retention("ttl (x)", Span::finite(1000), Span::finite(huge), INT64_MAX);
  ASSERT_TRUE(shorter);
  EXPECT_EQ(shorter->id, "ttl-shorter-than-retention");
}

} // namespace
} // namespace dedupctl::core

// A declared figure names where it was declared; the report-v1 source stays "flag" (declared).
TEST(TtlDecision, ADeclaredFigureSaysWhereItWasDeclared) {
  using namespace dedupctl::core;
  auto ttl = declared_ttl(Span::finite(3'600'000));
  EXPECT_EQ(describe(ttl), "flag");
  ttl.origin = ValueOrigin::Config;
  EXPECT_EQ(describe(ttl), "config");
  EXPECT_EQ(report_name(ttl.source), "flag");
  auto inbox = inbox_ttl(Span::finite(1), std::nullopt);
  EXPECT_EQ(describe(inbox), "--inbox-retention");
  inbox.origin = ValueOrigin::Environment;
  EXPECT_EQ(describe(inbox), "inbox-retention, environment");
  EXPECT_EQ(describe(inbox_ttl(std::nullopt, 5)), "estimated from the oldest row");
  RetentionDecision retention{Span::finite(1), RetentionSource::Flag, ValueOrigin::Config};
  EXPECT_EQ(describe(retention), "config");
  retention.source = RetentionSource::Broker;
  EXPECT_EQ(describe(retention), "broker");
}

// A compacted topic keeps the latest event of every key: the advice says no finite TTL covers it.
TEST(TtlVsRetention, ACompactedTopicSaysWhatCompactionMeansForTheTtl) {
  using namespace dedupctl::core;
  auto plain = ttl_vs_retention("TTL (1h, flag)", Span::finite(3'600'000), Span::infinite(), 0);
  auto compacted = ttl_vs_retention("TTL (1h, flag)", Span::finite(3'600'000), Span::infinite(), 0, true);
  ASSERT_TRUE(plain && compacted);
  EXPECT_EQ(plain->advice.find("compacted"), std::string::npos);
  EXPECT_NE(compacted->advice.find("The topic is compacted"), std::string::npos) << compacted->advice;
  EXPECT_TRUE(is_compacted(TopicRetention{std::nullopt, std::string("compact,delete"), std::nullopt}));
  EXPECT_FALSE(is_compacted(TopicRetention{std::nullopt, std::string("delete"), std::nullopt}));
}

namespace dedupctl {
namespace {

using testing::FakeInboxStore;
using testing::FakeTopicConfigs;
constexpr std::int64_t k_hour = 3'600'000;

TEST(DecideRetention, TheFlagWinsThenTheBrokerThenUnknown) {
  FakeTopicConfigs broker;
  broker.answer = core::TopicRetention{"86400000", "delete", std::nullopt};
  auto flag = core::decide_retention(core::Span::finite(7 * 24 * k_hour), {"orders"}, &broker);
  EXPECT_EQ(flag.source, core::RetentionSource::Flag);
  EXPECT_TRUE(broker.asked.empty()) << "a flag means the broker is not asked";
  auto described = core::decide_retention(core::Span::unknown(), {"orders", "other"}, &broker);
  EXPECT_EQ(described.source, core::RetentionSource::Broker);
  EXPECT_EQ(described.span, core::Span::finite(24 * k_hour));
  EXPECT_EQ(broker.asked, std::vector<std::string>{"orders"});
  broker.answer = core::TopicRetention{"604800000", "compact", std::nullopt};
  EXPECT_TRUE(core::decide_retention(core::Span::unknown(), {"orders"}, &broker).span.is_infinite());
  broker.answer.reset(); // the mock cluster: no answer
  auto unknown = core::decide_retention(core::Span::unknown(), {"orders"}, &broker);
  EXPECT_EQ(unknown.source, core::RetentionSource::Unknown);
  EXPECT_FALSE(unknown.span.known());
  EXPECT_EQ(core::decide_retention(core::Span::unknown(), {"orders"}, nullptr).source, core::RetentionSource::Unknown);
}

// The rule moved from commands/store into core: a declared --inbox-retention wins and the inbox is
// not asked; without one, the oldest row's age bounds the TTL from below, as of `now`.
TEST(DecideInboxTtl, TheFlagWinsWithoutAskingTheInboxElseTheOldestRow) {
  FakeInboxStore inbox;
  inbox.oldest_age_ms = 2 * 24 * k_hour;
  auto flag = core::decide_inbox_ttl(inbox, core::Span::finite(7 * 24 * k_hour), 1000, core::ValueOrigin::Config);
  EXPECT_EQ(flag.source, core::TtlSource::InboxRetentionFlag);
  EXPECT_EQ(flag.origin, core::ValueOrigin::Config);
  EXPECT_TRUE(inbox.asked_at.empty()) << "a declared retention means the inbox is not asked";
  auto oldest = core::decide_inbox_ttl(inbox, std::nullopt, 1000);
  EXPECT_EQ(oldest.source, core::TtlSource::InboxRetentionEstimated);
  EXPECT_EQ(oldest.span, core::Span::finite(2 * 24 * k_hour));
  EXPECT_EQ(inbox.asked_at, std::vector<std::int64_t>{1000});
  inbox.oldest_age_ms.reset(); // an empty inbox
  EXPECT_EQ(core::decide_inbox_ttl(inbox, std::nullopt, 1000).source, core::TtlSource::None);
}

} // namespace
} // namespace dedupctl
