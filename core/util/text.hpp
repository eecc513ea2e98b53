#pragma once

#include <charconv>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

// Small string helpers the parsers share.
namespace dedupctl::core {

// The parts of `text` between `separator`s, empty ones included: "a,,b" → {"a", "", "b"}, "" → {""}.
inline std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    std::size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) {
      return parts;
    }
    start = end + 1;
  }
}

// The whole of `text` as a base-10 number of type T (a leading '-' only for signed types); false for
// an empty text, trailing bytes, or a value out of T's range.
template <typename T> bool parse_whole(std::string_view text, T& out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && ptr == text.data() + text.size();
}

// ASCII letters in lower case, every other byte as it is (no locale).
inline std::string ascii_lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

// ASCII letters in upper case, every other byte as it is (no locale).
inline std::string ascii_upper(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    c = c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c;
  }
  return out;
}

// `text` with every brace doubled: a literal in an fmt-style template ("{{" and "}}" stand for one).
inline std::string double_braces(std::string_view text) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '{' || c == '}') {
      out += c;
    }
  }
  return out;
}

// `text` without the ASCII whitespace (space, tab, CR, LF, VT, FF) at its start, or at both ends.
inline bool ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
inline std::string_view trim_front(std::string_view text) {
  while (!text.empty() && ascii_space(text.front())) {
    text.remove_prefix(1);
  }
  return text;
}
inline std::string_view trim(std::string_view text) {
  text = trim_front(text);
  while (!text.empty() && ascii_space(text.back())) {
    text.remove_suffix(1);
  }
  return text;
}

} // namespace dedupctl::core
