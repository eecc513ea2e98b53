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

// GitLab's Code Quality report: a JSON array of CodeClimate issues with the fields the CodeClimate
// spec requires (type "issue", check_name, description, categories from its list, location with a
// path and lines.begin) and those GitLab requires (fingerprint, severity from its five).
TEST(GitlabFormat, EachIssueHasTheFieldsCodeClimateAndGitlabRequire) {
  Report incomplete = check_report();
  incomplete.complete = false;
  incomplete.error = "no live check could run";
  const std::set<std::string> categories{"Bug Risk",    "Clarity",     "Compatibility", "Complexity",
                                         "Duplication", "Performance", "Security",      "Style"};
  const std::set<std::string> severities{"info", "minor", "major", "critical", "blocker"};
  for (const Report& report : {check_report(), incomplete, Report{}}) {
    auto doc = nlohmann::json::parse(rendered(report, Format::Gitlab));
    ASSERT_TRUE(doc.is_array());
    EXPECT_EQ(doc.size(), report.findings.size() + (report.complete ? 0 : 1));
    for (const auto& issue : doc) {
      EXPECT_EQ(issue.at("type"), "issue");
      EXPECT_FALSE(issue.at("check_name").get<std::string>().empty());
      EXPECT_FALSE(issue.at("description").get<std::string>().empty());
      ASSERT_FALSE(issue.at("categories").empty());
      for (const auto& category : issue.at("categories")) {
        EXPECT_TRUE(categories.count(category.get<std::string>())) << category;
      }
      EXPECT_TRUE(severities.count(issue.at("severity").get<std::string>())) << issue.at("severity");
      EXPECT_FALSE(issue.at("fingerprint").get<std::string>().empty());
      EXPECT_FALSE(issue.at("location").at("path").get<std::string>().empty());
      EXPECT_GE(issue.at("location").at("lines").at("begin").get<int>(), 1);
    }
  }
  auto doc = nlohmann::json::parse(rendered(incomplete, Format::Gitlab));
  EXPECT_EQ(doc[0].at("check_name"), "dedupctl/ttl-shorter-than-retention");
  EXPECT_EQ(doc[0].at("severity"), "critical");
  EXPECT_EQ(doc[0].at("location").at("path"), "d.toml");
  EXPECT_EQ(doc[0].at("location").at("lines").at("begin"), 7);
  EXPECT_EQ(doc[1].at("severity"), "major");
  EXPECT_EQ(doc[1].at("location").at("path"), "dir,weird:d.toml");
  EXPECT_EQ(doc[2].at("severity"), "blocker");
  EXPECT_NE(doc[2].at("description").get<std::string>().find("no live check could run"), std::string::npos);
}

// A fingerprint is what GitLab tells new findings from fixed ones by: the same finding keeps it
// from run to run though its wording and counts change; findings differ in it, also two alike in
// all but their order.
TEST(GitlabFormat, FingerprintsAreStableAcrossRunsAndDistinctAcrossFindings) {
  auto fingerprints = [](const Report& report) {
    std::vector<std::string> out;
    for (const auto& issue : nlohmann::json::parse(rendered(report, Format::Gitlab))) {
      out.push_back(issue.at("fingerprint"));
    }
    return out;
  };
  Report first = check_report();
  Report again = check_report();
  again.findings[0].title = "billing: the ttl (2d) is shorter than the topic's retention (7d)";
  again.findings[0].count = 40;
  EXPECT_EQ(fingerprints(first), fingerprints(again));
  Report twice = check_report();
  twice.findings.push_back(twice.findings[0]);
  auto all = fingerprints(twice);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 3u);
  Report moved = check_report();
  moved.findings[0].line = 8;
  EXPECT_NE(fingerprints(moved)[0], fingerprints(first)[0]);
  Report other_consumer = check_report();
  other_consumer.findings[0].subject = "payments";
  EXPECT_NE(fingerprints(other_consumer)[0], fingerprints(first)[0]);
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
  EXPECT_NE(rendered(report, Format::Gitlab).find("\"severity\": \"blocker\""), std::string::npos);
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
  for (auto kind : {core::SourceKind::Kafka, core::SourceKind::File}) {
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
      EXPECT_EQ(physical.at("artifactLocation").at("uri"),
                kind == core::SourceKind::File ? "dump.ndjson" : "kafka:orders");
      EXPECT_GE(physical.at("region").at("startLine").get<int>(), 1);
      EXPECT_FALSE(result.at("message").at("text").get<std::string>().empty());
    }
    EXPECT_EQ(results[0].at("locations")[0].at("logicalLocations")[0].at("fullyQualifiedName"), "orders[3]@17");
  }
}

} // namespace
