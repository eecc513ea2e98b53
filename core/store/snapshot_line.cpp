#include "core/store/snapshot_line.hpp"

#include "core/util/escapes.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <charconv>

namespace dedupctl::core {

namespace {

constexpr std::string_view k_magic = "# dedupctl-snapshot v1";

void escape(std::string_view in, std::string& out) {
  for (unsigned char c : in) {
    switch (c) {
    case '\t':
      out += "\\t";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\\':
      out += "\\\\";
      break;
    default:
      if (c < 0x20 || c == 0x7f) {
        out += fmt::format("\\x{:02x}", c);
      } else {
        out += static_cast<char>(c);
      }
    }
  }
}

// Copies the runs between backslashes whole: keys and values rarely hold an escape.
bool unescape(std::string_view in, std::string& out) {
  out.clear();
  std::size_t i = 0;
  for (;;) {
    std::size_t slash = in.find('\\', i);
    out.append(in.substr(i, slash == std::string_view::npos ? std::string_view::npos : slash - i));
    if (slash == std::string_view::npos) {
      return true;
    }
    i = slash + 1;
    if (i >= in.size()) {
      return false;
    }
    char decoded = 0;
    if (decode_c_escape(in[i], decoded)) {
      out += decoded;
      ++i;
      continue;
    }
    if (in[i] != 'x' || i + 3 > in.size()) {
      return false;
    }
    unsigned value = 0;
    auto [ptr, ec] = std::from_chars(in.data() + i + 1, in.data() + i + 3, value, 16);
    if (ec != std::errc{} || ptr != in.data() + i + 3) {
      return false;
    }
    out += static_cast<char>(value);
    i += 3;
  }
}

} // namespace

std::string format_snapshot_header(const SnapshotHeader& header) {
  std::string line = fmt::format("{}\ttaken_at={}\tstore=", k_magic, header.taken_at_ms);
  escape(header.store, line);
  line += "\tmatch=";
  escape(header.match, line);
  if (!header.layout.empty() && header.layout != "plain") {
    line += "\tlayout=";
    escape(header.layout, line);
  }
  if (!header.nodes.empty()) {
    line += "\tnodes=";
    escape(header.nodes, line);
  }
  return line;
}

std::string format_snapshot_entry(const SnapshotEntry& entry) {
  std::string line;
  escape(entry.key, line);
  line += '\t';
  line += entry.pttl_ms ? std::to_string(*entry.pttl_ms) : "-";
  line += '\t';
  escape(entry.value, line);
  return line;
}

bool parse_snapshot_header(std::string_view line, SnapshotHeader& header, std::string& error) {
  if (!line.starts_with(k_magic)) {
    error = "not a dedupctl snapshot (the first line must start with '# dedupctl-snapshot v1')";
    return false;
  }
  std::string_view rest = line.substr(k_magic.size());
  bool has_time = false;
  while (!rest.empty()) {
    if (rest[0] == '\t') {
      rest.remove_prefix(1);
    }
    auto tab = rest.find('\t');
    std::string_view field = rest.substr(0, tab);
    rest = tab == std::string_view::npos ? std::string_view{} : rest.substr(tab);
    if (field.starts_with("taken_at=")) {
      has_time = parse_whole(field.substr(9), header.taken_at_ms);
    } else if (field.starts_with("store=")) {
      unescape(field.substr(6), header.store);
    } else if (field.starts_with("match=")) {
      unescape(field.substr(6), header.match);
    } else if (field.starts_with("layout=")) {
      unescape(field.substr(7), header.layout);
    } else if (field.starts_with("nodes=")) {
      unescape(field.substr(6), header.nodes);
    }
  }
  if (!has_time) {
    error = "the snapshot header has no taken_at=MS";
  }
  return has_time;
}

bool parse_snapshot_entry(std::string_view line, SnapshotEntry& entry, std::string& error) {
  auto first = line.find('\t');
  auto second = first == std::string_view::npos ? first : line.find('\t', first + 1);
  if (second == std::string_view::npos) {
    error = "expected KEY<TAB>PTTL<TAB>VALUE";
    return false;
  }
  if (!unescape(line.substr(0, first), entry.key) || !unescape(line.substr(second + 1), entry.value)) {
    error = "a bad escape sequence";
    return false;
  }
  std::string_view pttl = line.substr(first + 1, second - first - 1);
  if (pttl == "-") {
    entry.pttl_ms.reset();
    return true;
  }
  std::int64_t ms = 0;
  if (!parse_whole(pttl, ms) || ms < 0) {
    error = fmt::format("'{}' is not a remaining TTL in ms (or -)", pttl);
    return false;
  }
  entry.pttl_ms = ms;
  return true;
}

} // namespace dedupctl::core
