#include "core/util/json_text.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

namespace dedupctl::core {
namespace {

TEST(JsonText, QuotesAndEscapesWhatJsonRequiresAndNothingElse) {
  std::string out = "x=";
  append_json_string(out, std::string("a\"b\\c\nd\x01\x1f", 9));
  EXPECT_EQ(out, R"(x="a\"b\\c\u000ad\u0001\u001f")");
}

TEST(JsonText, BytesAboveAsciiPassAsTheyAreAndTheResultParsesBack) {
  const std::string text = "caf\xc3\xa9 \xe2\x82\xac / <tag> \x7f";
  std::string out;
  append_json_string(out, text);
  EXPECT_EQ(out, "\"" + text + "\"");
  EXPECT_EQ(nlohmann::json::parse(out).get<std::string>(), text);
}

TEST(JsonText, AnEmptyStringIsTwoQuotes) {
  std::string out;
  append_json_string(out, "");
  EXPECT_EQ(out, "\"\"");
}

} // namespace
} // namespace dedupctl::core
