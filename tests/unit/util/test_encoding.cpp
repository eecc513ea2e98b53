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

// RFC 4648's test vectors, padded and not, and every byte through the URL alphabet and back.
TEST(Base64Encode, WritesRfc4648sVectorsAndDecodesBack) {
  const std::pair<const char*, const char*> vectors[] = {{"", ""},
                                                         {"f", "Zg=="},
                                                         {"fo", "Zm8="},
                                                         {"foo", "Zm9v"},
                                                         {"foob", "Zm9vYg=="},
                                                         {"fooba", "Zm9vYmE="},
                                                         {"foobar", "Zm9vYmFy"}};
  for (const auto& [text, encoded] : vectors) {
    std::string out;
    dedupctl::core::base64_encode(text, dedupctl::core::Base64::Standard, true, out);
    EXPECT_EQ(out, encoded) << text;
    std::string unpadded;
    dedupctl::core::base64_encode(text, dedupctl::core::Base64::Standard, false, unpadded);
    EXPECT_EQ(unpadded, std::string(encoded).substr(0, std::string(encoded).find('='))) << text;
  }
  std::string bytes;
  for (int c = 0; c < 256; ++c) {
    bytes += static_cast<char>(c);
  }
  std::string encoded, decoded;
  dedupctl::core::base64_encode(bytes, dedupctl::core::Base64::Url, false, encoded);
  EXPECT_EQ(encoded.find_first_of("+/="), std::string::npos);
  ASSERT_TRUE(dedupctl::core::base64_decode(encoded, dedupctl::core::Base64::Url, decoded));
  EXPECT_EQ(decoded, bytes);
}

// Keys in reports: UTF-8 text as it is, control characters too (each format escapes them its way),
// bytes outside a UTF-8 sequence as \xHH.
TEST(EscapeNonUtf8, EscapesWhatIsNotText) {
  using namespace std::string_literals;
  EXPECT_EQ(escape_non_utf8("dedup:évt-1"), "dedup:évt-1");
  EXPECT_EQ(escape_non_utf8("\xac\xed\x00\x05t\x00\x03"
                            "e-2"s),
            "\\xac\\xed\x00\x05t\x00\x03"
            "e-2"s);
  EXPECT_EQ(escape_non_utf8("a\tb\x7f\xef\xbf\xbd"), "a\tb\x7f\xef\xbf\xbd")
      << "control characters are the formats' to escape, and a real U+FFFD stays";
}

// An id a JSON document can hold: whole UTF-8 as it is, U+FFFD for each byte outside it.
TEST(ReplaceNonUtf8, OneReplacementCharacterForEachByteThatIsNotUtf8) {
  EXPECT_TRUE(is_utf8("évt-1 \xef\xbf\xbd"));
  EXPECT_FALSE(is_utf8("k-\xc3\x28"));
  EXPECT_FALSE(is_utf8("\xed\xa0\x80")) << "a surrogate";
  EXPECT_FALSE(is_utf8("\xc0\xaf")) << "an overlong form";
  EXPECT_EQ(replace_non_utf8("k-\xc3\x28-\xff"), "k-\xef\xbf\xbd(-\xef\xbf\xbd");
  EXPECT_EQ(replace_non_utf8("\xe2\x82"), "\xef\xbf\xbd\xef\xbf\xbd") << "a sequence cut short: one a byte";
  EXPECT_EQ(replace_non_utf8("évt"), "évt");
}
