#include "core/util/errors.hpp"
#include "core/util/time.hpp"
#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"
#include <cstdio>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>

using namespace dedupctl;
using namespace dedupctl::core;
using namespace dedupctl::reports;
using dedupctl::testing::golden;
using dedupctl::testing::rendered;
using dedupctl::testing::sample;

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
