// The decoders of connectors/schema over records encoded by other code: Avro by avro-c's writer
// and Protobuf by hand from its wire format. What is checked is ours: the JSON a person reads
// (unions as their value, logical types, sorted members, nulls left out), references, the
// message indexes and the reasons.
#include "connectors/http/server.hpp"
#include "connectors/schema/decoder.hpp"
#include "core/identity/payload_decoder.hpp"
#include "core/util/errors.hpp"

#include <avro.h>
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>

using namespace dedupctl;
using namespace dedupctl::connectors::schema;

namespace {

class Memory : public SchemaSource {
public:
  std::map<std::uint32_t, RegisteredSchema> by_ids;
  std::map<std::string, RegisteredSchema> by_subject;
  std::optional<RegisteredSchema> by_id(std::uint32_t id) override {
    auto it = by_ids.find(id);
    return it == by_ids.end() ? std::nullopt : std::optional(it->second);
  }
  std::optional<RegisteredSchema> by_reference(const Reference& reference) override {
    auto it = by_subject.find(reference.subject);
    return it == by_subject.end() ? std::nullopt : std::optional(it->second);
  }
  std::string describe() const override { return "memory"; }
};

const char* k_order = R"({"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"z","type":"string"},
  {"name":"a","type":["null","string"]},
  {"name":"gone","type":["null","string"]},
  {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}},
  {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
  {"name":"day","type":{"type":"int","logicalType":"date"}},
  {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","PAID"]}},
  {"name":"m","type":{"type":"map","values":"long"}},
  {"name":"tags","type":{"type":"array","items":"string"}}]})";

std::string encode_order() {
  avro_schema_t schema = nullptr;
  EXPECT_EQ(avro_schema_from_json_length(k_order, std::strlen(k_order), &schema), 0) << avro_strerror();
  avro_value_iface_t* iface = avro_generic_class_from_schema(schema);
  avro_value_t order;
  avro_generic_value_new(iface, &order);
  avro_value_t field;
  avro_value_t item;
  avro_value_get_by_name(&order, "z", &field, nullptr);
  avro_value_set_string(&field, "e-1");
  avro_value_get_by_name(&order, "a", &field, nullptr);
  avro_value_set_branch(&field, 1, &item);
  avro_value_set_string(&item, "x");
  avro_value_get_by_name(&order, "gone", &field, nullptr);
  avro_value_set_branch(&field, 0, &item);
  avro_value_set_null(&item);
  avro_value_get_by_name(&order, "amount", &field, nullptr);
  unsigned char minus_123[] = {0xff, 0x85};
  avro_value_set_bytes(&field, minus_123, 2);
  avro_value_get_by_name(&order, "at", &field, nullptr);
  avro_value_set_long(&field, 1'764'150'000'123);
  avro_value_get_by_name(&order, "day", &field, nullptr);
  avro_value_set_int(&field, 20418);
  avro_value_get_by_name(&order, "state", &field, nullptr);
  avro_value_set_enum(&field, 1);
  avro_value_get_by_name(&order, "m", &field, nullptr);
  avro_value_add(&field, "b", &item, nullptr, nullptr);
  avro_value_set_long(&item, 2);
  avro_value_add(&field, "a", &item, nullptr, nullptr);
  avro_value_set_long(&item, 1);
  avro_value_get_by_name(&order, "tags", &field, nullptr);
  avro_value_append(&field, &item, nullptr);
  avro_value_set_string(&item, "t1");
  avro_value_append(&field, &item, nullptr);
  avro_value_set_string(&item, "t2");
  char buffer[1024];
  avro_writer_t writer = avro_writer_memory(buffer, sizeof buffer);
  EXPECT_EQ(avro_value_write(writer, &order), 0);
  std::string out(buffer, static_cast<std::size_t>(avro_writer_tell(writer)));
  avro_writer_free(writer);
  avro_value_decref(&order);
  avro_value_iface_decref(iface);
  avro_schema_decref(schema);
  return out;
}

std::string decode(SchemaDecoder& decoder, std::uint32_t id, const std::string& body, std::string* json = nullptr) {
  std::string out;
  std::string why = decoder.decode(core::WireFrame{id, body}, out);
  if (json) {
    *json = out;
  }
  return why;
}

std::string varint(std::uint64_t v) {
  std::string out;
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  return out + static_cast<char>(v);
}

} // namespace

TEST(AvroDecoder, ReadsAsAPersonDoesSortedAndWithoutNulls) {
  auto source = std::make_unique<Memory>();
  source->by_ids[7] = {7, SchemaType::Avro, k_order, {}};
  SchemaDecoder decoder(std::move(source));
  std::string json;
  std::string body = encode_order();
  ASSERT_EQ(decode(decoder, 7, body, &json), "");
  EXPECT_EQ(json, R"({"a":"x","amount":"-1.23","at":"2025-11-26T09:40:00.123Z","day":"2025-11-26","m":{"a":1,"b":2},)"
                  R"("state":"PAID","tags":["t1","t2"],"z":"e-1"})");
  // A byte more or a byte less is not a record of the schema.
  EXPECT_EQ(decode(decoder, 7, body + "x"),
            "framed with schema id 7 (AVRO) but not a record of its Avro schema (truncated, or a length, branch or "
            "symbol out of range)");
  EXPECT_NE(decode(decoder, 7, body.substr(0, body.size() - 1)), "");
  // A string that claims a gigabyte is refused before anything is allocated for it.
  EXPECT_NE(decode(decoder, 7, varint(2'000'000'000) + "e-1"), "");
  EXPECT_EQ(decode(decoder, 8, body), "framed with schema id 8, which memory does not know");
}

TEST(AvroDecoder, AReferencedTypeIsFetchedBySubjectAndVersion) {
  auto source = std::make_unique<Memory>();
  source->by_subject["shop.Meta"] = {
      11,
      SchemaType::Avro,
      R"({"type":"record","name":"Meta","namespace":"shop","fields":[{"name":"eventId","type":"string"}]})",
      {}};
  source->by_ids[12] = {12,
                        SchemaType::Avro,
                        R"({"type":"record","name":"Order","namespace":"shop","fields":[{"name":"meta","type":"Meta"},)"
                        R"({"name":"again","type":["null","shop.Meta"]}]})",
                        {Reference{"shop.Meta", "shop.Meta", 1, std::nullopt}}};
  SchemaDecoder decoder(std::move(source));
  std::string json;
  // meta.eventId "e-9", then the union's second branch: another Meta "e-10".
  std::string body = varint(6) + "e-9" + varint(2) + varint(8) + "e-10";
  ASSERT_EQ(decode(decoder, 12, body, &json), "");
  EXPECT_EQ(json, R"({"again":{"eventId":"e-10"},"meta":{"eventId":"e-9"}})");
  auto fetched = decoder.fetched();
  ASSERT_EQ(fetched.size(), 2u); // the schema and its reference, for schemas export
  EXPECT_EQ(fetched[1].references.at(0).id, 11u);
}

TEST(ProtobufDecoder, ProtoTextWithAWellKnownImportAndMessageIndexes) {
  auto source = std::make_unique<Memory>();
  source->by_ids[3] = {3,
                       SchemaType::Protobuf,
                       R"(syntax = "proto3";
    package shop;
    import "google/protobuf/timestamp.proto";
    message First { string x = 1; }
    message Order { string event_id = 1; int64 amount = 2; google.protobuf.Timestamp at = 3; })",
                       {}};
  SchemaDecoder decoder(std::move(source));
  std::string timestamp = "\x08" + varint(1'764'150'000);
  std::string order = "\x0a\x03p-1" + std::string("\x10\x05", 2) + "\x1a" + varint(timestamp.size()) + timestamp;
  std::string json;
  // Indexes [1] (zigzag: count 1 is 0x02, index 1 is 0x02), then the message.
  ASSERT_EQ(decode(decoder, 3, std::string("\x02\x02", 2) + order, &json), "");
  EXPECT_EQ(json, R"({"amount":"5","at":"2025-11-26T09:40:00Z","eventId":"p-1"})");
  // A lone 0 is the first message (First), which reads field 1 as x.
  ASSERT_EQ(decode(decoder, 3, std::string("\x00", 1) + "\x0a\x01q", &json), "");
  EXPECT_EQ(json, R"({"x":"q"})");
  EXPECT_EQ(decode(decoder, 3, std::string("\x02\x08", 2) + order),
            "framed with schema id 3 (PROTOBUF) but framed for Protobuf with message index 4, which its schema does "
            "not have");
  EXPECT_NE(decode(decoder, 3, std::string("\x02\x02", 2) + "\x0a\x09p"), ""); // a string cut short
}

TEST(JsonSchemaDecoder, TheBodyIsJsonInCanonicalForm) {
  auto source = std::make_unique<Memory>();
  source->by_ids[5] = {5, SchemaType::Json, R"({"type":"object"})", {}};
  source->by_ids[6] = {6, SchemaType::Protobuf, "message {", {}};
  SchemaDecoder decoder(std::move(source));
  std::string json;
  ASSERT_EQ(decode(decoder, 5, R"({"b":1,"a":{"y":null,"x":[null,2]}})", &json), "");
  EXPECT_EQ(json, R"({"a":{"x":[null,2]},"b":1})");
  EXPECT_EQ(decode(decoder, 5, "{oops"), "framed with schema id 5 (JSON) but framed for a JSON schema but its body is "
                                         "not JSON");
  EXPECT_NE(decode(decoder, 6, "x").find("framed with schema id 6 (PROTOBUF), which cannot be used: its .proto"),
            std::string::npos);
}

// A schema that cannot be used is a reason for each payload framed with it, never a failure of
// the run: each way a schema can be unusable, in each format.
TEST(SchemaDecoder, EachUnusableSchemaIsAReason) {
  auto source = std::make_unique<Memory>();
  source->by_ids[1] = {1, SchemaType::Avro, "{not json", {}};
  source->by_ids[2] = {
      2, SchemaType::Avro, R"({"type":"record","name":"X","fields":[{"name":"a","type":"Nope"}]})", {}};
  source->by_ids[3] = {3,
                       SchemaType::Avro,
                       R"({"type":"record","name":"X","fields":[{"name":"a","type":"shop.Gone"}]})",
                       {Reference{"shop.Gone", "shop.Gone", 1, std::nullopt}}};
  source->by_ids[4] = {4, SchemaType::Json, "{not json", {}};
  source->by_ids[5] = {
      5, SchemaType::Protobuf, R"(syntax = "proto3"; import "elsewhere.proto"; message M { string a = 1; })", {}};
  SchemaDecoder decoder(std::move(source));
  EXPECT_EQ(decode(decoder, 1, "x"),
            "framed with schema id 1 (AVRO), which cannot be used: its Avro schema is not JSON");
  EXPECT_EQ(decode(decoder, 2, "x"),
            "framed with schema id 2 (AVRO), which cannot be used: its type Nope is not defined");
  EXPECT_EQ(decode(decoder, 3, "x"), "framed with schema id 3 (AVRO), which cannot be used: its reference shop.Gone "
                                     "(subject shop.Gone version 1) is unknown to memory");
  EXPECT_EQ(decode(decoder, 4, "{}"),
            "framed with schema id 4 (JSON), which cannot be used: its JSON schema is not JSON");
  EXPECT_EQ(decode(decoder, 5, "x"), "framed with schema id 5 (PROTOBUF), which cannot be used: its .proto imports "
                                     "elsewhere.proto, which is neither among its references nor a well-known type");
}

TEST(ProtobufDecoder, TruncatedMessageIndexesAreAReason) {
  auto source = std::make_unique<Memory>();
  source->by_ids[3] = {3, SchemaType::Protobuf, R"(syntax = "proto3"; message M { string a = 1; })", {}};
  SchemaDecoder decoder(std::move(source));
  for (const std::string& body : {std::string("\x80", 1), std::string("\x04\x00", 2), std::string("\x01", 1)}) {
    EXPECT_EQ(decode(decoder, 3, body), "framed with schema id 3 (PROTOBUF) but framed for Protobuf but its message "
                                        "indexes are truncated or malformed");
  }
}

// A string that is not UTF-8 is read with U+FFFD in place of its bad bytes: the decoded text stays
// JSON the json: specs can read.
TEST(AvroDecoder, AStringThatIsNotUtf8KeepsTheRecordReadable) {
  auto source = std::make_unique<Memory>();
  source->by_ids[9] = {
      9, SchemaType::Avro, R"({"type":"record","name":"S","fields":[{"name":"s","type":"string"}]})", {}};
  SchemaDecoder decoder(std::move(source));
  std::string json;
  ASSERT_EQ(decode(decoder, 9,
                   varint(6) + "a\xff"
                               "b",
                   &json),
            "");
  EXPECT_EQ(json, "{\"s\":\"a\xef\xbf\xbd"
                  "b\"}");
}

// The registry's answers other than a schema: 404 is an unknown id, anything else a registry that
// cannot be used (exit 3), named as the registry's, with the message it gave.
TEST(Registry, AnswersOtherThanASchema) {
  connectors::http::Server server("127.0.0.1:0", [](std::string_view path, std::string_view) {
    connectors::http::Response r;
    r.content_type = "application/vnd.schemaregistry.v1+json";
    if (path == "/schemas/ids/1") {
      r.body = R"({"schema":"\"string\"","references":[]})";
    } else if (path == "/schemas/ids/2") {
      r.status = 500;
      r.body = R"({"error_code":50001,"message":"Error in the backend data store"})";
    } else if (path == "/schemas/ids/3") {
      r.body = "<html>a proxy's login page</html>";
    } else if (path == "/schemas/ids/4") {
      r.body = R"({"schema":"x","schemaType":"XML"})";
    } else {
      r.status = 404;
      r.body = R"({"error_code":40403,"message":"Schema not found"})";
    }
    return r;
  });
  RegistrySettings settings;
  settings.url = fmt::format("http://127.0.0.1:{}/", server.port());
  auto registry = open_registry(settings);
  EXPECT_EQ(registry->by_id(1)->text, "\"string\"");
  EXPECT_FALSE(registry->by_id(7));
  std::string url = fmt::format("http://127.0.0.1:{}", server.port());
  auto refused = [&](std::uint32_t id) -> std::string {
    try {
      registry->by_id(id);
    } catch (const RegistryUnreachableError& e) {
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(
      refused(2),
      fmt::format("schema registry {} refused GET /schemas/ids/2: HTTP 500: Error in the backend data store", url));
  EXPECT_EQ(refused(3),
            fmt::format("schema registry {} answered schema id 3 with not a schema: no \"schema\" string", url));
  EXPECT_EQ(refused(4), fmt::format("schema registry {} answered schema id 4 with schema type XML is not AVRO, "
                                    "PROTOBUF or JSON",
                                    url));
  settings.url = "ftp://127.0.0.1/";
  EXPECT_THROW(open_registry(settings), UsageError);
}
