#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Where a value of an event is taken from: `header:NAME`, `json:/pointer` (RFC 6901) into the
// payload, `key-json:/pointer` into the key, `key`, `offset` (rendered topic-partition-offset). A
// payload or key in a schema registry's wire format is decoded first when a decoder is given.
namespace dedupctl::core {

enum class FieldKind { Header, Json, KeyJson, Key, Offset };

struct FieldSpec {
  FieldKind kind = FieldKind::Key;
  std::string name; // the header name or the JSON pointer
  std::string text; // as written, for messages and reports
  // A JSON pointer's reference tokens, unescaped (~1 is '/', ~0 is '~'): "/a~1b/0" is {"a/b", "0"}.
  std::vector<std::string> pointer;
};

// Parses "header:event_id,json:/event_id". Throws UsageError naming `what` (the flag).
std::vector<FieldSpec> parse_field_specs(std::string_view text, std::string_view what);
// One spec ("json:/a/b"); nullopt with `why` said when it is not one.
std::optional<FieldSpec> try_parse_field_spec(std::string_view item, std::string& why);

// Joins specs back into their written form.
std::string to_string(const std::vector<FieldSpec>& specs);

} // namespace dedupctl::core
