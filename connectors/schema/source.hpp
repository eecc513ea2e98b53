#pragma once

#include "core/identity/payload_decoder.hpp"
#include "core/util/errors.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Where the schemas of framed payloads come from: a schema registry over HTTP (the Confluent API,
// which Apicurio also serves) or a directory of schema files that `dedupctl schemas export` wrote.
namespace dedupctl::connectors::schema {

// The registry could not be reached or refused us (core's SchemaSourceUnreachableError: exit 3 as
// any other system, and watch names the registry, not the brokers, as what it cannot see).
using RegistryUnreachableError = core::SchemaSourceUnreachableError;

enum class SchemaType { Avro, Protobuf, Json };

struct Reference {
  std::string name; // as the schema names it: an Avro full name, a .proto import path
  std::string subject;
  std::int64_t version = 0;
  std::optional<std::uint32_t> id; // known in an export; a registry is asked by subject and version
};

struct RegisteredSchema {
  std::uint32_t id = 0;
  SchemaType type = SchemaType::Avro;
  std::string text;
  std::vector<Reference> references;
};

std::string_view type_name(SchemaType type); // "AVRO", "PROTOBUF", "JSON", as the registry says
// Parses the registry's answer for one schema ({"schema", "schemaType", "references", "id"?});
// throws std::runtime_error when it is not one.
RegisteredSchema parse_registered_schema(std::string_view json, std::uint32_t id);
// The form `schemas export` writes and a directory source reads.
std::string to_export_json(const RegisteredSchema& schema);
// Makes the export's directory (--out) when missing; UsageError when it cannot be.
void make_export_directory(const std::string& dir);
// Writes each schema to DIR/<id>.json, each file whole or not at all (a temporary sibling renamed
// into place); UnreachableError when a write fails (a full disk).
void write_export(const std::string& dir, const std::vector<RegisteredSchema>& schemas);

struct RegistrySettings {
  std::string url;       // http(s)://host:port[/path]; credentials in it are taken out (see user_info)
  std::string user_info; // USER:PASSWORD for basic auth
  std::string token;     // a bearer token
  std::string ca_file;   // trust these CAs for https
  std::int64_t timeout_ms = 10'000;
};

class SchemaSource {
public:
  virtual ~SchemaSource() = default;
  // nullopt when the source does not know the id; throws UnreachableError when it cannot answer.
  virtual std::optional<RegisteredSchema> by_id(std::uint32_t id) = 0;
  virtual std::optional<RegisteredSchema> by_reference(const Reference& reference) = 0;
  // For the report and messages: the registry's URL without credentials, or the directory.
  virtual std::string describe() const = 0;
};

// Throws UsageError for a URL that is not http(s).
std::unique_ptr<SchemaSource> open_registry(RegistrySettings settings);
// Throws UsageError when `dir` is not a readable directory.
std::unique_ptr<SchemaSource> open_directory(const std::string& dir);

// The URL without "user:password@"; the credentials, when there were some, in `user_info`.
std::string strip_credentials(const std::string& url, std::string* user_info);

} // namespace dedupctl::connectors::schema
