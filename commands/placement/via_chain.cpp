#include "commands/placement/via_chain.hpp"

#include "commands/placement/uses.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

bool window_layout(const PlacementFlags& flags) {
  return !flags.layout.empty() && core::find_layout(flags.layout).home == core::LayoutHome::Window;
}

bool bloom(const core::RecordLayout& layout) { return layout.shape == core::RecordShape::BloomMember; }

} // namespace

ViaChain parse_via_chain(const std::vector<PlacementFlags>& flags, bool repair_lost, const Context& context) {
  if (repair_lost) {
    throw UsageError("--repair-lost with --via repeated: a repair releases the consumer's records in one store; give "
                     "the one --via whose records it releases");
  }
  ViaChain chain;
  bool claiming = false;
  for (std::size_t t = 0; t < flags.size(); ++t) {
    std::string name = fmt::format("tier {} ({})", t + 1, core::parse_store_uri(flags[t].store, "--via").redacted());
    if (flags[t].store.starts_with("memory:")) {
      if (!window_layout(flags[t])) {
        throw UsageError(fmt::format("--via memory: in a chain is the consumer's window (give its --layout lru, "
                                     "lru-bloom or bloom-exact): a replay's own window ({}) holds nothing another "
                                     "process reads",
                                     name));
      }
      parse_placement(flags[t], context, "--store"); // its window options, checked as audit checks them
      chain.windows.push_back(name);
      continue;
    }
    PlacementOptions tier = parse_placement(flags[t], context, "--via");
    if (bloom(tier.layout)) {
      throw UsageError(fmt::format("--layout {} in --via's {}: a Bloom filter's \"maybe\" is no record a replay can "
                                   "skip by (an event it never saw would be dropped), and an id added to it cannot "
                                   "be released; leave the filter out of --via, or audit it",
                                   tier.layout.name, name));
    }
    if (!claiming) {
      claiming = true;
      chain.claims = t;
      chain.claims_name = name;
      continue;
    }
    placement::require(tier.uri, placement::StoreUse::Read);
    chain.readers.push_back(std::move(tier));
    chain.reader_names.push_back(name);
  }
  if (!claiming) {
    throw UsageError("--via: every tier is a window in memory, which holds nothing across a replay and cannot hold its "
                     "claims; add the consumer's durable tier (redis://…, postgres://…)");
  }
  return chain;
}

std::vector<core::KeyTemplate> reader_templates(const ViaChain& chain) {
  std::vector<core::KeyTemplate> out;
  for (const auto& reader : chain.readers) {
    out.push_back(placement::family_row(reader.uri.kind).keyed_by_event_id ? core::KeyTemplate::parse("{event_id}")
                                                                           : reader.audit.key_template);
  }
  return out;
}

std::unique_ptr<core::ReplayPlacement> open_via_chain(const ViaChain& chain, core::ReplayPlacement& claims,
                                                      std::vector<OpenedStore>& stores, Context& context) {
  std::vector<core::ChainPlacement::Reader> readers;
  stores.clear();
  stores.reserve(chain.readers.size());
  for (std::size_t r = 0; r < chain.readers.size(); ++r) {
    const auto& tier = chain.readers[r];
    stores.push_back(family(tier.uri.kind).read(tier, context, std::nullopt));
    if (stores.back().failure) {
      throw UnreachableError(*stores.back().failure);
    }
    auto markers = tier.audit.policy.in_progress_values;
    auto layout = tier.layout;
    auto now = context.now_ms;
    readers.push_back(
        {chain.reader_names[r], stores.back().store.get(), [markers, layout, now](const core::RecordState& record) {
           return core::judge_record(layout, record, markers, now());
         }});
  }
  for (const auto& window : chain.windows) {
    context.note(fmt::format("replay: {} is a window in memory, empty in any new process: not asked", window));
  }
  return std::make_unique<core::ChainPlacement>(claims, chain.claims_name, std::move(readers));
}

} // namespace dedupctl::commands
