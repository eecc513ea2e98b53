#pragma once

#include <string>
#include <string_view>
#include <utility>

// What re-applying an event of a type does (--side-effects TYPE=CLASS): the audit prices a seek with
// it, check reads it from declarations, replay reports by it.
namespace dedupctl::core {

enum class SideEffect { External, Internal, Idempotent };
std::string_view to_string(SideEffect effect);
// Parses "TYPE=external|internal|idempotent"; throws UsageError.
std::pair<std::string, SideEffect> parse_side_effect(std::string_view text);

} // namespace dedupctl::core
