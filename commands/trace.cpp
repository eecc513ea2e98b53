#include "commands/pipeline/trace.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/effects.hpp"
#include "commands/options.hpp"
#include "commands/pipeline/common.hpp"
#include "commands/placement/family.hpp"
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

int run(const TraceFlags& options, Context& context) {
  auto format = parse_output_format(context);
  TraceRequest request;
  request.fail_on = core::parse_fail_on(context.global.fail_on);
  request.fail_on_text = context.global.fail_on;
  request.identify = parse_identity(options.identity, context);
  request.ids = requested_ids(options);
  request.max_examples = options.examples;
  PlacementOptions placement = parse_placement(options.placement, context);
  request.key_template = placement.audit.key_template;
  request.consumer = options.placement.consumer;
  request.in_progress_values = placement.audit.policy.in_progress_values;
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
  const auto& family = commands::family(placement.uri.kind);
  bool file_store = family.row->local;
  OpenedStore store;
  if (file_store) {
    store = family.read(placement, context, std::nullopt);
  }
  OpenedSource opened = open_source(options.source, context);
  opened.info.payload_decoding = decoding_of(request.identify);
  std::optional<std::string> failure = opened.failure;
  if (!failure && !file_store) {
    store = family.read(placement, context, std::nullopt);
    failure = store.failure;
  }
  if (!failure) {
    now = store.snapshot_time.value_or(now);
    if (store.inbox) {
      // An inbox is keyed by the event id; its TTL is the cleanup job's retention.
      request.inbox = true;
      request.key_template = core::KeyTemplate::parse("{event_id}");
      try {
        request.placement.ttl = decide_inbox_ttl(*store.inbox, placement.inbox_retention, now, context);
      } catch (const UnreachableError& e) {
        failure = e.what();
      }
    }
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
  return deliver_report(report, opened, format, context);
}

} // namespace

CommandRunner register_trace(CLI::App& app, Context& context) {
  auto options = std::make_shared<TraceFlags>();
  auto* sub = app.add_subcommand("trace", "Follow event ids through the log and the placement: a timeline and a "
                                          "verdict");
  add_source_options(*sub, options->source);
  add_identity_options(*sub, options->identity);
  add_placement_options(*sub, options->placement);
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
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
