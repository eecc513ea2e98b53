// The schema registry's wire format as the identify stage sees it: a decoder of our own interface
// (the real ones, Avro, Protobuf and JSON Schema, are tested in the integration tier) turns framed
// payloads and keys into JSON for the json: and key-json: specs and the fingerprints.
#include "core/identity/field_spec.hpp"
#include "core/identity/identify.hpp"
#include "core/identity/payload_decoder.hpp"
#include "core/util/errors.hpp"
#include "tests/unit/fakes.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::testing::OwnedEvent;

namespace {

std::string frame(std::uint32_t schema_id, std::string_view body) {
  std::string out(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) {
    out += static_cast<char>((schema_id >> shift) & 0xff);
  }
  out += body;
  return out;
}

// Schema id -> (body -> JSON). A body it does not know is "truncated"; an id it does not know is unknown.
class TableDecoder : public PayloadDecoder {
public:
  std::map<std::uint32_t, std::map<std::string, std::string>> table;
  mutable int calls = 0;
  std::string decode(const WireFrame& frame, std::string& json) const override {
    ++calls;
    auto schema = table.find(frame.schema_id);
    if (schema == table.end()) {
      return "framed with schema id " + std::to_string(frame.schema_id) + ", which the registry does not know";
    }
    auto body = schema->second.find(std::string(frame.body));
    if (body == schema->second.end()) {
      return "a truncated record";
    }
    json = body->second;
    return "";
  }
  std::string describe() const override { return "table"; }
};

struct Seen {
  Identity identity;
  std::string id;
  std::string reason;
};

Seen identify(Identifier& identifier, std::optional<std::string> payload, std::optional<std::string> key = {}) {
  OwnedEvent owned;
  owned.payload = std::move(payload);
  owned.key = std::move(key);
  std::vector<Header> headers;
  Event e = dedupctl::testing::view(owned, headers);
  Identity identity = identifier.identify_one(e);
  return {identity, std::string(identity.id), std::string(identity.no_id_reason)};
}

std::shared_ptr<TableDecoder> decoder() {
  auto d = std::make_shared<TableDecoder>();
  d->table[1] = {{"v1-a", R"({"amount":5,"metadata":{"eventId":"e-1"}})"},
                 {"v1-b", R"({"amount":6,"metadata":{"eventId":"e-1"}})"},
                 {"v1-c", R"({"amount":5,"metadata":{"eventId":"e-2"}})"}};
  // The same event as v1-a, written after a schema upgrade under another id.
  d->table[2] = {{"v2-a", R"({"amount":5,"metadata":{"eventId":"e-1"}})"}};
  return d;
}

IdentifyOptions with(std::shared_ptr<const PayloadDecoder> d, std::string_view id = "json:/metadata/eventId") {
  IdentifyOptions o;
  o.id = parse_field_specs(id, "--id");
  o.type = parse_field_specs("json:/type", "--type");
  o.decoder = std::move(d);
  return o;
}

} // namespace

TEST(WireFrame, TheHeaderIsAZeroByteAndABigEndianSchemaId) {
  std::string bytes = frame(0x01020304, "body"); // the frame's body is a view into it
  auto f = parse_wire_frame(bytes);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->schema_id, 0x01020304u);
  EXPECT_EQ(f->body, "body");
  EXPECT_EQ(parse_wire_frame(frame(7, ""))->body, "");
  EXPECT_FALSE(parse_wire_frame(std::string("\0\0\0\x07", 4))); // one byte short
  EXPECT_FALSE(parse_wire_frame(std::string("\x01\0\0\0\x07xx", 7)));
  EXPECT_FALSE(parse_wire_frame("{\"a\":1}"));
  EXPECT_EQ(unframed_reason(std::string("\x01\0\0\0\x07xx", 7)),
            "binary, not JSON, and not in the schema registry's wire format (first byte 0x01, not the magic byte "
            "0x00)");
  EXPECT_EQ(unframed_reason(std::string("\0\0", 2)),
            "truncated: 2 bytes, shorter than the wire format's 5-byte header");
}

TEST(DecodedPayload, JsonSpecsReadTheDecodedRecord) {
  Identifier identifier(with(decoder()));
  auto seen = identify(identifier, frame(1, "v1-a"));
  EXPECT_TRUE(seen.identity.has_id);
  EXPECT_EQ(seen.id, "e-1");
  // Without a decoder the same bytes are binary, with the hint.
  Identifier plain(with(nullptr));
  EXPECT_EQ(identify(plain, frame(1, "v1-a")).reason, "payload is binary, not JSON (Avro or Protobuf? see --registry)");
  // A plain JSON payload is still read as it is when a decoder is given.
  EXPECT_EQ(identify(identifier, std::string(R"({"metadata":{"eventId":"e-9"}})")).id, "e-9");
}

TEST(DecodedPayload, TheFingerprintIsTheContentNotTheBytes) {
  Identifier identifier(with(decoder()));
  auto v1 = identify(identifier, frame(1, "v1-a")).identity.payload_fingerprint;
  auto v2 = identify(identifier, frame(2, "v2-a")).identity.payload_fingerprint;
  auto other = identify(identifier, frame(1, "v1-b")).identity.payload_fingerprint;
  EXPECT_EQ(v1, v2);    // a schema upgrade re-sent the same event: a log duplicate
  EXPECT_NE(v1, other); // other content under the same id: an id reuse
  // The semantic key by default is the content without the id: a retry under a new id matches.
  auto s1 = identify(identifier, frame(1, "v1-a")).identity.semantic_hash;
  auto s2 = identify(identifier, frame(1, "v1-c")).identity.semantic_hash;
  EXPECT_EQ(s1, s2);
  // Undecodable payloads keep their bytes' fingerprint, so two different ones still differ.
  auto u1 = identify(identifier, frame(9, "x")).identity.payload_fingerprint;
  auto u2 = identify(identifier, frame(9, "y")).identity.payload_fingerprint;
  EXPECT_NE(u1, u2);
}

TEST(DecodedPayload, WhatCannotBeDecodedIsCountedWithItsReason) {
  Identifier identifier(with(decoder(), "header:event_id,json:/metadata/eventId"));
  auto unknown = identify(identifier, frame(9, "x"));
  EXPECT_FALSE(unknown.identity.has_id);
  EXPECT_TRUE(unknown.identity.binary_payload);
  EXPECT_EQ(unknown.reason, "no header event_id, payload is framed with schema id 9, which the registry does not know");
  EXPECT_EQ(identify(identifier, frame(1, "cut")).reason, "no header event_id, payload is a truncated record");
  EXPECT_EQ(identify(identifier, std::string("\x02\xff\x01\x02\x03\x04", 6)).reason,
            "no header event_id, payload is binary, not JSON, and not in the schema registry's wire format (first "
            "byte 0x02, not the magic byte 0x00)");
  EXPECT_EQ(identify(identifier, std::string("\0\0\x01", 3)).reason,
            "no header event_id, payload is truncated: 3 bytes, shorter than the wire format's 5-byte header");
}

TEST(DecodedPayload, EachPayloadIsDecodedOnceWhateverTheSpecs) {
  auto d = decoder();
  IdentifyOptions o = with(d, "json:/nothing,json:/metadata/eventId");
  o.entity = parse_field_specs("json:/amount", "--entity");
  Identifier identifier(o);
  auto seen = identify(identifier, frame(1, "v1-a"));
  EXPECT_EQ(seen.id, "e-1");
  EXPECT_EQ(seen.identity.entity, "5");
  EXPECT_EQ(d->calls, 1);
}

TEST(DecodedKey, KeyJsonReadsTheKeyPlainOrFramed) {
  Identifier identifier(with(decoder(), "key-json:/metadata/eventId"));
  EXPECT_EQ(identify(identifier, std::nullopt, frame(1, "v1-c")).id, "e-2");
  EXPECT_EQ(identify(identifier, std::nullopt, std::string(R"({"metadata":{"eventId":"k-3"}})")).id, "k-3");
  EXPECT_EQ(identify(identifier, std::string("{}"), std::nullopt).reason, "key is null");
  EXPECT_EQ(identify(identifier, std::nullopt, std::string("{}")).reason, "key has no /metadata/eventId");
  EXPECT_EQ(identify(identifier, std::nullopt, frame(9, "x")).reason,
            "key is framed with schema id 9, which the registry does not know");
  // The payload's and the key's documents are apart: both may be read for one event.
  IdentifyOptions o = with(decoder(), "key-json:/metadata/eventId");
  o.entity = parse_field_specs("json:/amount", "--entity");
  Identifier both(o);
  auto seen = identify(both, frame(1, "v1-b"), frame(1, "v1-c"));
  EXPECT_EQ(seen.id, "e-2");
  EXPECT_EQ(seen.identity.entity, "6");
}

TEST(FieldSpec, KeyJsonIsASpec) {
  auto specs = parse_field_specs("key-json:/a/b,json:/c", "--id");
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].kind, FieldKind::KeyJson);
  EXPECT_EQ(specs[0].name, "/a/b");
  EXPECT_THROW(parse_field_specs("key-json:a", "--id"), UsageError);
}
