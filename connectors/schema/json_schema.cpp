#include "connectors/schema/formats.hpp"

#include "core/util/json_text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <simdjson.h>

namespace dedupctl::connectors::schema {

namespace {

void drop_nulls(nlohmann::json& value) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end();) {
      if (it->is_null()) {
        it = value.erase(it);
      } else {
        drop_nulls(*it);
        ++it;
      }
    }
  } else if (value.is_array()) {
    for (auto& item : value) {
      drop_nulls(item);
    }
  }
}

// A JSON Schema payload is JSON after the frame: nothing to decode but the canonical form.
class JsonSchemaCompiled : public Compiled {
public:
  std::string decode(std::string_view body, std::string& json) override {
    if (!canonical_json(body, json)) {
      return "framed for a JSON schema but its body is not JSON";
    }
    return "";
  }
};

} // namespace

void append_json_string(std::string& out, std::string_view text) {
  // The decoded text is parsed as JSON next: valid UTF-8 is escaped as it is, by hand (a json
  // object a string was a third of an Avro scan's time); invalid bytes become U+FFFD.
  if (simdjson::validate_utf8(text.data(), text.size())) {
    core::append_json_string(out, text);
    return;
  }
  out += nlohmann::json(std::string(text)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool canonical_json(std::string_view text, std::string& out) {
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) {
    return false;
  }
  drop_nulls(doc);
  // nlohmann's objects are ordered maps: dump() sorts the members.
  out = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return true;
}

std::unique_ptr<Compiled> compile_json_schema(const RegisteredSchema& schema) {
  auto doc = nlohmann::json::parse(schema.text, nullptr, false);
  if (doc.is_discarded()) {
    throw std::runtime_error("its JSON schema is not JSON");
  }
  return std::make_unique<JsonSchemaCompiled>();
}

} // namespace dedupctl::connectors::schema
