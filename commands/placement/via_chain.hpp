#pragma once

// replay --via repeated: a chain of tiers, in lookup order (docs/windows.md "Tiers"). The replay
// claims in the first tier that survives a restart; the other durable tiers are read, and an event
// any of them holds is skipped, as the consumer skips it (core::ChainPlacement). A window in memory
// holds nothing across a replay and is not asked.
#include "commands/context.hpp"
#include "commands/placement/family.hpp"
#include "commands/placement/options.hpp"
#include "core/replay/chain.hpp"

#include <memory>
#include <string>
#include <vector>

namespace dedupctl::commands {

struct ViaChain {
  std::size_t claims = 0; // the flags' tier that claims
  std::string claims_name;
  std::vector<PlacementOptions> readers; // the other durable tiers, in lookup order
  std::vector<std::string> reader_names;
  std::vector<std::string> windows; // the windows in memory left out, named
};

// The chain the flags give (two or more tiers). UsageError, before anything is contacted, for one
// that cannot be: no tier that survives a restart, a Bloom filter (its "maybe" is no record to skip
// by, and it cannot be released), memory: as anything but the consumer's window, --repair-lost.
ViaChain parse_via_chain(const std::vector<PlacementFlags>& flags, bool repair_lost, const Context& context);

// The readers' templates, as the runner renders them (an inbox: the event id).
std::vector<core::KeyTemplate> reader_templates(const ViaChain& chain);

// The chain's placement over `claims` (the claiming tier's own), the readers opened and kept in
// `stores`. Throws UnreachableError naming the tier that cannot be reached.
std::unique_ptr<core::ReplayPlacement> open_via_chain(const ViaChain& chain, core::ReplayPlacement& claims,
                                                      std::vector<OpenedStore>& stores, Context& context);

} // namespace dedupctl::commands
