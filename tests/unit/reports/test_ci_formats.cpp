#include "core/util/build_info.hpp"
#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

using namespace dedupctl;
using namespace dedupctl::reports;
using dedupctl::testing::golden;
using dedupctl::testing::rendered;

namespace {

core::Finding located(std::string id, core::Severity severity, std::string title, std::string advice, std::string file,
                      int line, int column, std::string subject) {
  core::Finding f;
  f.id = std::move(id);
  f.severity = severity;
  f.title = std::move(title);
  f.count = 1;
  f.advice = std::move(advice);
  f.file = std::move(file);
  f.line = line;
  f.column = column;
  f.subject = std::move(subject);
  return f;
}

Report check_report() {
  Report report;
  report.command = "check";
  report.exit_code = 1;
  report.fail_on = "error";
  report.subjects = {"billing", "shipping", "analytics"};
  report.findings = {located("ttl-shorter-than-retention", core::Severity::Error,
                             "billing: the ttl (1d) is shorter than the topic's retention (7d)", "Keep records for 8d.",
                             "d.toml", 7, 1, "billing"),
                     located("ttl-margin-thin", core::Severity::Warning, "shipping: thin, 50%", "Raise it.\nNow.",
                             "dir,weird:d.toml", 30, 3, "shipping")};
  return report;
}

} // namespace

TEST(GithubFormat, MatchesTheGoldenWithWorkflowCommandEscaping) {
  EXPECT_EQ(rendered(check_report(), Format::Github), golden("check.github.txt"));
}

TEST(JunitFormat, MatchesTheGoldenATestCasePerConsumerAndAFailurePerFindingAtFailOn) {
  EXPECT_EQ(rendered(check_report(), Format::Junit), golden("check.junit.xml"));
  Report warnings = check_report();
  warnings.fail_on = "warning";
  EXPECT_NE(rendered(warnings, Format::Junit).find("failures=\"2\""), std::string::npos);
}

TEST(SarifFormat, MatchesTheGolden) {
  std::string expected = golden("check.sarif.json");
  expected.replace(expected.find("VERSION"), 7, dedupctl::core::build::version());
  EXPECT_EQ(rendered(check_report(), Format::Sarif), expected);
}

TEST(SarifFormat, HasTheFieldsThe210SchemaRequires) {
  for (const Report& report : {check_report(), Report{}}) {
    auto doc = nlohmann::json::parse(rendered(report, Format::Sarif));
    EXPECT_EQ(doc.at("version"), "2.1.0");
    ASSERT_TRUE(doc.at("runs").is_array());
    ASSERT_FALSE(doc.at("runs").empty());
    for (const auto& run : doc.at("runs")) {
      EXPECT_TRUE(run.at("tool").at("driver").at("name").is_string());
      std::set<std::string> rule_ids;
      for (const auto& rule : run.at("tool").at("driver").at("rules")) {
        rule_ids.insert(rule.at("id").get<std::string>());
      }
      for (const auto& result : run.at("results")) {
        EXPECT_TRUE(result.at("message").at("text").is_string());
        EXPECT_TRUE(rule_ids.count(result.at("ruleId").get<std::string>()));
        std::string level = result.at("level");
        EXPECT_TRUE(level == "none" || level == "note" || level == "warning" || level == "error");
        for (const auto& location : result.at("locations")) {
          EXPECT_TRUE(location.at("physicalLocation").at("artifactLocation").at("uri").is_string());
          EXPECT_GE(location.at("physicalLocation").at("region").at("startLine").get<int>(), 1);
        }
      }
    }
  }
}

TEST(CiFormats, AnIncompleteRunIsAnErrorInEveryFormat) {
  Report report;
  report.command = "check";
  report.complete = false;
  report.exit_code = 3;
  report.error = "no live check could run";
  EXPECT_NE(rendered(report, Format::Github).find("::error title=dedupctl check::incomplete: no live check could run"),
            std::string::npos);
  EXPECT_NE(rendered(report, Format::Junit).find("<error message=\"no live check could run\"/>"), std::string::npos);
  EXPECT_NE(rendered(report, Format::Sarif).find("\"executionSuccessful\": false"), std::string::npos);
}

TEST(CheckFormats, TextMarkdownAndJsonMatchTheirGoldens) {
  EXPECT_EQ(rendered(check_report(), Format::Text), golden("check.text.txt"));
  EXPECT_EQ(rendered(check_report(), Format::Markdown), golden("check.markdown.md"));
  EXPECT_EQ(rendered(check_report(), Format::Json), golden("check.json"));
}

namespace {

// GitHub's upload-sarif refuses a result without a location ("expected at least one location"):
// scan and audit findings, which point at no file, get what was read as theirs.
TEST(SarifFormat, EveryResultHasALocationAsGithubRequires) {
  for (std::string kind : {"kafka", "file"}) {
    Report report;
    report.command = "audit";
    core::SourceInfo source;
    source.kind = kind;
    source.topics = {"orders"};
    source.path = "dump.ndjson";
    report.source = source;
    core::Finding gap;
    gap.id = "ttl-gap";
    gap.severity = core::Severity::Error;
    gap.title = "2 events are still replayable but their dedup records expired";
    gap.count = 2;
    core::Example ex;
    ex.topic = "orders";
    ex.partition = 3;
    ex.offset = 17;
    gap.examples.push_back(ex);
    core::Finding policy;
    policy.id = "ttl-shorter-than-retention";
    policy.severity = core::Severity::Error;
    policy.title = "the TTL (1h, flag) is shorter than the topic's retention (7d)";
    policy.count = 1;
    report.findings = {gap, policy};
    auto doc = nlohmann::json::parse(rendered(report, Format::Sarif));
    const auto& results = doc.at("runs")[0].at("results");
    ASSERT_EQ(results.size(), 2u);
    for (const auto& result : results) {
      ASSERT_TRUE(result.contains("locations")) << result.dump();
      ASSERT_GE(result.at("locations").size(), 1u);
      const auto& physical = result.at("locations")[0].at("physicalLocation");
      EXPECT_EQ(physical.at("artifactLocation").at("uri"), kind == "file" ? "dump.ndjson" : "kafka:orders");
      EXPECT_GE(physical.at("region").at("startLine").get<int>(), 1);
      EXPECT_FALSE(result.at("message").at("text").get<std::string>().empty());
    }
    EXPECT_EQ(results[0].at("locations")[0].at("logicalLocations")[0].at("fullyQualifiedName"), "orders[3]@17");
  }
}

} // namespace
