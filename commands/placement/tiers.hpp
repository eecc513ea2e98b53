#pragma once

// A placement of several tiers: --store repeated, in lookup order (docs/windows.md "Tiers").
#include "commands/placement/options.hpp"

#include <CLI/CLI.hpp>

#include <string_view>
#include <vector>

namespace dedupctl::commands {

// The placement flags as given, one PlacementFlags a tier. Each --store starts a tier; a tier's flag
// (--layout, --layout-option, --key-template, --key-prefix, --collection, --ttl, --in-progress-value,
// --lease, the --inbox-* flags) belongs to the --store before it, and one before the first --store to
// the first tier. --consumer, --retention, --max-lag and --side-effects are the whole placement's.
// One --store: `parsed` as it is. `command` is the subcommand that added the placement options.
// A flag given twice for one tier is a UsageError naming it.
std::vector<PlacementFlags> tier_flags(const CLI::App& command, const PlacementFlags& parsed);

// A chain holds one window in memory at most, so that it always has a store that survives a restart:
// a UsageError when `windows` is more.
void refuse_windows_beyond_one(std::size_t windows);

// Whether a placement flag (its long name) is a tier's own.
bool tier_flag(std::string_view name);

} // namespace dedupctl::commands
