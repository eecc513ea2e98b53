#pragma once

#include "commands/context.hpp"
#include "core/identity/field_spec.hpp"
#include "core/identity/key_template.hpp"
#include "core/source/partition.hpp"
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
  std::string id = "header:event_id"; // kafka: how an output record names its event
  std::string allowance = "5m";       // kafka: how much earlier than its event an effect may be stamped
};

void add_effects_options(CLI::App& app, EffectsFlags& flags);

// What the flags say, checked before anything is contacted (UsageError naming the flag).
struct EffectsOptions {
  core::StoreUri uri;
  core::KeyTemplate key_template = core::KeyTemplate::parse("{event_id}"); // what is looked up per event
  reports::EffectsPlacement placement;
  std::vector<core::FieldSpec> id; // kafka: --effects-id
  std::string id_text;
  std::int64_t allowance_ms = 0; // kafka: --effects-allowance
};
std::optional<EffectsOptions> parse_effects(const EffectsFlags& flags);
// Where the effects are read, as the settings and the findings name it: "postgres://… (charges.event_id)".
std::string describe_effects(const EffectsOptions& options);

// Connects (a table that does not exist, or lacks the column, is a UsageError listing its columns);
// an unreachable store is returned in `failure`.
struct OpenedEffects {
  std::unique_ptr<core::EffectStore> store;
  std::optional<std::string> failure;
};
// `batched` (watch): a table is looked up batch by batch, never loaded once, and an output topic
// read on from where it was at each lookup (effects come and go while it runs). `plans`: the audited
// range, from whose earliest timestamp an output topic (kafka:) is read; null for a kcat dump, which
// cannot read effects from a topic (UsageError).
OpenedEffects open_effects(const EffectsOptions& options, Context& context, std::optional<std::int64_t> expected_events,
                           bool batched = false, const std::vector<core::PartitionPlan>* plans = nullptr);

} // namespace dedupctl::commands
