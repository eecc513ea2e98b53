#pragma once

#include "connectors/schema/source.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

// The decoders of one schema each: a record's bytes to the canonical JSON of its content.
namespace dedupctl::connectors::schema {

// A compiled schema. decode() returns "" or why the bytes are not a record of it, to follow
// "payload is ". Not thread-safe: the caller holds one lock.
class Compiled {
public:
  virtual ~Compiled() = default;
  virtual std::string decode(std::string_view body, std::string& json) = 0;
};

// Fetches a referenced schema (throws UsageError/UnreachableError as the source does, or
// std::runtime_error when the source does not know it).
using ResolveReference = std::function<RegisteredSchema(const Reference&)>;

// Each throws std::runtime_error with what is wrong with the schema.
std::unique_ptr<Compiled> compile_avro(const RegisteredSchema& schema, const ResolveReference& resolve);
std::unique_ptr<Compiled> compile_protobuf(const RegisteredSchema& schema, const ResolveReference& resolve);
std::unique_ptr<Compiled> compile_json_schema(const RegisteredSchema& schema);

// Reads one zigzag varint (Avro's int and long, the Protobuf message indexes of the Confluent
// frame) from the front of `bytes`; false when it is cut short or longer than 64 bits.
inline bool read_zigzag(std::string_view& bytes, std::int64_t& out) {
  std::uint64_t value = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (bytes.empty()) {
      return false;
    }
    auto byte = static_cast<unsigned char>(bytes.front());
    bytes.remove_prefix(1);
    value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
    if (!(byte & 0x80)) {
      out = static_cast<std::int64_t>((value >> 1) ^ (~(value & 1) + 1));
      return true;
    }
  }
  return false;
}

// JSON text in canonical form: object members sorted by name, null members left out, no spaces.
// Returns false when `text` is not JSON.
bool canonical_json(std::string_view text, std::string& out);
// Appends `text` as a JSON string.
void append_json_string(std::string& out, std::string_view text);

} // namespace dedupctl::connectors::schema
