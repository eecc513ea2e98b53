// libFuzzer target for payloads in a schema registry's wire format: the frame, then the Avro,
// Protobuf and JSON Schema decoders (connectors/schema) through the identify stage, as a topic's
// bytes reach them. The first input byte picks the schema; the rest is the record's body. Run e.g.
// build-fuzz/tests/fuzz/fuzz_schema -max_total_time=60.
#include "connectors/schema/decoder.hpp"
#include "core/identity/field_spec.hpp"
#include "core/identity/identify.hpp"
#include "core/identity/payload_decoder.hpp"

#include <cstdint>
#include <map>
#include <string>

using namespace dedupctl;
using connectors::schema::Reference;
using connectors::schema::RegisteredSchema;
using connectors::schema::SchemaType;

namespace {

class Schemas : public connectors::schema::SchemaSource {
public:
  Schemas() {
    add(1, SchemaType::Avro, R"({"type":"record","name":"Order","namespace":"shop","fields":[
      {"name":"metadata","type":{"type":"record","name":"Meta","fields":[{"name":"eventId","type":"string"},
        {"name":"type","type":["null","string"]}]}},
      {"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":20,"scale":2}},
      {"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}},
      {"name":"day","type":{"type":"int","logicalType":"date"}},
      {"name":"tags","type":{"type":"array","items":"string"}},
      {"name":"attrs","type":{"type":"map","values":["null","double","float","boolean"]}},
      {"name":"state","type":{"type":"enum","name":"State","symbols":["NEW","PAID"]}},
      {"name":"hash","type":{"type":"fixed","name":"Hash","size":4}},
      {"name":"next","type":["null","Order"]}]})");
    add(2, SchemaType::Protobuf, R"(syntax = "proto3"; package shop;
      import "google/protobuf/timestamp.proto";
      message First { string x = 1; }
      message Envelope { message Order { string event_id = 1; int64 amount = 2; repeated string tags = 3;
        map<string, double> attrs = 4; google.protobuf.Timestamp at = 5; Envelope next = 6; bytes raw = 7; } })");
    add(3, SchemaType::Json, R"({"type":"object"})");
  }
  std::optional<RegisteredSchema> by_id(std::uint32_t id) override {
    auto found = m_schemas.find(id);
    return found == m_schemas.end() ? std::nullopt : std::optional(found->second);
  }
  std::optional<RegisteredSchema> by_reference(const Reference&) override { return std::nullopt; }
  std::string describe() const override { return "fuzz"; }

private:
  void add(std::uint32_t id, SchemaType type, std::string text) {
    m_schemas[id] = RegisteredSchema{id, type, std::move(text), {}};
  }
  std::map<std::uint32_t, RegisteredSchema> m_schemas;
};

core::IdentifyOptions options() {
  core::IdentifyOptions o;
  o.id = core::parse_field_specs("json:/metadata/eventId,json:/eventId,key-json:/eventId", "--id");
  o.type = core::parse_field_specs("json:/metadata/type", "--type");
  o.decoder = std::make_shared<connectors::schema::SchemaDecoder>(std::make_unique<Schemas>());
  return o;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static core::Identifier identifier(options());
  if (size == 0) {
    return 0;
  }
  std::string framed(5, '\0');
  framed[4] = static_cast<char>(1 + data[0] % 4); // 4: an id no source knows
  framed.append(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string raw(reinterpret_cast<const char*>(data), size); // the whole input as a frame, too
  for (const std::string* bytes : {&framed, &raw}) {
    core::Event event;
    event.topic = "t";
    event.payload = std::string_view(*bytes);
    event.key = std::string_view(*bytes);
    identifier.identify_one(event);
  }
  return 0;
}
