#pragma once

#include <string>
#include <string_view>
#include <vector>

// librdkafka properties from a file, as kcat's -F reads them.
namespace dedupctl::core {

struct PropertyLine {
  std::string name;
  std::string value;
  int line = 0; // 1-based
};

// NAME=VALUE lines: blank lines and lines starting with '#' or '!' are skipped, spaces around the
// name and before the value are dropped, the value is the rest of the line ('=' and trailing
// spaces kept, a '\r' at the end of the line dropped). A line without '=' or without a name throws UsageError naming
// `origin` and the line number, never the line (it may hold a secret).
std::vector<PropertyLine> parse_properties(std::string_view text, std::string_view origin);

} // namespace dedupctl::core
