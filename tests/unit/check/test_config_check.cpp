#include "core/check/config_check.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

const std::map<std::string, std::set<std::string>> k_known{
    {"", {"fail-on", "format", "timeout"}}, {"audit", {"ttl", "store", "retention"}}, {"scan", {"window"}}};

TEST(ConfigCheck, KnownKeysAtTheTopAndInTheirCommandsPass) {
  EXPECT_TRUE(
      check_config("fail-on = \"none\"\n[audit]\nttl = \"1h\"\ntimeout = \"5s\"\n[scan]\nwindow = \"1s\"\n", k_known)
          .empty());
}

TEST(ConfigCheck, ATypoIsAnErrorAtItsLineWithTheNameItMeant) {
  auto problems = check_config("fail-on = \"none\"\n[audit]\n\ntll = \"1h\"\n", k_known);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].line, 4);
  EXPECT_EQ(problems[0].column, 1);
  EXPECT_EQ(problems[0].message, "unknown key 'tll' in [audit]; did you mean 'ttl'?");
  auto far = check_config("colour = \"red\"\n", k_known);
  ASSERT_EQ(far.size(), 1u);
  EXPECT_EQ(far[0].message, "unknown key 'colour' at the top level; see dedupctl --help for the option names");
  EXPECT_EQ(check_config("window = \"1s\"\n", k_known).size(), 1u) << "a command's key is not a top-level key";
}

TEST(ConfigCheck, SyntaxErrorsAndGarbageSayWhereAndUnknownSectionsAreRefused) {
  auto syntax = check_config("fail-on = \"none\n", k_known);
  ASSERT_EQ(syntax.size(), 1u);
  EXPECT_EQ(syntax[0].line, 1);
  EXPECT_NE(syntax[0].message.find("not valid TOML"), std::string::npos);
  auto garbage = check_config(std::string("\x7f\x45\x4c\x46\x02\x01\x01\0\0\xff", 10), k_known);
  ASSERT_EQ(garbage.size(), 1u);
  EXPECT_NE(garbage[0].message.find("not valid TOML"), std::string::npos);
  auto section = check_config("[auditt]\nttl = \"1h\"\n", k_known);
  ASSERT_EQ(section.size(), 1u);
  EXPECT_NE(section[0].message.find("unknown section [auditt]"), std::string::npos);
}

} // namespace
} // namespace dedupctl::core

TEST(ConfigCheck, SaysWhichKeysTheFileSetsPerSection) {
  std::map<std::string, std::set<std::string>> present;
  auto problems = dedupctl::core::check_config("timeout = \"5s\"\n[audit]\nttl = \"1h\"\nmax-lag = \"1m\"\n",
                                               {{"", {"timeout"}}, {"audit", {"ttl", "max-lag"}}}, &present);
  EXPECT_TRUE(problems.empty());
  EXPECT_EQ(present[""], (std::set<std::string>{"timeout"}));
  EXPECT_EQ(present["audit"], (std::set<std::string>{"ttl", "max-lag"}));
}
