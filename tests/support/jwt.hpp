#pragma once

// Unsigned JWTs (alg none), as Kafka's unsecured OAUTHBEARER validator takes them: for the token
// parser's unit tests and the token command and OIDC tests against a real broker. Header-only: the
// unit tests link no fixture.
#include <string>

namespace dedupctl::testing {

// base64url without padding (RFC 7515).
inline std::string base64url(const std::string& text) {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  unsigned bits = 0;
  int count = 0;
  for (unsigned char c : text) {
    bits = (bits << 8) | c;
    count += 8;
    while (count >= 6) {
      count -= 6;
      out += alphabet[(bits >> count) & 63];
    }
  }
  if (count > 0) {
    out += alphabet[(bits << (6 - count)) & 63];
  }
  return out;
}

// header.payload. with these claims (a JSON object's text).
inline std::string unsigned_jwt(const std::string& claims) {
  return base64url(R"({"alg":"none"})") + "." + base64url(claims) + ".";
}

} // namespace dedupctl::testing
