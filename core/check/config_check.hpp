#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// The --config file (TOML) checked before its values are used: a file that does not parse, or a
// key no option has (a typo such as `tll`), would otherwise be ignored without a word and change
// a verdict. Pure: the text is read by the caller.
namespace dedupctl::core {

struct ConfigProblem {
  int line = 0;
  int column = 0;
  std::string message;
};

// `known`: per section ("" for the top level, else a subcommand's name), the option names the
// section may set (long names without dashes). Top-level names are allowed in every section.
// `present`, when given, receives per section the keys the file sets (known or not), so that a value
// can be reported as coming from the config file.
std::vector<ConfigProblem> check_config(std::string_view text,
                                        const std::map<std::string, std::set<std::string>>& known,
                                        std::map<std::string, std::set<std::string>>* present = nullptr);

} // namespace dedupctl::core
