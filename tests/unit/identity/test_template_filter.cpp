// Filters in key template placeholders ({event_id|json-ascii|md5}): how the idempotency libraries
// derive a record's key from an event id. The expected keys were computed with the libraries' own
// building blocks: Python's json.dumps + hashlib (Powertools for Python), Node's JSON.stringify +
// crypto (Powertools for TypeScript).
#include "core/identity/key_template.hpp"
#include "core/identity/template_filter.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dedupctl;
using namespace dedupctl::core;

namespace {

std::string key_of(const std::string& tmpl, std::string_view event_id) {
  KeyValues values{event_id, "Charge", "o-9", "orders", 3, 17, "k", "billing", nullptr};
  std::string out;
  render_key(KeyTemplate::parse(tmpl), values, out);
  return out;
}

std::string filtered(std::string_view filters, std::string_view value) {
  std::string out = "x:";
  apply_template_filters(parse_template_filters(filters, "{event_id}"), value, out);
  return out.substr(2);
}

} // namespace

// Powertools for Python: PREFIX#md5(json.dumps(id)), hex. The measured key for evt-0.
TEST(TemplateFilter, PowertoolsPythonKeysAreTheMd5OfTheIdAsPythonWritesItInJson) {
  EXPECT_EQ(key_of("test-func.__main__.charge#{event_id|json-ascii|md5}", "evt-0"),
            "test-func.__main__.charge#aa2b56c31f631001b05ed4402549aafd");
  EXPECT_EQ(key_of("f#{event_id|json-ascii|md5}", "e-17"), "f#fb8db10c5f6a35a5977c2beba1ab608a");
  EXPECT_EQ(key_of("f#{event_id|json-ascii|md5}", "évt-ü-€-😀"), "f#bee356dbebdfe18a0f6daa4b209e744f");
  EXPECT_EQ(key_of("f#{event_id|json-ascii|md5}", "a\x01\n\"\\\x7f/\u2028"), "f#14e7dce204da21a2308fdf4ef0db65c9");
}

// Powertools for TypeScript: PREFIX#md5(JSON.stringify(id)), base64 (padded, as Node's digest).
TEST(TemplateFilter, PowertoolsTypeScriptKeysAreTheMd5OfJsonStringifyInBase64) {
  EXPECT_EQ(key_of("f#{event_id|json|md5|base64}", "evt-0"), "f#qitWwx9jEAGwXtRAJUmq/Q==");
  EXPECT_EQ(key_of("f#{event_id|json|md5|base64}", "e-17"), "f#+42xDF9qNaWXfCvroatgig==");
  EXPECT_EQ(key_of("f#{event_id|json|md5|base64}", "évt-ü-€-😀"), "f#n4F9b6cVxL2fWgGH6tnWIA==");
  EXPECT_EQ(key_of("f#{event_id|json|md5|base64}", "a\x01\n\"\\\x7f/\u2028"), "f#AZZJpTOFzmS5geduJt5Trg==");
  EXPECT_EQ(key_of("f#{event_id|json|md5|base64url}", "e-17"), "f#-42xDF9qNaWXfCvroatgig") << "unpadded, as Node's";
}

// json writes what JSON.stringify writes (UTF-8 kept); json-ascii what Python's json.dumps writes
// (every character outside printable ASCII as lower-case \uXXXX, astral ones as surrogate pairs).
TEST(TemplateFilter, JsonAsJavaScriptAndPythonWriteIt) {
  EXPECT_EQ(filtered("json", "évt-😀"), "\"évt-😀\"");
  EXPECT_EQ(filtered("json-ascii", "évt-😀"), "\"\\u00e9vt-\\ud83d\\ude00\"");
  EXPECT_EQ(filtered("json", "a\x01\n\"\\\x7f\b\f\r\t"), "\"a\\u0001\\n\\\"\\\\\x7f\\b\\f\\r\\t\"");
  EXPECT_EQ(filtered("json-ascii", "a\x01\n\"\\\x7f\b\f\r\t"), "\"a\\u0001\\n\\\"\\\\\\u007f\\b\\f\\r\\t\"");
  EXPECT_EQ(filtered("json-ascii", "\xe2\x80\xa8/"), "\"\\u2028/\"");
  EXPECT_EQ(filtered("json-ascii", "a\xff"), "\"a\\ufffd\"") << "a byte that is not UTF-8, as Python replaces it";
}

TEST(TemplateFilter, DigestsAndEncodings) {
  EXPECT_EQ(filtered("sha1", "order-7"), "9630190be7da08cee6ca6830970e594f2ca6cb98");
  EXPECT_EQ(filtered("sha256", "order-7"), "df8cf80227ec3237922df0ecd88385c546e4a31bdb8127b033f01e6f21f175df");
  EXPECT_EQ(filtered("sha512", "order-7").substr(0, 32), "be5f104217a58f7b96adf02b2fbc66dc");
  EXPECT_EQ(filtered("sha512", "order-7").size(), 128U);
  EXPECT_EQ(filtered("sha256|base64", "order-7"), "34z4AifsMjeSLfDs2IOFxUbkoxvbgSewM/AebyHxdd8=");
  EXPECT_EQ(filtered("sha256|hex|upper", "order-7"),
            "DF8CF80227EC3237922DF0ECD88385C546E4A31BDB8127B033F01E6F21F175DF");
  EXPECT_EQ(filtered("hex", "order-7"), "6f726465722d37") << "hex of the text itself";
  EXPECT_EQ(filtered("base64", "order-7"), "b3JkZXItNw==");
  EXPECT_EQ(filtered("upper", "Order-7"), "ORDER-7");
  EXPECT_EQ(filtered("lower", "Order-7"), "order-7");
  EXPECT_EQ(filtered("md5|md5", "x"), "9affad555af89da9b0bfcd5e45bc93da") << "a digest of the digest's bytes";
}

// Any placeholder takes filters, and one without them renders as before.
TEST(TemplateFilter, AnyPlaceholderTakesThemAndThePlainOnesAreUnchanged) {
  std::string_view fields[] = {"O-42"};
  KeyValues values{"e-1", "Charge", "o-9", "orders", 3, 17, "k", "billing", fields};
  std::string out;
  render_key(KeyTemplate::parse("{json:/orderId|lower}:{partition|hex}:{consumer|upper}:{event_id}"), values, out);
  EXPECT_EQ(out, "o-42:33:BILLING:e-1");
  auto tmpl = KeyTemplate::parse("p#{event_id|json-ascii|md5}");
  EXPECT_TRUE(tmpl.uses(KeyTemplate::Part::EventId));
  EXPECT_EQ(tmpl.segments().back().text, "event_id|json-ascii|md5") << "the placeholder as written";
}

TEST(TemplateFilter, AnUnknownOrEmptyFilterIsAUsageErrorListingTheFilters) {
  for (const char* bad : {"{event_id|md4}", "{event_id|}", "{event_id||md5}", "{event_id|json ascii}"}) {
    try {
      KeyTemplate::parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      std::string what = e.what();
      EXPECT_NE(what.find("--key-template"), std::string::npos) << what;
      EXPECT_NE(what.find("json, json-ascii, md5, sha1, sha256, sha512, hex, base64, base64url, lower, upper"),
                std::string::npos)
          << what;
    }
  }
}

// java: a String as Java's ObjectOutputStream writes it (RedisTemplate's default serializer, under
// Camel's SpringRedisIdempotentRepository). The bytes were written by OpenJDK 17's ObjectOutputStream.
TEST(TemplateFilter, JavaWritesAStringAsObjectOutputStreamDoes) {
  using namespace std::string_literals;
  EXPECT_EQ(filtered("java", "evt-0"), "\xac\xed\x00\x05\x74\x00\x05\x65\x76\x74\x2d\x30"s);
  EXPECT_EQ(filtered("java", "\xc3\xa9\x00\xf0\x9f\x98\x80"s),
            "\xac\xed\x00\x05\x74\x00\x0a\xc3\xa9\xc0\x80\xed\xa0\xbd\xed\xb8\x80"s)
      << "NUL as C0 80, an astral character as two three-byte surrogates (modified UTF-8)";
  std::string long_one = filtered("java", std::string(70000, 'x'));
  EXPECT_EQ(long_one.substr(0, 14), "\xac\xed\x00\x05\x7c\x00\x00\x00\x00\x00\x01\x11\x70\x78"s) << "TC_LONGSTRING";
  EXPECT_EQ(long_one.size(), 70013u);
  EXPECT_EQ(key_of("{event_id|java}", "evt-0"), "\xac\xed\x00\x05\x74\x00\x05\x65\x76\x74\x2d\x30"s);
}
