#include "core/util/errors.hpp"
#include "core/util/properties.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

// kcat's -F file, as its users write them: key=value lines, comments, blank lines, CRLF from an
// editor elsewhere, '=' inside a value (a JAAS line, a base64 secret).
TEST(Properties, KeyValueLinesCommentsAndBlanks) {
  auto lines = parse_properties("# MSK, SCRAM\n"
                                "security.protocol=SASL_SSL\r\n"
                                "\n"
                                "  sasl.mechanisms = SCRAM-SHA-512\n"
                                "! also a comment\n"
                                "sasl.password=c2VjcmV0==\n"
                                "sasl.jaas.config=x required user=\"a\";",
                                "kafka.conf");
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0].name, "security.protocol");
  EXPECT_EQ(lines[0].value, "SASL_SSL");
  EXPECT_EQ(lines[0].line, 2);
  EXPECT_EQ(lines[1].name, "sasl.mechanisms");
  EXPECT_EQ(lines[1].value, "SCRAM-SHA-512");
  EXPECT_EQ(lines[2].value, "c2VjcmV0==");
  EXPECT_EQ(lines[3].name, "sasl.jaas.config");
  EXPECT_EQ(lines[3].value, "x required user=\"a\";");
  EXPECT_EQ(lines[3].line, 7);
  EXPECT_TRUE(parse_properties("", "empty").empty());
}

// A line without '=' is exit 2 naming the file and the line, never the line itself: it may be a
// password typed with the wrong separator.
TEST(Properties, ALineWithoutEqualsNamesTheLineNotItsText) {
  for (const char* text : {"security.protocol=SSL\nsasl.password: hunter2\n", "security.protocol=SSL\n=hunter2\n"}) {
    try {
      parse_properties(text, "/etc/kafka.conf");
      ADD_FAILURE() << "accepted " << text;
    } catch (const UsageError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("/etc/kafka.conf:2: expected PROP=VALUE"), std::string::npos) << what;
      EXPECT_EQ(what.find("hunter2"), std::string::npos) << what;
    }
  }
}
