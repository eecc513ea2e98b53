#include "core/util/encoding.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

void base64_encode(std::string_view bytes, Base64 alphabet, bool pad, std::string& out) {
  const char* digits = alphabet == Base64::Url ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                                               : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  unsigned bits = 0;
  int count = 0;
  for (char c : bytes) {
    bits = (bits << 8) | static_cast<unsigned char>(c);
    count += 8;
    while (count >= 6) {
      count -= 6;
      out += digits[(bits >> count) & 63];
    }
  }
  if (count > 0) {
    out += digits[(bits << (6 - count)) & 63];
  }
  for (std::size_t n = bytes.size() % 3; pad && n != 0 && n < 3; ++n) {
    out += '=';
  }
}

bool base64_decode(std::string_view text, Base64 alphabet, std::string& out) {
  const char c62 = alphabet == Base64::Url ? '-' : '+';
  const char c63 = alphabet == Base64::Url ? '_' : '/';
  auto value = [&](char c) -> int {
    if (c >= 'A' && c <= 'Z') {
      return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
      return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
      return c - '0' + 52;
    }
    return c == c62 ? 62 : c == c63 ? 63 : -1;
  };
  unsigned bits = 0;
  int count = 0;
  for (char c : text) {
    if (c == '=') {
      break;
    }
    int v = value(c);
    if (v < 0) {
      return false;
    }
    bits = (bits << 6) | static_cast<unsigned>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out += static_cast<char>((bits >> count) & 0xFF);
    }
  }
  return true;
}

std::string percent_encode(std::string_view text) {
  std::string out;
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                      c == '_' || c == '.' || c == '~';
    if (unreserved) {
      out += ch;
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

} // namespace dedupctl::core
