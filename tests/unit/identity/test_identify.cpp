#include "core/identity/field_spec.hpp"
#include "core/identity/identify.hpp"
#include "core/util/errors.hpp"
#include "tests/unit/fakes.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::testing::OwnedEvent;

namespace {

IdentifyOptions options(const std::string& id, const std::string& type = "header:type,json:/type",
                        const std::string& entity = "", const std::string& semantic = "") {
  IdentifyOptions o;
  o.id = parse_field_specs(id, "--id");
  o.type = parse_field_specs(type, "--type");
  if (!entity.empty()) {
    o.entity = parse_field_specs(entity, "--entity");
  }
  if (!semantic.empty()) {
    o.semantic = parse_field_specs(semantic, "--semantic-key");
  }
  return o;
}

struct Result {
  bool has_id;
  std::string id;
  std::string type;
  std::string entity;
  std::string reason;
  std::uint64_t semantic;
  std::uint64_t fingerprint;
};

Result identify(Identifier& identifier, const OwnedEvent& owned) {
  std::vector<Header> headers;
  Event e = dedupctl::testing::view(owned, headers);
  Identity id = identifier.identify_one(e);
  return {id.has_id,
          std::string(id.id),
          std::string(id.type),
          std::string(id.entity),
          std::string(id.no_id_reason),
          id.semantic_hash,
          id.payload_fingerprint};
}

OwnedEvent event(std::optional<std::string> payload,
                 std::vector<std::pair<std::string, std::optional<std::string>>> headers = {},
                 std::optional<std::string> key = std::nullopt) {
  OwnedEvent e;
  e.partition = 3;
  e.offset = 17;
  e.payload = std::move(payload);
  e.headers = std::move(headers);
  e.key = std::move(key);
  return e;
}

} // namespace

TEST(Identify, FirstSpecThatYieldsWins) {
  Identifier identifier(options("header:event_id,json:/event_id"));
  auto from_header = identify(identifier, event(R"({"event_id":"json-1"})", {{"event_id", "hdr-1"}}));
  EXPECT_TRUE(from_header.has_id);
  EXPECT_EQ(from_header.id, "hdr-1");
  auto from_json = identify(identifier, event(R"({"event_id":"json-1"})", {{"other", "x"}}));
  EXPECT_EQ(from_json.id, "json-1");
}

TEST(Identify, TheLastHeaderOfANameWinsAndNullOrEmptyIsNoValue) {
  Identifier identifier(options("header:event_id"));
  EXPECT_EQ(identify(identifier, event("p", {{"event_id", "a"}, {"event_id", "b"}})).id, "b");
  EXPECT_FALSE(identify(identifier, event("p", {{"event_id", std::nullopt}})).has_id);
  EXPECT_FALSE(identify(identifier, event("p", {{"event_id", ""}})).has_id);
}

TEST(Identify, JsonPointersReadStringsNumbersAndEscapes) {
  Identifier identifier(options("json:/metadata/eventId"));
  EXPECT_EQ(identify(identifier, event(R"({"metadata":{"eventId":"a\"b\u00e9"}})")).id, "a\"b\xc3\xa9");
  EXPECT_EQ(identify(identifier, event(R"({"metadata":{"eventId":12345678901234}})")).id, "12345678901234");
  EXPECT_EQ(identify(identifier, event(R"({"metadata":{"eventId": 7 }})")).id, "7");
  Identifier arrays(options("json:/items/1/id,json:/a~1b"));
  EXPECT_EQ(identify(arrays, event(R"({"items":[{"id":"x"},{"id":"y"}]})")).id, "y");
  EXPECT_EQ(identify(arrays, event(R"({"a/b":"slash"})")).id, "slash");
}

// A key written twice is read as the libraries read it: the last one wins (Python's json, Jackson,
// JSON.parse and Go's encoding/json all keep the last), at every level of the pointer; and keys
// compare unescaped, as those libraries decode them.
TEST(Identify, ADuplicatedKeyIsReadAsItsLastOccurrenceAndKeysCompareUnescaped) {
  Identifier identifier(options("json:/event_id"));
  EXPECT_EQ(identify(identifier, event(R"({"event_id":"a","x":1,"event_id":"b"})")).id, "b");
  EXPECT_EQ(identify(identifier, event(R"({"event_id":"a","event_id":null})")).reason, "payload has no /event_id");
  EXPECT_EQ(identify(identifier, event(R"({"event_id":{"no":1},"event_id":7})")).id, "7");
  EXPECT_EQ(identify(identifier, event(R"({"event_id":"escaped"})")).id, "escaped");
  EXPECT_EQ(identify(identifier, event(R"({"event_id":"plain","event_id":"escaped"})")).id, "escaped");
  Identifier nested(options("json:/meta/id"));
  EXPECT_EQ(identify(nested, event(R"({"meta":{"id":"first"},"meta":{"other":1,"id":"second"}})")).id, "second");
  EXPECT_EQ(identify(nested, event(R"({"meta":{"id":"first"},"meta":{"other":1}})")).reason, "payload has no /meta/id")
      << "the last meta has no id: the first one's is not read";
  EXPECT_EQ(identify(nested, event(R"({"meta":{"id":"a","id":"b"}})")).id, "b");
  Identifier arrays(options("json:/items/1/id"));
  EXPECT_EQ(identify(arrays, event(R"({"items":[{"id":"x"},{"id":"y","id":"z"}]})")).id, "z");
  EXPECT_EQ(identify(arrays, event(R"({"items":[{"id":"x"}]})")).reason, "payload has no /items/1/id");
  EXPECT_EQ(identify(arrays, event(R"({"items":{"1":{"id":"key one"}}})")).id, "key one");
  EXPECT_EQ(identify(arrays, event(R"({"items":[{"id":"x"},"y"]})")).reason, "payload has no /items/1/id");
  Identifier tilde(options("json:/a~0b~1c"));
  EXPECT_EQ(identify(tilde, event(R"({"a~b/c":"t"})")).id, "t");
}

TEST(Identify, NoIdSaysWhyAndNeverThrows) {
  Identifier identifier(options("header:event_id,json:/event_id"));
  auto not_json = identify(identifier, event("plain text, not json"));
  EXPECT_FALSE(not_json.has_id);
  EXPECT_EQ(not_json.reason, "no header event_id, payload is not JSON");
  EXPECT_EQ(identify(identifier, event(R"({"id":"x"})")).reason, "no header event_id, payload has no /event_id");
  EXPECT_EQ(identify(identifier, event(R"({"event_id":null})")).reason, "no header event_id, payload has no /event_id");
  EXPECT_EQ(identify(identifier, event(R"({"event_id":{"a":1}})")).reason,
            "no header event_id, /event_id is not a string or number");
  EXPECT_EQ(identify(identifier, event(std::nullopt)).reason, "no header event_id, payload is null");
  EXPECT_FALSE(identify(identifier, event(R"({"event_id":"trunc)")).has_id);
  EXPECT_FALSE(identify(identifier, event("")).has_id);
}

// Avro or Protobuf payloads: a json: spec yields nothing and says the payload is binary; a header
// or the key still gives the id.
TEST(Identify, ABinaryPayloadIsNamedAsSuchAndHeadersStillWork) {
  Identifier identifier(options("json:/event_id"));
  for (std::string binary : {std::string("\x02\x0ae-17\x10\x01", 7), std::string("\xc3\x28{\"event_id\":1}")}) {
    auto result = identify(identifier, event(binary));
    EXPECT_FALSE(result.has_id);
    EXPECT_EQ(result.reason, "payload is binary, not JSON (Avro or Protobuf? see --registry)");
  }
  EXPECT_EQ(identify(identifier, event("plain\ttext")).reason, "payload is not JSON");
  Identifier by_header(options("header:event_id,json:/event_id"));
  EXPECT_EQ(identify(by_header, event(std::string("\x00\xff", 2), {{"event_id", "e-1"}})).id, "e-1");
  Identifier by_key(options("json:/event_id,key"));
  EXPECT_EQ(identify(by_key, event(std::string("\x00\xff", 2), {}, "k-1")).id, "k-1");
}

// Why the payload is not JSON is said once an event, however many json: specs met it.
TEST(Identify, WhyThePayloadIsNotJsonIsSaidOnce) {
  Identifier identifier(options("json:/a,json:/b,header:event_id,json:/c"));
  EXPECT_EQ(identify(identifier, event("plain\ttext")).reason, "payload is not JSON, no header event_id");
  EXPECT_EQ(identify(identifier, event(R"({"x":1})")).reason,
            "payload has no /a, payload has no /b, no header event_id, payload has no /c");
}

TEST(Identify, KeyAndOffsetSpecs) {
  Identifier by_key(options("key"));
  EXPECT_EQ(identify(by_key, event("p", {}, "order-9")).id, "order-9");
  EXPECT_EQ(identify(by_key, event("p")).reason, "no key");
  Identifier by_offset(options("offset"));
  EXPECT_EQ(identify(by_offset, event("p")).id, "orders-3-17");
}

TEST(Identify, TypeAndEntityAreTakenWithFallbacks) {
  Identifier identifier(options("header:event_id", "header:type,json:/type", "json:/order_id"));
  auto r = identify(identifier, event(R"({"type":"PaymentCharged","order_id":"o-1"})", {{"event_id", "e"}}));
  EXPECT_EQ(r.type, "PaymentCharged");
  EXPECT_EQ(r.entity, "o-1");
}

TEST(Identify, DefaultSemanticKeyIgnoresTheIdSoARetryWithANewIdMatches) {
  Identifier identifier(options("json:/event_id"));
  auto first = identify(identifier, event(R"({"event_id":"e-1","type":"Charge","amount":5})"));
  auto retry = identify(identifier, event(R"({"event_id":"e-2","type":"Charge","amount":5})"));
  auto other = identify(identifier, event(R"({"event_id":"e-3","type":"Charge","amount":6})"));
  EXPECT_EQ(first.semantic, retry.semantic);
  EXPECT_NE(first.semantic, other.semantic);
  EXPECT_NE(first.fingerprint, retry.fingerprint);
}

TEST(Identify, ExplicitSemanticKeyCombinesEverySpec) {
  Identifier identifier(options("header:event_id", "header:type", "", "json:/order_id,json:/amount"));
  auto a = identify(identifier, event(R"({"order_id":"o-1","amount":5,"note":"x"})", {{"event_id", "1"}}));
  auto b = identify(identifier, event(R"({"order_id":"o-1","amount":5,"note":"y"})", {{"event_id", "2"}}));
  auto c = identify(identifier, event(R"({"order_id":"o-1","amount":6})", {{"event_id", "3"}}));
  auto d = identify(identifier, event(R"({"order_id":"o-15"})", {{"event_id", "4"}}));
  auto e = identify(identifier, event(R"({"order_id":"o-1","amount":5})", {{"event_id", "5"}}));
  EXPECT_EQ(a.semantic, b.semantic);
  EXPECT_NE(a.semantic, c.semantic);
  EXPECT_NE(a.semantic, d.semantic);
  EXPECT_EQ(a.semantic, e.semantic);
}

TEST(Identify, BatchIdentitiesStayValidTogether) {
  // Ids unescaped from JSON live in the identifier's arena: every identity of a batch must still
  // read right after the whole batch was identified.
  Identifier identifier(options("json:/event_id"));
  std::vector<OwnedEvent> owned;
  for (int i = 0; i < 500; ++i) {
    owned.push_back(event("{\"event_id\":\"id-\\u0041" + std::to_string(i) + "\"}"));
  }
  EventBatch batch;
  std::vector<std::vector<Header>> headers(owned.size());
  for (std::size_t i = 0; i < owned.size(); ++i) {
    batch.events.push_back(dedupctl::testing::view(owned[i], headers[i]));
  }
  std::vector<Identity> identities;
  identifier.identify(batch, identities);
  ASSERT_EQ(identities.size(), 500u);
  for (int i = 0; i < 500; ++i) {
    EXPECT_EQ(identities[static_cast<std::size_t>(i)].id, "id-A" + std::to_string(i));
  }
}

TEST(Identify, ATruncatedPayloadSurvivesSeveralJsonSpecs) {
  // Found by fuzz_kcat_line: simdjson abandons a document after some errors, and a second json:
  // spec (the default --type) must not reuse it.
  Identifier identifier(options("json:/event_id", "json:/type,json:/kind", "json:/order_id"));
  for (const char* payload : {R"({"type":"Invoic-9003")", R"({"a":[1,2)", R"({"type":)", "{", R"({"event_id":"x")"}) {
    auto r = identify(identifier, event(payload));
    EXPECT_FALSE(r.has_id && r.id != "x") << payload;
  }
  EXPECT_EQ(identify(identifier, event(R"({"event_id":"ok","type":"T"})")).type, "T");
}

TEST(KeyOwners, TheFirstIdRenderedToAKeyOwnsItAnotherCollides) {
  KeyOwners owners;
  EXPECT_FALSE(owners.collides("dedup:order-1", 11));
  EXPECT_FALSE(owners.collides("dedup:order-1", 11)); // the same id again: its own key
  EXPECT_TRUE(owners.collides("dedup:order-1", 12));
  EXPECT_FALSE(owners.collides("dedup:order-2", 12));
  EXPECT_TRUE(owners.collides("dedup:order-1", 12)); // still 11's
}

// An example keeps its key as text the report can hold: a control character as it is (JSON writes
// it as \t, the human formats escape it), a byte outside UTF-8 (a Java-serialized key) as \xHH.
TEST(ExampleOf, TheKeyIsKeptExactButForBytesThatAreNotUtf8) {
  Event e;
  e.topic = "pay";
  Identity id;
  id.has_id = true;
  id.id = "a\tb";
  EXPECT_EQ(example_of(e, id, "dedup:a\tb").dedup_key, "dedup:a\tb");
  EXPECT_EQ(example_of(e, id, "\xac\xed-x").dedup_key, "\\xac\\xed-x");
}
