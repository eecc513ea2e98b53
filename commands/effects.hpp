#pragma once

#include "commands/context.hpp"
#include "core/identity/key_template.hpp"
#include "core/store/effect_store.hpp"
#include "core/store/store_uri.hpp"
#include "reports/report.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>

// --effects: where the consumer's effects can be looked up by event id, beside its dedup records.
namespace dedupctl::commands {

struct EffectsFlags {
  std::string uri; // --effects
  std::string table;
  std::string column = "event_id";
  std::string key_template;
};

void add_effects_options(CLI::App& app, EffectsFlags& flags);

// What the flags say, checked before anything is contacted (UsageError naming the flag).
struct EffectsOptions {
  core::StoreUri uri;
  core::KeyTemplate key_template = core::KeyTemplate::parse("{event_id}"); // what is looked up per event
  reports::EffectsPlacement placement;
};
std::optional<EffectsOptions> parse_effects(const EffectsFlags& flags);

// Connects (a table that does not exist, or lacks the column, is a UsageError listing its columns);
// an unreachable store is returned in `failure`.
struct OpenedEffects {
  std::unique_ptr<core::EffectStore> store;
  std::optional<std::string> failure;
};
// `batched`: a table is looked up batch by batch, never loaded once (watch: rows come and go).
OpenedEffects open_effects(const EffectsOptions& options, Context& context, std::optional<std::int64_t> expected_events,
                           bool batched = false);

} // namespace dedupctl::commands
