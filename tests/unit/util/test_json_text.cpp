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

// RFC 8259's number grammar, whole (the DynamoDB item reader and the record layouts share it).
TEST(JsonText, ANumberFollowsJsonsGrammarWhole) {
  for (const char* number : {"0", "-0", "17", "1.5", "-2e-3", "1E+30", "123456789012345678901234567890"}) {
    EXPECT_TRUE(dedupctl::core::valid_json_number(number)) << number;
  }
  for (const char* other : {"", "+5", ".5", "5.", "01", "1e", "1.2.3", "0x10", "NaN", "1 "}) {
    EXPECT_FALSE(dedupctl::core::valid_json_number(other)) << other;
  }
}
