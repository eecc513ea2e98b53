#pragma once

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
std::string percent_encode(std::string_view text);

} // namespace dedupctl::core
