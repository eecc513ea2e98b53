#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dedupctl::reports;
using dedupctl::testing::golden;
using dedupctl::testing::incomplete_report;
using dedupctl::testing::rendered;
using dedupctl::testing::sample;

TEST(JsonReport, MatchesTheReportV1Golden) { EXPECT_EQ(rendered(sample(), Format::Json), golden("scan_report.json")); }

TEST(JsonReport, AnIncompleteReportSaysWhy) {
  Report report = incomplete_report("cannot reach Kafka at b:1");
  auto text = rendered(report, Format::Json);
  EXPECT_NE(text.find("\"complete\": false"), std::string::npos);
  EXPECT_NE(text.find("\"exit_code\": 3"), std::string::npos);
  EXPECT_NE(text.find("\"message\": \"cannot reach Kafka at b:1\""), std::string::npos);
}
