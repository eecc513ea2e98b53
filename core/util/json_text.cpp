#include "core/util/json_text.hpp"

namespace dedupctl::core {

void append_json_string(std::string& out, std::string_view text) {
  static const char* hex = "0123456789abcdef";
  out += '"';
  // Runs of bytes that need no escape are appended whole (a byte at a time was a sixth of a
  // decoding scan's time).
  std::size_t run = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto u = static_cast<unsigned char>(text[i]);
    if (u >= 0x20 && u != '"' && u != '\\') {
      continue;
    }
    out.append(text.data() + run, i - run);
    run = i + 1;
    if (u == '"' || u == '\\') {
      out += '\\';
      out += static_cast<char>(u);
    } else {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  out.append(text.data() + run, text.size() - run);
  out += '"';
}

bool valid_json_number(std::string_view text) {
  std::size_t i = 0;
  auto digits = [&] {
    std::size_t start = i;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
      ++i;
    }
    return i > start;
  };
  if (i < text.size() && text[i] == '-') {
    ++i;
  }
  std::size_t first = i;
  if (!digits() || (text[first] == '0' && i - first > 1)) {
    return false;
  }
  if (i < text.size() && text[i] == '.' && (++i, !digits())) {
    return false;
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
      ++i;
    }
    if (!digits()) {
      return false;
    }
  }
  return i == text.size();
}

} // namespace dedupctl::core
