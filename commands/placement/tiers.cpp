#include "commands/placement/tiers.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <map>
#include <set>
#include <string_view>
#include <utility>

namespace dedupctl::commands {

namespace {

using Setter = void (*)(PlacementFlags&, const std::string&);

// The flags a tier has of its own, by their long names.
const std::map<std::string_view, Setter>& tier_setters() {
  static const std::map<std::string_view, Setter> setters = {
      {"--store", [](PlacementFlags& f, const std::string& v) { f.store = v; }},
      {"--via", [](PlacementFlags& f, const std::string& v) { f.store = v; }}, // replay's --store
      {"--key-template", [](PlacementFlags& f, const std::string& v) { f.key_template = v; }},
      {"--layout", [](PlacementFlags& f, const std::string& v) { f.layout = v; }},
      {"--key-prefix", [](PlacementFlags& f, const std::string& v) { f.key_prefix = v; }},
      {"--collection", [](PlacementFlags& f, const std::string& v) { f.collection = v; }},
      {"--layout-option", [](PlacementFlags& f, const std::string& v) { f.layout_options.push_back(v); }},
      {"--ttl", [](PlacementFlags& f, const std::string& v) { f.ttl = v; }},
      {"--in-progress-value", [](PlacementFlags& f, const std::string& v) { f.in_progress_values.push_back(v); }},
      {"--lease", [](PlacementFlags& f, const std::string& v) { f.lease = v; }},
      {"--inbox-table", [](PlacementFlags& f, const std::string& v) { f.inbox.table = v; }},
      {"--inbox-id-column", [](PlacementFlags& f, const std::string& v) { f.inbox.id_column = v; }},
      {"--inbox-consumer-column", [](PlacementFlags& f, const std::string& v) { f.inbox.consumer_column = v; }},
      {"--inbox-time-column", [](PlacementFlags& f, const std::string& v) { f.inbox.time_column = v; }},
      {"--inbox-status-column", [](PlacementFlags& f, const std::string& v) { f.inbox.status_column = v; }},
      {"--inbox-retention", [](PlacementFlags& f, const std::string& v) { f.inbox_retention = v; }},
      {"--inbox-lookup", [](PlacementFlags& f, const std::string& v) { f.inbox_lookup = v; }},
  };
  return setters;
}

// A tier before its own flags: the defaults, with the whole placement's flags as parsed.
PlacementFlags fresh_tier(const PlacementFlags& parsed) {
  PlacementFlags tier;
  tier.in_progress_values.clear(); // given values replace the defaults, as for one store (below)
  tier.consumer = parsed.consumer;
  tier.retention = parsed.retention;
  tier.max_lag = parsed.max_lag;
  tier.side_effects = parsed.side_effects;
  return tier;
}

// A tier's flag that a config file (or the environment) set is not in the command line's order, so it
// belongs to no tier of a chain: refused, never silently dropped (a Redis tier's TTL read as none would
// call lapsed keys covered).
void refuse_tier_flags_from_elsewhere(const CLI::App& group, std::map<const CLI::Option*, std::size_t>& seen,
                                      std::size_t tiers, std::string_view store_flag) {
  for (const CLI::Option* option : group.get_options()) {
    std::string name = option->get_name();
    if (tier_setters().contains(name) && option->results().size() > seen[option]) {
      throw UsageError(fmt::format("{} is set by the config file, and the placement has {} tiers: it belongs to one "
                                   "of them; give {} on the command line, after the {} of its tier",
                                   name, tiers, name, store_flag));
    }
  }
}

} // namespace

bool tier_flag(std::string_view name) { return tier_setters().contains(name); }

void refuse_windows_beyond_one(std::size_t windows) {
  if (windows > 1) {
    throw UsageError("--store memory: given twice: a consumer keeps one window in memory; give one --store memory: "
                     "with its --layout");
  }
}

std::vector<PlacementFlags> tier_flags(const CLI::App& command, const PlacementFlags& parsed) {
  const CLI::App* group = command.get_option_group("Placement"); // add_placement_options's
  std::vector<PlacementFlags> tiers{fresh_tier(parsed)};
  std::vector<std::set<std::string_view>> given(1);
  std::map<const CLI::Option*, std::size_t> occurrence;
  bool first_store = true;
  for (const CLI::Option* option : group->parse_order()) {
    std::string name = option->get_name();
    auto setter = tier_setters().find(name);
    std::size_t k = occurrence[option]++;
    if (setter == tier_setters().end() || k >= option->results().size()) {
      continue; // the whole placement's: every tier has it
    }
    bool store = name == "--store" || name == "--via";
    if (store && !std::exchange(first_store, false)) {
      tiers.push_back(fresh_tier(parsed));
      given.emplace_back();
    }
    if (name != "--layout-option" && name != "--in-progress-value" && !given.back().insert(setter->first).second) {
      throw UsageError(fmt::format("{} given twice for tier {}: a tier takes it once, after its {}", name, tiers.size(),
                                   command.get_option_no_throw("--via") ? "--via" : "--store"));
    }
    setter->second(tiers.back(), option->results()[k]);
  }
  if (tiers.size() == 1) {
    return {parsed}; // with what a config file or the environment set
  }
  refuse_tier_flags_from_elsewhere(*group, occurrence, tiers.size(),
                                   command.get_option_no_throw("--via") ? "--via" : "--store");
  for (auto& tier : tiers) {
    if (tier.in_progress_values.empty()) {
      tier.in_progress_values = PlacementFlags().in_progress_values;
    }
  }
  return tiers;
}

} // namespace dedupctl::commands
