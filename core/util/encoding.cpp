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

std::string hex_encode(std::string_view bytes) {
  static constexpr char k_digits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '\0');
  char* at = out.data();
  for (unsigned char c : bytes) {
    *at++ = k_digits[c >> 4];
    *at++ = k_digits[c & 0xf];
  }
  return out;
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

// The next code point of UTF-8 text at `i`, moving `i` past it; U+FFFD for a byte that does not
// start a whole, shortest sequence (as Python decodes with errors="replace", one a byte).
std::uint32_t next_code_point(std::string_view in, std::size_t& i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(in[k]); };
  unsigned char lead = byte(i);
  std::size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
  if (length == 1) {
    ++i;
    return lead;
  }
  if (length == 0 || i + length > in.size()) {
    ++i;
    return 0xfffd;
  }
  std::uint32_t c = lead & (0x7f >> length);
  for (std::size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xc0) != 0x80) {
      ++i;
      return 0xfffd;
    }
    c = (c << 6) | (byte(i + k) & 0x3f);
  }
  static constexpr std::uint32_t k_least[] = {0, 0, 0x80, 0x800, 0x10000};
  if (c < k_least[length] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
    ++i;
    return 0xfffd;
  }
  i += length;
  return c;
}

// Java's serialization of a String: the stream header, TC_STRING and a 16-bit length (TC_LONGSTRING
// and a 64-bit one beyond 65535 bytes), then the text in Java's modified UTF-8 (NUL as C0 80, beyond
// the BMP as two three-byte surrogates). Bytes that are not UTF-8 become U+FFFD, as Java decodes them.
void append_java_string(std::string_view in, std::string& out) {
  std::string body;
  auto put3 = [&](std::uint32_t c) {
    body += static_cast<char>(0xe0 | (c >> 12));
    body += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
    body += static_cast<char>(0x80 | (c & 0x3f));
  };
  for (std::size_t i = 0; i < in.size();) {
    std::uint32_t c = next_code_point(in, i);
    if (c >= 1 && c <= 0x7f) {
      body += static_cast<char>(c);
    } else if (c <= 0x7ff) {
      body += static_cast<char>(0xc0 | (c >> 6));
      body += static_cast<char>(0x80 | (c & 0x3f));
    } else if (c <= 0xffff) {
      put3(c);
    } else {
      c -= 0x10000;
      put3(0xd800 + (c >> 10));
      put3(0xdc00 + (c & 0x3ff));
    }
  }
  out.append("\xac\xed\x00\x05", 4);
  bool is_long = body.size() > 0xffff;
  out += static_cast<char>(is_long ? 0x7c : 0x74);
  for (int shift = is_long ? 56 : 8; shift >= 0; shift -= 8) {
    out += static_cast<char>((static_cast<std::uint64_t>(body.size()) >> shift) & 0xff);
  }
  out += body;
}

bool is_utf8(std::string_view bytes) {
  for (std::size_t i = 0; i < bytes.size();) {
    std::size_t start = i;
    auto lead = static_cast<unsigned char>(bytes[start]);
    if (lead < 0x80) {
      ++i;
    } else if (next_code_point(bytes, i) == 0xfffd && i - start == 1) {
      return false;
    }
  }
  return true;
}

namespace {

// `bytes` with each byte that is not part of a whole UTF-8 sequence written by `stand_in`.
template <typename StandIn> std::string map_non_utf8(std::string_view bytes, StandIn stand_in) {
  std::string out;
  out.reserve(bytes.size());
  for (std::size_t i = 0; i < bytes.size();) {
    std::size_t start = i;
    std::uint32_t c = next_code_point(bytes, i);
    auto lead = static_cast<unsigned char>(bytes[start]);
    if (c == 0xfffd && i - start == 1 && lead >= 0x80) {
      stand_in(lead, out);
    } else {
      out.append(bytes.substr(start, i - start));
    }
  }
  return out;
}

} // namespace

std::string replace_non_utf8(std::string_view bytes) {
  return map_non_utf8(bytes, [](unsigned char, std::string& out) { out += "\xEF\xBF\xBD"; });
}

std::string escape_non_utf8(std::string_view bytes) {
  return map_non_utf8(
      bytes, [](unsigned char lead, std::string& out) { fmt::format_to(std::back_inserter(out), "\\x{:02x}", lead); });
}

} // namespace dedupctl::core
