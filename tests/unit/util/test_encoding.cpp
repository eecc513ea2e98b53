#include "core/util/encoding.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;

TEST(Base64, BothAlphabetsWithAndWithoutPadding) {
  std::string out;
  EXPECT_TRUE(base64_decode("+/8=", Base64::Standard, out));
  EXPECT_EQ(out, std::string("\xfb\xff", 2));
  out.clear();
  EXPECT_TRUE(base64_decode("-_8", Base64::Url, out));
  EXPECT_EQ(out, std::string("\xfb\xff", 2));
  out.clear();
  EXPECT_FALSE(base64_decode("-_8", Base64::Standard, out)); // '-' is not in the standard alphabet
  out.clear();
  EXPECT_FALSE(base64_decode("a b", Base64::Standard, out));
  out.clear();
  EXPECT_TRUE(base64_decode("eyJhIjoxfQ", Base64::Url, out));
  EXPECT_EQ(out, R"({"a":1})");
}

TEST(PercentEncode, OnlyTheUnreservedStayAsTheyAre) {
  EXPECT_EQ(percent_encode("shop.Metadata-v_1~"), "shop.Metadata-v_1~");
  EXPECT_EQ(percent_encode("a b/c:d"), "a%20b%2Fc%3Ad");
  EXPECT_EQ(percent_encode("\xc3\xa9"), "%C3%A9");
}
