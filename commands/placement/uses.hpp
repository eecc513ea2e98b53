#pragma once

// What each store kind supports: one row per kind, read in one place. A use a kind lacks is refused
// here, with one message naming the kind and the use, before anything is contacted. Pure (core only):
// the unit tier reads the table; family.hpp joins each row to the functions that open its kind.
#include "commands/pipeline/watch.hpp"
#include "core/store/store_uri.hpp"

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace dedupctl::commands::placement {

enum class StoreUse {
  Read,     // audit's and trace's --store: the records looked up per event
  Via,      // replay --via: a placement that claims and marks events
  Release,  // replay --repair-lost --via: the records of the lost events released
  Effects,  // --effects: the consumer's effects looked up per event
  Discover, // discover --store: which layout the store's keys or tables fit
  Inspect,  // check --live: the store's own settings
  Snapshot, // snapshot --store: the records exported to a file
  Watch,    // watch --store: read again at every interval
};
inline constexpr std::size_t k_store_uses = 8;
std::string_view use_name(StoreUse use);

struct FamilyRow {
  core::StoreUri::Kind kind; // named as core::store_kind_name says (the report's placement kind)
  // Per use, in StoreUse's order: "" where the kind supports it, else the refusal, a format whose {}
  // is the URI as given (its password redacted).
  std::array<std::string_view, k_store_uses> refusals;
  bool local = false;                      // read from this machine, opened before any server is contacted (file:)
  bool keyed_by_event_id = false;          // its records are found by the event id, not a key template (an inbox)
  std::string_view topology;               // what its topology line is called in the report's settings
  std::optional<WatchSystem> watch_system; // the gauges' system="…" label, when it can be watched

  bool supports(StoreUse use) const { return refusals[static_cast<std::size_t>(use)].empty(); }
};

const FamilyRow& family_row(core::StoreUri::Kind kind);
// Throws UsageError with the row's refusal when `uri`'s kind lacks `use`.
void require(const core::StoreUri& uri, StoreUse use);

} // namespace dedupctl::commands::placement
