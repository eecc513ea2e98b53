#include "core/check/config_check.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <vector>

namespace dedupctl::core {

namespace {

// The closest known name, when one is a typo away (one edit, or two transposed letters).
std::string suggestion(const std::string& key, const std::set<std::string>& names) {
  auto near = [](const std::string& a, const std::string& b) {
    if (a == b) {
      return false;
    }
    std::size_t n = a.size(), m = b.size();
    std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
    for (std::size_t i = 0; i <= n; ++i) {
      d[i][0] = i;
    }
    for (std::size_t j = 0; j <= m; ++j) {
      d[0][j] = j;
    }
    for (std::size_t i = 1; i <= n; ++i) {
      for (std::size_t j = 1; j <= m; ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[n][m] <= (std::max(n, m) > 4 ? 2u : 1u);
  };
  for (const auto& name : names) {
    if (near(key, name)) {
      return name;
    }
  }
  return "";
}

} // namespace

std::vector<ConfigProblem> check_config(std::string_view text,
                                        const std::map<std::string, std::set<std::string>>& known,
                                        std::map<std::string, std::set<std::string>>* present) {
  std::vector<ConfigProblem> problems;
  toml::table root;
  try {
    root = toml::parse(text);
  } catch (const toml::parse_error& e) {
    problems.push_back({static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column),
                        fmt::format("not valid TOML: {}", e.description())});
    return problems;
  }
  static const std::set<std::string> k_none;
  auto names_of = [&](const std::string& section) -> const std::set<std::string>& {
    auto it = known.find(section);
    return it == known.end() ? k_none : it->second;
  };
  const auto& top = names_of("");
  auto check_key = [&](const std::string& section, const toml::key& k) {
    std::string key(k.str());
    if (present) {
      (*present)[section].insert(key);
    }
    const auto& names = names_of(section);
    if (names.count(key) || top.count(key)) {
      return;
    }
    std::set<std::string> all = names;
    all.insert(top.begin(), top.end());
    std::string near = suggestion(key, all);
    std::string where = section.empty() ? "at the top level" : fmt::format("in [{}]", section);
    problems.push_back({static_cast<int>(k.source().begin.line), static_cast<int>(k.source().begin.column),
                        fmt::format("unknown key '{}' {}{}", key, where,
                                    near.empty() ? "; see dedupctl --help for the option names"
                                                 : fmt::format("; did you mean '{}'?", near))});
  };
  for (const auto& [k, node] : root) {
    std::string key(k.str());
    if (const auto* table = node.as_table(); table && known.count(key) && !key.empty()) {
      for (const auto& [sub_key, sub_node] : *table) {
        check_key(key, sub_key);
      }
      continue;
    }
    if (node.is_table()) {
      problems.push_back({static_cast<int>(k.source().begin.line), static_cast<int>(k.source().begin.column),
                          fmt::format("unknown section [{}]: sections are the commands (scan, audit, check, "
                                      "snapshot, trace, replay)",
                                      key)});
      continue;
    }
    check_key("", k);
  }
  return problems;
}

} // namespace dedupctl::core
