#pragma once

#include <string>
#include <string_view>

// JSON text written by hand where a line is written per event (kcat -J envelopes, replay decisions):
// no document object, no allocation beyond the line.
namespace dedupctl::core {

// Appends `text` as a JSON string literal (RFC 8259 escapes; bytes >= 0x80 pass as they are).
void append_json_string(std::string& out, std::string_view text);

// Whether `text` is one RFC 8259 number, whole: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? (not
// "+5", ".5" or "5.", which DynamoDB's N and strtod take; any length of digits).
bool valid_json_number(std::string_view text);

} // namespace dedupctl::core
