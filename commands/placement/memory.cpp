// The memory family: memory:, a replay's own window of ids (exact, then a Bloom filter); it holds
// nothing before the replay starts, so it is only ever a --via.
#include "commands/placement/family.hpp"

#include "core/replay/replay.hpp"

#include <algorithm>

namespace dedupctl::commands {

namespace {

std::unique_ptr<core::ReplayPlacement> open_via(const PlacementOptions&, const ViaOptions& via, Context&) {
  std::size_t expected = std::max(via.expected_events, via.memory_window);
  auto memory =
      std::make_unique<core::MemoryPlacement>(via.memory_window, std::max<std::size_t>(expected * 16, 1 << 20));
  if (via.findings) {
    via.findings->push_back(core::memory_placement_finding(memory->window().capacity(), memory->window().bloom_bits()));
  }
  return memory;
}

} // namespace

StoreFamily memory_family() {
  StoreFamily family;
  family.row = &placement::family_row(core::StoreUri::Kind::Memory);
  family.open_via = open_via;
  return family;
}

} // namespace dedupctl::commands
