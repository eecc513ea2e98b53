#pragma once

#include <cstdint>
#include <string>
#include <string_view>

// Byte encodings a URL or a token uses.
namespace dedupctl::core {

enum class Base64 { Standard, Url }; // RFC 4648's alphabets: "+/" or "-_"

// Appends the bytes of `text` to `out`, stopping at the first '='; false on a character outside the
// alphabet (what was decoded before it stays appended).
bool base64_decode(std::string_view text, Base64 alphabet, std::string& out);
// Appends `bytes` in base64 to `out`, padded with '=' when `pad` (Node's digest('base64') pads,
// its 'base64url' does not).
void base64_encode(std::string_view bytes, Base64 alphabet, bool pad, std::string& out);

// RFC 3986: every byte but the unreserved ones as %XX (for a path segment or a query value).
// The bytes as lower-case hex, two digits a byte.
std::string hex_encode(std::string_view bytes);

std::string percent_encode(std::string_view text);

// The next code point of UTF-8 text at `i`, moving `i` past it; U+FFFD for a byte that does not
// start a whole, shortest sequence (as Python and Java decode with replacement, one a byte).
std::uint32_t next_code_point(std::string_view text, std::size_t& i);

// Bytes as text a report can hold: UTF-8 as it is (control characters too: JSON escapes them its
// way, the human formats theirs, reports/printable), every byte that is not part of a whole UTF-8
// sequence as \xHH (a Java-serialized key).
std::string escape_non_utf8(std::string_view bytes);
// Whether `bytes` are whole UTF-8 throughout; and the text with U+FFFD for each byte that is not part
// of a whole, shortest sequence (an id a JSON document can hold; its bytes go beside it in base64).
bool is_utf8(std::string_view bytes);
std::string replace_non_utf8(std::string_view bytes);

// Appends `text` (UTF-8) as Java's ObjectOutputStream writes a String: the stream header, TC_STRING
// and a 16-bit length (TC_LONGSTRING and a 64-bit one beyond 65535 bytes), then modified UTF-8.
void append_java_string(std::string_view text, std::string& out);

} // namespace dedupctl::core
