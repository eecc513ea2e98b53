#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dedupctl::reports;
using dedupctl::testing::incomplete_report;
using dedupctl::testing::rendered;
using dedupctl::testing::sample;

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
  Report report = incomplete_report("no data from Kafka");
  auto text = rendered(report, Format::Text);
  EXPECT_EQ(text.find("clean"), std::string::npos) << text;
  EXPECT_NE(text.find("INCOMPLETE: no data from Kafka."), std::string::npos) << text;
}
