#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dedupctl::reports;
using dedupctl::testing::rendered;
using dedupctl::testing::sample;

TEST(MarkdownReport, HasHeadingsTablesAndFindings) {
  auto text = rendered(sample(), Format::Markdown);
  EXPECT_NE(text.find("# dedupctl scan\n"), std::string::npos);
  EXPECT_NE(text.find("| orders[0] | 100 | 1000 | 100 | 1000 | 900 | 900 |"), std::string::npos) << text;
  EXPECT_NE(text.find("### error `id-reuse`: 1 events reuse"), std::string::npos) << text;
}
