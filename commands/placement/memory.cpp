// The memory family: memory:, a window of ids in memory. As --store with a window layout (lru,
// lru-bloom, bloom-exact) it is the consumer's own window, which the audit simulates over the log
// (core::WindowAnalyzer) and which holds nothing after a restart (core::WindowStore). As --via it is
// the replay's own window (exact, then a Bloom filter), which holds nothing before the replay starts.
#include "commands/placement/family.hpp"

#include "core/replay/replay.hpp"
#include "core/util/errors.hpp"
#include "core/window/window_store.hpp"

#include <fmt/format.h>

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

void check_layout(const PlacementOptions& options) {
  bool window = options.layout.home == core::LayoutHome::Window;
  if (options.flag == "--store" && !window) {
    throw UsageError("--store memory: is the consumer's window in memory, simulated over the log: give --layout lru, "
                     "lru-bloom or bloom-exact with --layout-option capacity=N (a replay's own window is --via "
                     "memory:)");
  }
  if (options.flag != "--store" && window) {
    throw UsageError(fmt::format("{} memory: --layout {}: a window in memory cannot hold a replay's claims (it is "
                                 "empty after a restart, and a Bloom filter cannot release an id); claim in a durable "
                                 "store: {} redis://… or postgres://…",
                                 options.flag, options.layout.name, options.flag));
  }
  if (!window) {
    return;
  }
  core::check_window_options(options.layout);
  if (options.audit.ttl.source == core::TtlSource::Flag) {
    throw UsageError(fmt::format("--ttl {}: a window in memory has no TTL: it holds ids until the consumer restarts "
                                 "(its capacity says how many)",
                                 core::to_text(options.audit.ttl.span)));
  }
}

OpenedStore open_store(const PlacementOptions&, Context&, std::optional<std::int64_t>) {
  OpenedStore out;
  out.store = std::make_unique<core::WindowStore>();
  return out;
}

} // namespace

StoreFamily memory_family() {
  StoreFamily family;
  family.row = &placement::family_row(core::StoreUri::Kind::Memory);
  family.check_layout = check_layout;
  family.open_store = open_store;
  family.open_via = open_via;
  return family;
}

} // namespace dedupctl::commands
