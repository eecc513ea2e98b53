#include "core/util/properties.hpp"

#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

std::vector<PropertyLine> parse_properties(std::string_view text, std::string_view origin) {
  std::vector<PropertyLine> out;
  int number = 0;
  for (auto raw : split(text, '\n')) {
    ++number;
    std::string_view line = trim_front(raw);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (trim(line).empty() || line.front() == '#' || line.front() == '!') {
      continue;
    }
    auto eq = line.find('=');
    std::string_view name = eq == std::string_view::npos ? std::string_view{} : trim(line.substr(0, eq));
    if (name.empty()) {
      throw UsageError(fmt::format("{}:{}: expected PROP=VALUE, as kcat's -F; the line is not shown, since it may "
                                   "hold a secret",
                                   origin, number));
    }
    // The value as written after its leading spaces: a password may end in one.
    out.push_back({std::string(name), std::string(trim_front(line.substr(eq + 1))), number});
  }
  return out;
}

} // namespace dedupctl::core
