#include "core/identity/key_template.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;

TEST(KeyTemplate, RendersEveryPlaceholderAndLiteralBraces) {
  auto tmpl = KeyTemplate::parse("{{billing}}:{topic}:{partition}:{offset}:{event_id}:{type}:{entity}:{key}:{consumer}:"
                                 "{header:trace}:{json:/a/b}");
  std::string_view fields[] = {"tr-1", "ab"};
  KeyValues values{"e-1", "Charge", "o-9", "orders", 3, 17, "k", "billing", fields};
  std::string out;
  render_key(tmpl, values, out);
  EXPECT_EQ(out, "{billing}:orders:3:17:e-1:Charge:o-9:k:billing:tr-1:ab");
  ASSERT_EQ(tmpl.fields().size(), 2u);
  EXPECT_EQ(tmpl.fields()[0].name, "trace");
  EXPECT_TRUE(tmpl.uses(KeyTemplate::Part::EventId));
  EXPECT_TRUE(tmpl.uses(KeyTemplate::Part::Offset));
  EXPECT_FALSE(KeyTemplate::parse("dedup:{entity}").uses(KeyTemplate::Part::EventId));
}

TEST(KeyTemplate, UnknownPlaceholdersAndStrayBracesAreUsageErrors) {
  for (const char* bad : {"dedup:{order_id}", "dedup:{event_id", "dedup:}x", "{json:nope}", "{header:}", "{}"}) {
    try {
      KeyTemplate::parse(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--key-template"), std::string::npos);
    }
  }
}

// Each refusal says what is wrong with which part, not only "unknown placeholder".
TEST(KeyTemplate, RefusalsSayWhatIsWrongWithThePlaceholder) {
  auto message = [](const char* text) {
    try {
      KeyTemplate::parse(text);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("d:{json:/a~9}").find("placeholder {json:/a~9}: '~' must be followed by 0 or 1"), std::string::npos)
      << message("d:{json:/a~9}");
  EXPECT_NE(message("d:{header:}").find("placeholder {header:}: the header name is empty"), std::string::npos);
  EXPECT_NE(message("d:{json:a}").find("a JSON pointer starts with '/'"), std::string::npos);
  EXPECT_NE(message("").find("the template is empty"), std::string::npos);
  EXPECT_NE(message("d:{order_id}").find("unknown placeholder {order_id}"), std::string::npos);
  EXPECT_EQ(KeyTemplate::parse("d:{json:/a,b}").text(), "d:{json:/a,b}") << "a comma is part of a pointer";
}

// Camel's string repository through Spring's default RedisTemplate: the whole key Java-serialized.
TEST(KeyTemplate, TheWholeKeyJavaSerialized) {
  auto tmpl = KeyTemplate::parse("refunds:{event_id}");
  tmpl.serialize_as_java();
  std::string out;
  render_key(tmpl, KeyValues{"évt-1", "", "", "", 0, 0, "", "", nullptr}, out);
  EXPECT_EQ(out, std::string("\xac\xed\x00\x05t\x00\x0erefunds:\xc3\xa9vt-1", 21));
  EXPECT_EQ(tmpl.text(), "refunds:{event_id}");
}

// Two templates rendered from one event's extra values (a dedup key and an effect's key): the second's
// fields come after the first's, and each renders its own.
TEST(KeyTemplate, ASecondTemplateRendersItsFieldsAfterTheFirstsFields) {
  auto first = KeyTemplate::parse("dedup:{header:tenant}:{event_id}");
  auto second = KeyTemplate::parse("charged:{json:/order}:{header:tenant}");
  auto joint = joint_fields(first, second);
  ASSERT_EQ(joint.size(), 3u);
  EXPECT_EQ(joint[0].name, "tenant");
  EXPECT_EQ(joint[1].name, "/order");
  auto shifted = after_fields_of(first, second);
  std::string_view values[] = {"acme", "o-7", "acme"};
  KeyValues event{"e-1", "", "", "", 0, 0, "", "", values};
  std::string out;
  render_key(first, event, out);
  EXPECT_EQ(out, "dedup:acme:e-1");
  render_key(shifted, event, out);
  EXPECT_EQ(out, "charged:o-7:acme");
  EXPECT_EQ(shifted.text(), second.text());
}

namespace dedupctl::core {
namespace {

// Whether two distinct ids can render one key: never through the id itself or a digest of it; through
// lower/upper (Ab, ab) always; through json, json-ascii or java only where an id is not valid UTF-8
// (its bytes become U+FFFD, the key of an id that holds U+FFFD itself); always without {event_id}.
TEST(KeyTemplate, AKeyMayCollideWhereItsIdFiltersAreNotInjective) {
  using K = KeyTemplate;
  EXPECT_EQ(K::parse("dedup:{event_id}").event_id_injectivity(), K::Injectivity::Injective);
  EXPECT_EQ(K::parse("p#{event_id|md5}").event_id_injectivity(), K::Injectivity::Injective);
  EXPECT_EQ(K::parse("{event_id|lower}").event_id_injectivity(), K::Injectivity::No);
  EXPECT_EQ(K::parse("{event_id|upper|md5}").event_id_injectivity(), K::Injectivity::No);
  EXPECT_EQ(K::parse("{event_id|lower}:{event_id}").event_id_injectivity(), K::Injectivity::Injective)
      << "one segment with the id whole is enough";
  EXPECT_EQ(K::parse("p#{event_id|json-ascii|md5}").event_id_injectivity(), K::Injectivity::ValidUtf8);
  EXPECT_EQ(K::parse("{event_id|java}").event_id_injectivity(), K::Injectivity::ValidUtf8);
  EXPECT_EQ(K::parse("{event_id|md5|json}").event_id_injectivity(), K::Injectivity::Injective)
      << "json over a digest's hex";
  EXPECT_EQ(K::parse("dedup:{json:/order_id}").event_id_injectivity(), K::Injectivity::No);

  auto ascii = K::parse("p#{event_id|json-ascii}");
  EXPECT_FALSE(key_may_collide(ascii, "e-1"));
  EXPECT_TRUE(key_may_collide(ascii, "a\xff")) << "not UTF-8";
  EXPECT_TRUE(key_may_collide(ascii, "a\xef\xbf\xbd")) << "U+FFFD, what a\\xff becomes";
  EXPECT_FALSE(key_may_collide(ascii, "caf\xc3\xa9")) << "valid UTF-8";
  EXPECT_TRUE(key_may_collide(K::parse("{event_id|lower}"), "e-1"));
  EXPECT_FALSE(key_may_collide(K::parse("{event_id}"), "a\xff"));
}

} // namespace
} // namespace dedupctl::core
