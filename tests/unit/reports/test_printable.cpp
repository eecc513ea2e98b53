#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dedupctl;
using namespace dedupctl::reports;
using dedupctl::testing::rendered;
using dedupctl::testing::sample;

// An id, key and type from the log that try to retitle (OSC) and recolour (CSI, C1) the terminal.
TEST(Printable, HumanFormatsEscapeWhatTheLogMayCarryAndJsonStaysExact) {
  const std::string osc = "e-\x1b]0;pwned\x07", csi = "k\x1b[31mred",
                    c1 = "T\xc2\x9b"
                         "31m";
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
