#include "core/util/errors.hpp"
#include "core/util/time.hpp"
#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace dedupctl;
using namespace dedupctl::core;
using namespace dedupctl::reports;
using dedupctl::testing::golden;
using dedupctl::testing::rendered;
using dedupctl::testing::sample;

TEST(Formats, ParseAndRefuseUnknown) {
  EXPECT_EQ(parse_format("json"), Format::Json);
  EXPECT_EQ(parse_format("markdown"), Format::Markdown);
  EXPECT_THROW(parse_format("yaml"), UsageError);
  EXPECT_THROW(parse_format("pdf"), UsageError);
  EXPECT_EQ(parse_format("html"), Format::Html);
}

TEST(Formats, HtmlIsOneSelfContainedPageWithEscapedText) {
  auto report = sample();
  report.findings.front().title = "a <script>alert(1)</script> & more";
  std::string html = rendered(report, Format::Html);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(html.find("<script"), std::string::npos) << "text is escaped, and the page has no script";
  EXPECT_NE(html.find("a &lt;script&gt;alert(1)&lt;/script&gt; &amp; more"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos) << "no external request";
  EXPECT_NE(html.find("id=\"verdict\""), std::string::npos);
  EXPECT_LT(html.find("id=\"verdict\""), html.find("Findings"));
}

namespace {} // namespace

// An audit that could not read its whole window (the store died at lookup 45,056 of 300,000): no
// format says what a seek would re-apply or where it is safe from, since both are answers about the
// events not read.
TEST(Formats, AnIncompleteAuditSaysNoSafeFromAndNoReapplyCountInAnyFormat) {
  Report report;
  report.command = "audit";
  report.complete = false;
  report.exit_code = 3;
  report.error = "cannot reach Redis at redis://127.0.0.1:6390";
  ReplaySummary replay;
  replay.window = "[seek, committed)";
  replay.events = 45056;
  replay.would_skip = 45000;
  replay.would_reapply = 56;
  replay.would_reapply_applied = 50;
  replay.would_reapply_unapplied = 6;
  replay.by_type["PaymentCharged"] = TypeRisk{SideEffect::External, 56};
  replay.safe_from.push_back(SafeFrom{"orders", 0, 0, parse_time("2026-11-20T08:00:00Z")});
  report.replay = replay;
  auto json = nlohmann::json::parse(rendered(report, Format::Json));
  const auto& r = json.at("replay");
  EXPECT_TRUE(r.at("safe_from").is_null()) << r.dump();
  EXPECT_TRUE(r.at("would_reapply").is_null()) << r.dump();
  EXPECT_TRUE(r.at("by_type").is_null()) << r.dump();
  EXPECT_FALSE(r.contains("would_reapply_applied")) << r.dump();
  EXPECT_EQ(r.at("events"), 45056);
  for (auto format : {Format::Text, Format::Markdown, Format::Html}) {
    std::string out = rendered(report, format);
    EXPECT_EQ(out.find("safe from"), std::string::npos) << out;
    EXPECT_EQ(out.find("orders[0]@0"), std::string::npos) << out;
    EXPECT_EQ(out.find("re-applied"), std::string::npos) << out;
    EXPECT_EQ(out.find("PaymentCharged"), std::string::npos) << out;
    EXPECT_NE(out.find("not known"), std::string::npos) << out;
  }
  // The same summary in a complete report says all of it.
  report.complete = true;
  report.exit_code = 1;
  report.error.reset();
  std::string text = rendered(report, Format::Text);
  EXPECT_NE(text.find("safe from orders[0]@0"), std::string::npos) << text;
  EXPECT_NE(text.find("56 re-applied"), std::string::npos) << text;
}

// An id that is not UTF-8 (a binary key): the JSON document stays valid, the id with U+FFFD for each
// byte that is not UTF-8 and its bytes in event_id_base64; the human formats show the bytes escaped.
TEST(Formats, AnIdThatIsNotUtf8StaysValidJsonWithItsBytesBeside) {
  auto report = sample();
  ASSERT_FALSE(report.findings.empty());
  Example example;
  example.event_id = "k-\xc3\x28-\xff";
  example.topic = "orders";
  example.dedup_key = "dedup:k-\xc3\x28-\xff";
  report.findings.front().examples = {example};
  auto json = nlohmann::json::parse(rendered(report, Format::Json)); // throws on invalid UTF-8
  const auto& e = json.at("findings")[0].at("examples")[0];
  EXPECT_EQ(e.at("event_id"), "k-\xef\xbf\xbd(-\xef\xbf\xbd");
  EXPECT_EQ(e.at("event_id_base64"), "ay3DKC3/");
  EXPECT_FALSE(json.at("findings")[0].at("examples")[0].at("dedup_key").get<std::string>().empty());
  for (auto format : {Format::Text, Format::Markdown, Format::Html, Format::Junit}) {
    std::string out = rendered(report, format);
    EXPECT_EQ(out.find("\xc3\x28"), std::string::npos) << "raw bytes in format " << static_cast<int>(format);
  }
  EXPECT_NE(rendered(report, Format::Markdown).find("k-\\xc3(-\\xff"), std::string::npos);
  EXPECT_NE(rendered(report, Format::Html).find("k-\\xc3(-\\xff"), std::string::npos);
  for (auto format : {Format::Sarif, Format::Gitlab}) {
    EXPECT_TRUE(nlohmann::json::accept(rendered(report, format))) << static_cast<int>(format);
  }
}
