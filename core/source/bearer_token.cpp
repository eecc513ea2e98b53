#include "core/source/bearer_token.hpp"

#include "core/util/encoding.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <cmath>

namespace dedupctl::core {

namespace {

BearerToken from_json(std::string_view text) {
  BearerToken out;
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(text.data(), text.size()).get(doc) || !doc.is_object()) {
    out.error = "it printed neither a JWT nor a JSON object {\"token\", \"expires_at_ms\", \"principal\"}";
    return out;
  }
  std::string_view token;
  if (doc["token"].get(token) || token.empty()) {
    out.error = "its JSON has no \"token\" string";
    return out;
  }
  out.token = std::string(token);
  std::int64_t expires = 0;
  if (doc["expires_at_ms"].get(expires)) {
    out.error = "its JSON has no \"expires_at_ms\" number (the token's expiry, epoch milliseconds)";
    return out;
  }
  out.expires_at_ms = expires;
  std::string_view principal;
  if (!doc["principal"].get(principal)) {
    out.principal = std::string(principal);
  }
  return out;
}

BearerToken from_jwt(std::string_view text) {
  BearerToken out;
  auto parts = split(text, '.');
  std::string payload;
  if (parts.size() != 3 || !base64_decode(parts[1], Base64::Url, payload)) {
    out.error = "it printed neither a JWT nor a JSON object {\"token\", \"expires_at_ms\", \"principal\"}";
    return out;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element claims;
  if (parser.parse(payload).get(claims) || !claims.is_object()) {
    out.error = "its JWT's payload is not a JSON object";
    return out;
  }
  double exp = 0;
  if (claims["exp"].get(exp)) {
    out.error = "its JWT has no \"exp\" claim (the expiry, epoch seconds)";
    return out;
  }
  out.token = std::string(text);
  out.expires_at_ms = static_cast<std::int64_t>(std::floor(exp * 1000));
  std::string_view sub;
  if (!claims["sub"].get(sub)) {
    out.principal = std::string(sub);
  }
  return out;
}

} // namespace

BearerToken parse_bearer_token(std::string_view output, std::int64_t now_ms) {
  std::string_view text = trim(output);
  BearerToken out = !text.empty() && text.front() == '{' ? from_json(text) : from_jwt(text);
  if (out.error.empty() && out.expires_at_ms <= now_ms) {
    out.error = fmt::format("its token expired {} s ago", (now_ms - out.expires_at_ms) / 1000);
  }
  if (!out.error.empty()) {
    out.token.clear();
  }
  return out;
}

} // namespace dedupctl::core
