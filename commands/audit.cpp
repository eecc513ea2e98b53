#include "commands/pipeline/audit.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/effects.hpp"
#include "commands/options.hpp"
#include "commands/pipeline/common.hpp"
#include "commands/placement/family.hpp"
#include "commands/settings.hpp"
#include "commands/shard.hpp"
#include "commands/source.hpp"
#include "connectors/file/key_archive.hpp"
#include "connectors/kafka/kafka.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "core/audit/retention.hpp"
#include "core/check/inbox_rules.hpp"
#include "core/source/committed_offsets.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

struct AuditFlags {
  SourceFlags source;
  ShardFlags shard;
  IdentityFlags identity;
  PlacementFlags placement;
  EffectsFlags effects;
  std::string seek;
  std::string committed;
  std::string semantic_window = core::format_duration(core::k_default_semantic_window_ms); // --window
  std::size_t examples = 5;
};

// The inbox's TTL is the cleanup job's retention, counted from processed_at. Its schema and contents
// add findings of their own.
void prepare_inbox(core::InboxStore& inbox, const std::optional<core::Span>& declared, const AuditFlags& options,
                   AuditRequest& request, std::int64_t now, Context& context) {
  request.audit.ttl = decide_inbox_ttl(inbox, declared, now, context);
  request.placement.ttl = request.audit.ttl;
  request.store_settings.emplace_back("inbox lookup", inbox.lookup_method());
  request.audit.key_template = core::KeyTemplate::parse("{event_id}"); // an inbox is keyed by the event id
  const auto& p = options.placement;
  if (inbox.has_unique_constraint() == false) {
    request.placement_findings.push_back(
        core::inbox_without_unique_constraint(p.inbox.table, p.inbox.id_column, p.inbox.consumer_column));
  }
  if (p.consumer.empty()) {
    if (auto f = core::inbox_ids_shared(inbox.ids_under_several_consumers())) {
      request.placement_findings.push_back(std::move(*f));
    }
  }
}

// The audit's request from its flags, checked in the order they were before (the first bad one is
// named): identification, the analyzer's window, --seek, the placement (into `placement`) as the
// report names it, its retention until the broker is asked; --effects (into `effects`).
AuditRequest audit_request(const AuditFlags& options, Context& context, PlacementOptions& placement,
                           std::optional<EffectsOptions>& effects) {
  AuditRequest request;
  request.fail_on = core::parse_fail_on(context.global.fail_on);
  request.fail_on_text = context.global.fail_on;
  request.identify = parse_identity(options.identity, context);
  request.analyzer.semantic_window_ms = core::parse_duration(options.semantic_window, "--window");
  request.max_examples = options.examples;
  request.has_seek = !options.seek.empty();
  if (request.has_seek && options.source.group.empty()) {
    throw UsageError("--seek needs --group: the replay window is [seek, committed) of that group");
  }
  placement = parse_placement(options.placement, context);
  if (placement.audit.window.kind != core::WindowKind::None &&
      (!options.shard.digest.empty() || !options.shard.shard.empty())) {
    throw UsageError(fmt::format("--layout {} with --shard/--digest: a window is simulated in one pass over its "
                                 "partitions, which shards split; audit the range in one run",
                                 placement.layout.name));
  }
  request.audit = placement.audit;
  request.consumer = options.placement.consumer;
  request.placement = placement_info(placement);
  request.placement.retention = core::decide_retention(placement.audit.policy.retention, {}, nullptr,
                                                       placement.retention_origin); // until asked
  request.placement.ttl = placement.audit.ttl;
  effects = parse_effects(options.effects);
  if (effects) {
    if (!options.shard.digest.empty() || !options.shard.shard.empty()) {
      throw UsageError("--effects with --shard/--digest: a merge of shards does not carry the effects yet; audit "
                       "the range in one run");
    }
    request.audit.effects = true;
    request.audit.effects_source = "--effects " + describe_effects(*effects);
    request.effects_template = effects->key_template;
    request.placement.effects = effects->placement;
  }
  placement::require(placement.uri, placement::StoreUse::Read);
  return request;
}

// The topic's retention: --retention, or what the broker describes (a note where it is unknown).
void decide_retention(AuditRequest& request, const core::SourceInfo& info, const PlacementOptions& placement,
                      Context& context) {
  BrokerTopicConfigs broker(kafka_settings(context));
  auto decision =
      core::decide_retention(request.audit.policy.retention, info.topics,
                             info.kind == core::SourceKind::Kafka ? &broker : nullptr, placement.retention_origin);
  request.audit.policy.retention = decision.span;
  request.audit.policy.compacted = decision.compacted;
  request.placement.retention = decision;
  if (decision.source == core::RetentionSource::Unknown && !info.topics.empty()) {
    context.note(fmt::format("the retention of {} is unknown ({}); pass --retention to check the TTL against it",
                             info.topics.front(), broker.why(info.topics.front())));
  }
}

int run(const AuditFlags& options, Context& context) {
  auto format = parse_output_format(context);
  SourceFlags source = options.source;
  apply_shard_options(options.shard, source, context, true);
  PlacementOptions placement;
  std::optional<EffectsOptions> effects;
  AuditRequest request = audit_request(options, context, placement, effects);
  // Everything typed was valid: a snapshot file is opened before anything is contacted (a bad one is
  // exit 2; its records load beside the reading, a bad line among them is exit 2 at the end), then
  // the systems.
  std::int64_t now = context.now_ms();
  const auto& family = commands::family(placement.uri.kind);
  bool file_store = family.row->local;
  OpenedStore opened_store;
  if (file_store) {
    opened_store = family.read(placement, context, std::nullopt);
  }
  auto digest = open_shard_digest(options.shard, source);
  if (digest) {
    request.digest = digest->recorder();
  }
  connectors::file::AnalyzerArchives archives(context.global.verbose > 0);
  archives.attach(request.analyzer);
  OpenedSource opened = open_source(source, context, request.has_seek ? std::optional(options.seek) : std::nullopt,
                                    nullptr, options.committed);
  opened.info.payload_decoding = decoding_of(request.identify);
  std::optional<std::string> failure = opened.failure;
  if (!failure) {
    decide_retention(request, opened.info, placement, context);
  }
  if (!failure && !file_store) {
    opened_store = family.read(placement, context, static_cast<std::int64_t>(expected_events(opened.info)));
    failure = opened_store.failure;
  }
  if (!failure) {
    now = opened_store.snapshot_time.value_or(now);
    request.audit.dynamodb = opened_store.dynamodb;
    if (auto topology = opened_store.store->topology(); !topology.empty()) {
      request.store_settings.emplace_back(family.row->topology, topology);
    }
    if (opened_store.inbox) {
      try {
        prepare_inbox(*opened_store.inbox, placement.inbox_retention, options, request, now, context);
      } catch (const UnreachableError& e) {
        failure = e.what();
      }
    }
  }
  OpenedEffects opened_effects;
  if (!failure && effects) {
    opened_effects = open_effects(*effects, context, static_cast<std::int64_t>(expected_events(opened.info)), false,
                                  opened.file ? nullptr : &opened.plans);
    failure = opened_effects.failure;
    request.effects = opened_effects.store.get();
    request.store_settings.emplace_back("effects", describe_effects(*effects));
  }
  std::unique_ptr<core::DedupStore> store = std::move(opened_store.store);
  if (context.progress) {
    request.progress = [&context](std::int64_t events) { context.progress(fmt::format("audit: {} events", events)); };
  }
  reports::Report report;
  if (failure) {
    report = unreachable_report("audit", *failure, opened.info, context);
    report.placement = request.placement;
  } else {
    note_ranges(opened.info, context);
    AuditStageTimes times;
    if (context.global.verbose) {
      request.times = &times;
    }
    report = run_audit(request, *opened.source, *store, opened.info, now);
    archives.note(context.global.verbose > 0);
    if (request.times) {
      context.note("audit stages: " + times.describe());
    }
    if (request.has_seek && opened.info.kind == core::SourceKind::File && report.complete && report.source) {
      if (auto why = core::dump_partitions_without_offsets(*report.source, options.committed)) {
        throw UsageError(*why);
      }
    }
    if (opened_store.inbox && context.global.verbose) {
      context.note("inbox lookups: " + opened_store.inbox->lookup_stats());
    }
  }
  if (store) {
    store->ready(); // a snapshot's bad line is exit 2, whatever the source did
  }
  if (digest) {
    complete_report(report, opened, context);
    digest->finish(report, opened, context);
  }
  return deliver_report(report, opened, format, context);
}

} // namespace

CommandRunner register_audit(CLI::App& app, Context& context) {
  auto options = std::make_shared<AuditFlags>();
  auto* sub = app.add_subcommand("audit", "The log against a dedup placement: coverage, TTL gaps, collisions, replay "
                                          "risk of a seek");
  add_source_options(*sub, options->source);
  add_shard_options(*sub, options->shard);
  add_identity_options(*sub, options->identity);
  add_placement_options(*sub, options->placement);
  add_effects_options(*sub, options->effects);
  auto* audit = sub->add_option_group("Audit");
  audit->add_option("--seek", options->seek, "the reset being considered for --group: the window is [seek, committed)")
      ->type_name("SPEC");
  audit
      ->add_option("--committed", options->committed,
                   "the --group's committed offsets for a --seek on a kcat dump: the CSV of kafka-consumer-groups "
                   "--reset-offsets --to-current --dry-run --export")
      ->type_name("FILE");
  add_examples_option(*audit, options->examples);
  audit
      ->add_option("--window", options->semantic_window,
                   "how close in time two events must be to be semantic duplicates")
      ->type_name("DURATION");
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "audit";
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
