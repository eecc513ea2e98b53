#pragma once

#include <string>
#include <string_view>
#include <vector>

// What a key template's placeholder does to its value before it goes into the key, as the
// idempotency libraries derive a record's key from an event id: Powertools for Python's is
// `PREFIX#{event_id|json-ascii|md5}`, Powertools for TypeScript's `PREFIX#{event_id|json|md5|base64}`.
namespace dedupctl::core {

enum class TemplateFilter {
  Json,      // a JSON string literal as JavaScript's JSON.stringify writes it (UTF-8 kept)
  JsonAscii, // as Python's json.dumps writes it: beyond printable ASCII as lower-case \uXXXX
  Md5,       // digests of the bytes so far: raw for a hex, base64, base64url or digest after them, their
             // lower-case hex to any other filter and at the end of the chain
  Sha1,
  Sha256,
  Sha512,
  Hex,       // the bytes before (a digest's, or the text's) as lower-case hex
  Base64,    // standard and padded, as Node's digest('base64')
  Base64Url, // URL-safe and unpadded, as Node's digest('base64url')
  Lower,     // ASCII case
  Upper,
  Java, // the value as Java's ObjectOutputStream writes a String (RedisTemplate's default
        // JdkSerializationRedisSerializer: Camel's SpringRedisIdempotentRepository)
};

std::string_view to_string(TemplateFilter filter);

// The filters of "json-ascii|md5", in order. Throws UsageError naming an unknown or empty filter
// of `placeholder` and listing the filters.
std::vector<TemplateFilter> parse_template_filters(std::string_view text, std::string_view placeholder);

// Appends `value` through the filters to `out`.
void apply_template_filters(const std::vector<TemplateFilter>& filters, std::string_view value, std::string& out);

} // namespace dedupctl::core
