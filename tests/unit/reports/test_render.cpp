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
