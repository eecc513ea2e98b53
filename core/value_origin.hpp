#pragma once

#include <string_view>

namespace dedupctl::core {

// Where a value the user gave came from, in the order docs/design.md "The command line" ranks them.
enum class ValueOrigin { Flag, Config, Environment, Default };
std::string_view origin_name(ValueOrigin origin); // "flag", "config", "environment", "default"

} // namespace dedupctl::core
