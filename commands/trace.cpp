#include "commands/pipeline/trace.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/effects.hpp"
#include "commands/options.hpp"
#include "commands/pipeline/common.hpp"
#include "commands/placement/family.hpp"
#include "commands/placement/tiers.hpp"
#include "commands/placement/uses.hpp"
#include "commands/source.hpp"
#include "connectors/file/text.hpp"
#include "core/audit/retention.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

struct TraceFlags {
  SourceFlags source;
  IdentityFlags identity;
  PlacementFlags placement;
  EffectsFlags effects;
  std::vector<std::string> event_ids;
  std::string ids_from;
  std::size_t examples = 5;
};

// --event-id values, then --ids-from's lines (one id a line; blank lines and # comments skipped).
std::vector<std::string> requested_ids(const TraceFlags& options) {
  std::vector<std::string> ids = options.event_ids;
  if (!options.ids_from.empty()) {
    std::string text = connectors::file::read_text_file(options.ids_from, "--ids-from");
    std::size_t pos = 0;
    while (pos < text.size()) {
      auto end = text.find('\n', pos);
      std::string line = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
      pos = end == std::string::npos ? text.size() : end + 1;
      if (!line.empty() && line.back() == '\r') {
        line.pop_back();
      }
      if (line.find_first_not_of(" \t") == std::string::npos || line.front() == '#') {
        continue;
      }
      ids.push_back(line);
    }
  }
  if (ids.empty()) {
    throw UsageError("trace needs at least one --event-id ID or an --ids-from FILE with one id a line");
  }
  return ids;
}

// A tier after the first (--store repeated): its flags parsed, its store once opened.
struct TraceTier {
  PlacementOptions options;
  OpenedStore opened;
};

std::vector<TraceTier> parse_more_tiers(const std::vector<PlacementFlags>& flags, const PlacementOptions& first,
                                        Context& context) {
  std::vector<TraceTier> tiers;
  std::size_t windows = first.audit.window.kind != core::WindowKind::None ? 1 : 0;
  for (std::size_t t = 1; t < flags.size(); ++t) {
    tiers.push_back(TraceTier{parse_placement(flags[t], context), {}});
    refuse_version_guard(tiers.back().options, "a chain of tiers");
    refuse_window_store(tiers.back().options, "trace");
    placement::require(tiers.back().options.uri, placement::StoreUse::Read);
    windows += tiers.back().options.audit.window.kind != core::WindowKind::None ? 1 : 0;
  }
  refuse_windows_beyond_one(windows);
  return tiers;
}

// Opens the tiers' stores of one kind, files (`local`) before the source and the others after, and an
// inbox tier's TTL; the first failure is returned.
std::optional<std::string> open_more_tiers(std::vector<TraceTier>& tiers, bool local, TraceRequest& request,
                                           std::int64_t now, Context& context) {
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    auto& tier = tiers[t];
    if (commands::family(tier.options.uri.kind).row->local != local) {
      continue;
    }
    tier.opened = commands::family(tier.options.uri.kind).read(tier.options, context, std::nullopt);
    if (tier.opened.failure) {
      return tier.opened.failure;
    }
  }
  if (local) {
    return std::nullopt;
  }
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    auto& tier = tiers[t];
    TraceTierRequest more;
    more.name = fmt::format("tier {} ({})", t + 2, placement_info(tier.options).store);
    more.store = tier.opened.store.get();
    more.key_template = tier.options.audit.key_template;
    more.in_progress_values = tier.options.audit.policy.in_progress_values;
    more.orphans_reapplied = tier.options.audit.policy.orphans_reapplied;
    more.layout = tier.options.layout;
    more.ttl = tier.options.audit.ttl.span;
    if (tier.opened.inbox) {
      more.inbox = true;
      more.key_template = core::KeyTemplate::parse("{event_id}");
      try {
        more.ttl = decide_inbox_ttl(*tier.opened.inbox, tier.options.inbox_retention, now, context).span;
      } catch (const UnreachableError& e) {
        return e.what();
      }
    }
    request.more_tiers.push_back(std::move(more));
  }
  return std::nullopt;
}

// The first tier's store opened, and what it says of itself (its time, an inbox's TTL).
std::optional<std::string> open_first_tier(const PlacementOptions& placement, OpenedStore& store, TraceRequest& request,
                                           std::int64_t& now, Context& context) {
  const auto& family = commands::family(placement.uri.kind);
  if (!family.row->local) {
    store = family.read(placement, context, std::nullopt);
    if (store.failure) {
      return store.failure;
    }
  }
  now = store.snapshot_time.value_or(now);
  if (store.inbox) {
    // An inbox is keyed by the event id; its TTL is the cleanup job's retention.
    request.inbox = true;
    request.key_template = core::KeyTemplate::parse("{event_id}");
    try {
      request.placement.ttl = decide_inbox_ttl(*store.inbox, placement.inbox_retention, now, context);
    } catch (const UnreachableError& e) {
      return e.what();
    }
  }
  return std::nullopt;
}

int run(const TraceFlags& options, const std::vector<PlacementFlags>& flags, Context& context) {
  auto format = parse_output_format(context);
  TraceRequest request;
  request.fail_on = core::parse_fail_on(context.global.fail_on);
  request.fail_on_text = context.global.fail_on;
  request.identify = parse_identity(options.identity, context);
  request.versions = parse_version_options(options.identity, false);
  request.ids = requested_ids(options);
  request.max_examples = options.examples;
  PlacementOptions placement = parse_placement(flags.front(), context);
  refuse_window_store(placement, "trace");
  if (placement.layout.version_guard()) {
    if (placement.layout.projection.states || flags.size() > 1) {
      refuse_version_guard(placement, placement.layout.projection.states ? "trace" : "a chain of tiers");
    }
    placement.version_order = guard_order(options.identity, placement, "--layout", false);
    request.versions = placement.version_order;
    request.version_guard = true;
  }
  std::vector<TraceTier> more = parse_more_tiers(flags, placement, context);
  request.key_template = placement.audit.key_template;
  request.consumer = options.placement.consumer;
  request.in_progress_values = placement.audit.policy.in_progress_values;
  request.orphans_reapplied = placement.audit.policy.orphans_reapplied;
  request.placement = placement_info(placement);
  request.placement.ttl = placement.audit.ttl;
  request.layout = placement.layout;
  request.placement.consumer = request.consumer;
  auto effects_options = parse_effects(options.effects);
  if (effects_options) {
    request.effects_template = effects_options->key_template;
    request.placement.effects = effects_options->placement;
  }
  std::int64_t now = context.now_ms();
  OpenedStore store;
  if (commands::family(placement.uri.kind).row->local) {
    store = commands::family(placement.uri.kind).read(placement, context, std::nullopt);
  }
  std::optional<std::string> failure = open_more_tiers(more, true, request, now, context);
  OpenedSource opened = open_source(options.source, context);
  opened.info.payload_decoding = decoding_of(request.identify);
  failure = failure ? failure : opened.failure;
  if (!failure) {
    failure = open_first_tier(placement, store, request, now, context);
  }
  if (!failure) {
    failure = open_more_tiers(more, false, request, now, context);
  }
  OpenedEffects effects;
  if (!failure && effects_options) {
    effects = open_effects(*effects_options, context, std::nullopt, false, opened.file ? nullptr : &opened.plans);
    failure = effects.failure;
    request.effects = effects.store.get();
  }
  request.placement.key_template = request.key_template.text();
  reports::Report report;
  if (failure) {
    report = unreachable_report("trace", *failure, opened.info, context);
    report.placement = request.placement;
  } else {
    note_ranges(opened.info, context);
    report = run_trace(request, *opened.source, *store.store, opened.info, now);
  }
  if (store.store) {
    store.store->ready(); // a snapshot's bad line is exit 2, whatever the source did
  }
  for (auto& tier : more) {
    if (tier.opened.store) {
      tier.opened.store->ready();
    }
  }
  return deliver_report(report, opened, format, context);
}

} // namespace

CommandRunner register_trace(CLI::App& app, Context& context) {
  auto options = std::make_shared<TraceFlags>();
  auto* sub = app.add_subcommand("trace", "Follow event ids through the log and the placement: a timeline and a "
                                          "verdict");
  add_source_options(*sub, options->source);
  add_identity_options(*sub, options->identity);
  add_version_options(*sub, options->identity);
  add_placement_options(*sub, options->placement, PlacementUse::Tiers);
  add_effects_options(*sub, options->effects);
  auto* trace = sub->add_option_group("Trace");
  trace->add_option("--event-id", options->event_ids, "an event id to trace (repeatable)")->type_name("ID");
  trace->add_option("--ids-from", options->ids_from, "a file of event ids, one a line")->type_name("FILE");
  add_examples_option(*trace, options->examples);
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "trace";
    return run(*options, tier_flags(*sub, options->placement), context);
  };
}

} // namespace dedupctl::commands
