#include "core/util/errors.hpp"
#include "core/util/time.hpp"
#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace dedupctl;
using namespace dedupctl::core;
using namespace dedupctl::reports;
using dedupctl::testing::golden;
using dedupctl::testing::rendered;

namespace {

Report sample() {
  Report report;
  report.command = "scan";
  report.generated_at_ms = parse_time("2026-11-20T08:00:00Z");
  report.exit_code = 1;
  SourceInfo source;
  source.kind = "kafka";
  source.topics = {"orders"};
  source.bootstrap = "broker:9092";
  source.isolation = "read_committed";
  source.group = "billing";
  PartitionRange range;
  range.topic = "orders";
  range.from = 100;
  range.to = 1000;
  range.log_start = 100;
  range.log_end = 1000;
  range.committed = 900;
  range.events = 900;
  range.first_timestamp = parse_time("2026-11-20T07:00:00Z");
  range.last_timestamp = parse_time("2026-11-20T08:00:00Z");
  source.partitions.push_back(range);
  report.source = source;
  report.summary = {{"events", 900}, {"no_id", 3}, {"log_duplicates", 2}, {"id_reuse", 1}, {"semantic_duplicates", 0}};
  Finding reuse;
  reuse.id = "id-reuse";
  reuse.severity = Severity::Error;
  reuse.title = "1 events reuse an event id with a different payload";
  reuse.count = 1;
  reuse.partitions = {0};
  reuse.examples.push_back(
      Example{"e-17", "orders", 0, 117, parse_time("2026-11-20T07:30:00Z"), "", "payload differs"});
  reuse.advice = "Give every event a fresh id.";
  Finding missing;
  missing.id = "missing-event-id";
  missing.severity = Severity::Warning;
  missing.title = "3 events carry no event id";
  missing.count = 3;
  missing.partitions = {0};
  missing.examples.push_back(Example{"", "orders", 0, 5, -1, "", ""});
  missing.advice = "Check --id.";
  report.findings = {reuse, missing};
  return report;
}

} // namespace

TEST(JsonReport, MatchesTheReportV1Golden) { EXPECT_EQ(rendered(sample(), Format::Json), golden("scan_report.json")); }

TEST(JsonReport, AnIncompleteReportSaysWhy) {
  Report report;
  report.command = "scan";
  report.complete = false;
  report.exit_code = 3;
  report.error = "cannot reach Kafka at b:1";
  auto text = rendered(report, Format::Json);
  EXPECT_NE(text.find("\"complete\": false"), std::string::npos);
  EXPECT_NE(text.find("\"exit_code\": 3"), std::string::npos);
  EXPECT_NE(text.find("\"message\": \"cannot reach Kafka at b:1\""), std::string::npos);
}

TEST(TextReport, ShowsTheRangeSummaryFindingsAndVerdict) {
  auto text = rendered(sample(), Format::Text);
  EXPECT_NE(text.find("dedupctl scan: orders (1 partitions, 900 events) from broker:9092, group billing"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("orders[0]  100   1000  100        1000     900        900"), std::string::npos) << text;
  EXPECT_NE(text.find("without an event id  3"), std::string::npos) << text;
  EXPECT_NE(text.find("error    id-reuse  1 events reuse"), std::string::npos) << text;
  EXPECT_NE(text.find("orders[0]@117  id e-17  2026-11-20T07:30:00.000Z  (payload differs)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("1 error, 1 warning, 0 info (exit 1, --fail-on error)."), std::string::npos) << text;
}

TEST(TextReport, NeverPrintsACleanVerdictOverAnIncompleteRun) {
  Report report;
  report.command = "scan";
  report.complete = false;
  report.exit_code = 3;
  report.error = "no data from Kafka";
  auto text = rendered(report, Format::Text);
  EXPECT_EQ(text.find("clean"), std::string::npos) << text;
  EXPECT_NE(text.find("INCOMPLETE: no data from Kafka."), std::string::npos) << text;
}

TEST(MarkdownReport, HasHeadingsTablesAndFindings) {
  auto text = rendered(sample(), Format::Markdown);
  EXPECT_NE(text.find("# dedupctl scan\n"), std::string::npos);
  EXPECT_NE(text.find("| orders[0] | 100 | 1000 | 100 | 1000 | 900 | 900 |"), std::string::npos) << text;
  EXPECT_NE(text.find("### error `id-reuse`: 1 events reuse"), std::string::npos) << text;
}

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

namespace {

// An id, key and type from the log that try to retitle (OSC) and recolour (CSI, C1) the terminal.
TEST(Printable, HumanFormatsEscapeWhatTheLogMayCarryAndJsonStaysExact) {
  const std::string osc = "e-\x1b]0;pwned\x07", csi = "k\x1b[31mred", c1 = "T\xc2\x9b" "31m";
  Report report = sample();
  core::Example ex;
  ex.event_id = osc;
  ex.dedup_key = csi;
  ex.note = c1;
  ex.topic = "orders";
  report.findings[0].examples.push_back(ex);
  report.settings.emplace_back("id", osc);
  for (Format format : {Format::Text, Format::Markdown, Format::Github}) {
    std::string out = rendered(report, format);
    EXPECT_EQ(out.find('\x1b'), std::string::npos) << to_string(format) << ":\n" << out;
    EXPECT_EQ(out.find('\x07'), std::string::npos) << to_string(format);
    EXPECT_EQ(out.find("\xc2\x9b"), std::string::npos) << to_string(format);
  }
  std::string text = rendered(report, Format::Text);
  EXPECT_NE(text.find("e-\\x1b]0;pwned\\x07"), std::string::npos) << text;
  EXPECT_NE(text.find("k\\x1b[31mred"), std::string::npos) << text;
  EXPECT_NE(text.find("T\\u009b31m"), std::string::npos) << text;
  // JSON keeps the bytes exactly (escaped by JSON's own rules): scripts compare ids.
  std::string json = rendered(report, Format::Json);
  EXPECT_NE(json.find("e-\\u001b]0;pwned\\u0007"), std::string::npos) << json;
}

} // namespace
