#include "core/check/declarations.hpp"
#include "core/util/errors.hpp"
#include "tests/unit/check/sample_declarations.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::testing::k_file;

TEST(Declarations, ParseFieldsDefaultsAndPositions) {
  auto d = parse_declarations(k_file, "d.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors[0].message;
  ASSERT_EQ(d.consumers.size(), 6u);
  const auto& billing = d.consumers[0];
  EXPECT_EQ(billing.placement, Placement::Redis);
  EXPECT_EQ(billing.ttl->finite_ms(), 86'400'000);
  EXPECT_EQ(billing.at.line, 1);
  EXPECT_EQ(billing.position_of("ttl").line, 7);
  EXPECT_TRUE(d.consumers[1].ttl->is_infinite());
  EXPECT_EQ(d.consumers[2].inbox_table, "processed_events");
  EXPECT_EQ(d.consumers[2].inbox_consumer_column, ""); // declared as none
  EXPECT_EQ(d.consumers[3].inbox_consumer_column, "consumer_name");
  EXPECT_EQ(d.consumers[2].max_lag_ms, 3'600'000);
  EXPECT_EQ(d.consumers[4].side_effects, SideEffect::External); // the default
}

TEST(Declarations, EveryErrorOfAFileInOneRunWithLineAndColumn) {
  auto d =
      parse_declarations("[[consumer]]\nname = \"a\"\ntopic = 5\nplacment = \"redis\"\nttl = \"7 days\"\n\n"
                         "[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacement = \"cloud\"\nside_effects = \"scary\"\n",
                         "bad.toml");
  ASSERT_EQ(d.errors.size(), 7u);
  std::vector<std::pair<int, std::string>> seen;
  for (const auto& e : d.errors) {
    seen.emplace_back(e.at.line, e.message.substr(0, 30));
  }
  EXPECT_EQ(d.errors[0].at.line, 1); // consumer 'a' has no 'placement'
  EXPECT_EQ(d.errors[1].at.line, 3);
  EXPECT_EQ(d.errors[1].at.column, 9);
  EXPECT_EQ(d.errors[1].message, "'topic' must be a string");
  EXPECT_EQ(d.errors[2].at.line, 4);
  EXPECT_NE(d.errors[2].message.find("unknown key 'placment'"), std::string::npos);
  EXPECT_NE(d.errors[3].message.find("'ttl' is \"7 days\""), std::string::npos);
  EXPECT_NE(d.errors[4].message.find("declared twice"), std::string::npos);
  EXPECT_NE(d.errors[5].message.find("'placement' is 'cloud'"), std::string::npos);
  EXPECT_NE(d.errors[6].message.find("'side_effects' is 'scary'"), std::string::npos);
  auto syntax = parse_declarations("[[consumer]\nname = 1", "broken.toml");
  ASSERT_EQ(syntax.errors.size(), 1u);
  EXPECT_EQ(syntax.errors[0].at.line, 1);
  EXPECT_TRUE(parse_declarations("", "empty.toml").errors.size() == 1);
}
