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

} // namespace dedupctl::core
