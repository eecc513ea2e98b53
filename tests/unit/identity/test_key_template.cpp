#include "core/util/errors.hpp"
#include "core/identity/key_template.hpp"
#include "core/store/store_uri.hpp"
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

TEST(StoreUri, ParsesRedisFormsAndNeverShowsThePassword) {
  auto uri = parse_store_uri("redis://app:s3cr%40t@cache.internal:6380/2");
  EXPECT_EQ(uri.kind, StoreUri::Kind::Redis);
  EXPECT_EQ(uri.host, "cache.internal");
  EXPECT_EQ(uri.port, 6380);
  EXPECT_EQ(uri.db, 2);
  EXPECT_EQ(uri.user, "app");
  EXPECT_EQ(uri.password, "s3cr@t");
  EXPECT_EQ(uri.redacted(), "redis://app:***@cache.internal:6380/2");
  auto plain = parse_store_uri("redis://127.0.0.1:6399");
  EXPECT_FALSE(plain.password.has_value());
  EXPECT_EQ(plain.redacted(), "redis://127.0.0.1:6399");
  EXPECT_EQ(parse_store_uri("redis://pw@h:1").password, "pw");
  EXPECT_EQ(parse_store_uri("redis://pw@h:1").redacted(), "redis://***@h:1");
  auto unix_socket = parse_store_uri("redis+unix:///run/redis.sock?db=3");
  EXPECT_EQ(unix_socket.unix_path, "/run/redis.sock");
  EXPECT_EQ(unix_socket.db, 3);
  EXPECT_EQ(parse_store_uri("file:keys.tsv").path, "keys.tsv");
  EXPECT_EQ(parse_store_uri("memory:").kind, StoreUri::Kind::Memory);
  EXPECT_EQ(parse_store_uri("postgres://u:pw@db/x").kind, StoreUri::Kind::Postgres);
  EXPECT_EQ(redact_secrets("host=db password=hunter2 user=u"), "host=db password=*** user=u");
}

TEST(StoreUri, BadUrisAreUsageErrorsWithoutThePassword) {
  for (const char* bad : {"redis://u:secret@h:notaport", "redis://u:secret@h:1/x", "mongodb://h",
                          "redis+unix://rel.sock", "file:", "redis://u:secret@:1"}) {
    try {
      parse_store_uri(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()).find("secret"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("--store"), std::string::npos);
    }
  }
}

// hiredis 0.14 (Debian 12) cannot speak TLS: rediss:// is refused before anything is contacted,
// saying so and what to do, never attempted in clear text.
TEST(StoreUri, TlsIsRefusedSayingWhyAndWhatToDo) {
  try {
    parse_store_uri("rediss://app:secret@cache.example:6380/2");
    ADD_FAILURE() << "accepted rediss://";
  } catch (const UsageError& e) {
    std::string what = e.what();
    EXPECT_EQ(what.find("secret"), std::string::npos) << what;
    EXPECT_NE(what.find("invalid --store 'rediss://app:***@cache.example:6380/2': TLS is not supported"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("stunnel"), std::string::npos) << what;
    EXPECT_NE(what.find("--store redis://127.0.0.1:6390/2"), std::string::npos) << what;
  }
}

TEST(Text, SplitKeepsEmptyPartsAndLowerIsAsciiOnly) {
  using dedupctl::core::split;
  EXPECT_EQ(split("a,,b", ','), (std::vector<std::string_view>{"a", "", "b"}));
  EXPECT_EQ(split("", ','), (std::vector<std::string_view>{""}));
  EXPECT_EQ(split("schema.table", '.'), (std::vector<std::string_view>{"schema", "table"}));
  EXPECT_EQ(dedupctl::core::ascii_lower("Inbox_\xc3\x89"), "inbox_\xc3\x89");
}
