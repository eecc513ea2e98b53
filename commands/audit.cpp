#include "commands/pipeline/audit.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/effects.hpp"
#include "commands/options.hpp"
#include "commands/pipeline/common.hpp"
#include "commands/placement/family.hpp"
#include "commands/placement/tiers.hpp"
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
void prepare_inbox(core::InboxStore& inbox, const std::optional<core::Span>& declared, const PlacementFlags& p,
                   AuditTier& tier, AuditRequest& request, std::int64_t now, Context& context) {
  tier.audit.ttl = decide_inbox_ttl(inbox, declared, now, context);
  tier.placement.ttl = tier.audit.ttl;
  request.store_settings.emplace_back("inbox lookup", inbox.lookup_method());
  tier.audit.key_template = core::KeyTemplate::parse("{event_id}"); // an inbox is keyed by the event id
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
AuditRequest audit_request(const AuditFlags& options, const PlacementFlags& first, Context& context,
                           PlacementOptions& placement, std::optional<EffectsOptions>& effects) {
  AuditRequest request;
  request.fail_on = core::parse_fail_on(context.global.fail_on);
  request.fail_on_text = context.global.fail_on;
  request.identify = parse_identity(options.identity, context);
  request.analyzer.semantic_window_ms = core::parse_duration(options.semantic_window, "--window");
  request.analyzer.versions =
      parse_version_options(options.identity, !options.shard.digest.empty() || !options.shard.shard.empty());
  request.max_examples = options.examples;
  request.has_seek = !options.seek.empty();
  if (request.has_seek && options.source.group.empty()) {
    throw UsageError("--seek needs --group: the replay window is [seek, committed) of that group");
  }
  placement = parse_placement(first, context);
  if (placement.layout.version_guard()) {
    placement.version_order = guard_order(options.identity, placement, "--layout",
                                          !options.shard.digest.empty() || !options.shard.shard.empty());
    request.analyzer.versions = placement.version_order;
    request.analyzer.transitions = placement.transitions;
  }
  if ((placement.audit.window.kind != core::WindowKind::None || placement.layout.home == core::LayoutHome::Changelog) &&
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

// A tier of the placement (one, or a chain: --store repeated): its flags parsed, and its store once opened.
struct PlacementTier {
  PlacementOptions options;
  OpenedStore opened;
  AuditTier audit; // its analyzer's options and the report's entry, an inbox's TTL once asked
};

// The tiers after the first: each parsed as the first was (UsageError naming the bad flag); what a
// chain cannot be is refused before anything is contacted.
void parse_tiers(const AuditFlags& options, const std::vector<PlacementFlags>& flags, std::vector<PlacementTier>& tiers,
                 Context& context) {
  if (flags.size() > 1 && (!options.shard.digest.empty() || !options.shard.shard.empty())) {
    throw UsageError("--store repeated with --shard/--digest: a merge of shards carries one placement; audit the "
                     "tiers in one run");
  }
  auto refuse_in_chain = [](const PlacementOptions& tier) {
    refuse_version_guard(tier, "a chain of tiers");
    if (tier.layout.home == core::LayoutHome::Changelog) {
      throw UsageError(fmt::format("--store {} in a chain of tiers: a Kafka Streams store is the application's one "
                                   "placement; audit it alone",
                                   tier.uri.redacted()));
    }
  };
  if (flags.size() > 1) {
    refuse_in_chain(tiers.front().options);
  }
  for (std::size_t t = 1; t < flags.size(); ++t) {
    tiers.push_back(PlacementTier{parse_placement(flags[t], context), {}, {}});
    refuse_in_chain(tiers.back().options);
    placement::require(tiers.back().options.uri, placement::StoreUse::Read);
  }
  std::size_t windows = 0;
  for (const auto& tier : tiers) {
    windows += tier.options.audit.window.kind != core::WindowKind::None ? 1 : 0;
  }
  refuse_windows_beyond_one(windows);
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    auto& tier = tiers[t].audit;
    tier.audit = tiers[t].options.audit;
    tier.placement = placement_info(tiers[t].options);
    tier.placement.ttl = tier.audit.ttl;
    tier.tier.survives_restart = tier.audit.window.kind == core::WindowKind::None;
    tier.tier.name = fmt::format("tier {} ({})", t + 1, tier.placement.store);
  }
}

// Opens the tiers' stores of one kind: files (`local`), before the source; the others once it is
// resolved, and then what each says of itself (its time, topology, an inbox's TTL). A store that
// cannot be reached is the failure returned.
std::optional<std::string> open_tiers(std::vector<PlacementTier>& tiers, bool local,
                                      const std::vector<PlacementFlags>& flags, AuditRequest& request,
                                      std::optional<std::int64_t> expected, std::int64_t& now, Context& context) {
  for (auto& tier : tiers) {
    if (commands::family(tier.options.uri.kind).row->local == local) {
      tier.opened =
          commands::family(tier.options.uri.kind).read(tier.options, context, local ? std::nullopt : expected);
      if (tier.opened.failure) {
        return tier.opened.failure;
      }
    }
  }
  if (local) {
    return std::nullopt;
  }
  bool timed = false; // a snapshot's time is the time its records are read at: the first one's
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    auto& tier = tiers[t];
    if (!timed && tier.opened.snapshot_time) {
      now = *tier.opened.snapshot_time;
      timed = true;
    }
    tier.audit.audit.dynamodb = tier.opened.dynamodb;
    if (tier.opened.ttl) { // a Kafka Streams store's retention
      tier.audit.audit.ttl = *tier.opened.ttl;
      tier.audit.placement.ttl = *tier.opened.ttl;
    }
    if (tier.opened.changelog) {
      request.window_store = tier.opened.reading;
      request.changelog = tier.opened.changelog;
    }
    request.store_settings.insert(request.store_settings.end(), tier.opened.settings.begin(),
                                  tier.opened.settings.end());
    if (auto topology = tier.opened.store->topology(); !topology.empty()) {
      request.store_settings.emplace_back(commands::family(tier.options.uri.kind).row->topology, topology);
    }
    if (tier.opened.inbox) {
      try {
        prepare_inbox(*tier.opened.inbox, tier.options.inbox_retention, flags[t], tier.audit, request, now, context);
      } catch (const UnreachableError& e) {
        return e.what();
      }
    }
    tier.audit.store = tier.opened.store.get();
  }
  return std::nullopt;
}

// One tier: the request is its own. A chain: each tier is the request's, and the request's options are
// the chain's (docs/windows.md "Tiers").
void place_tiers(AuditRequest& request, std::vector<PlacementTier>& tiers) {
  if (tiers.size() == 1) {
    request.audit.ttl = tiers[0].audit.audit.ttl;
    request.audit.key_template = tiers[0].audit.audit.key_template;
    request.audit.dynamodb = tiers[0].audit.audit.dynamodb;
    request.placement.ttl = tiers[0].audit.placement.ttl;
    return;
  }
  core::AuditOptions chain = request.audit;                    // the first tier's, with --effects and --side-effects
  chain.key_template = core::KeyTemplate::parse("{event_id}"); // each tier has its own; its keys are its own
  chain.check_collisions = false;                              // each tier's analyzer looks for them
  chain.bloom_filter = false;
  chain.collection.clear();
  chain.dynamodb = false;
  chain.window = {};
  chain.policy.orphans_reapplied = false; // an orphan its library takes over reaches the chain as expired
  std::vector<core::TtlDecision> ttls;
  std::vector<core::Tier> chained;
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    const auto& tier = tiers[t].audit;
    if (!tier.tier.survives_restart) {
      chain.window = tier.audit.window;
      request.window_tier = t;
    }
    ttls.push_back(tier.audit.ttl);
    chained.push_back(tier.tier);
    request.tiers.push_back(tier);
  }
  chain.ttl = core::TierChain::chain_ttl(ttls, chained);
  request.audit = chain;
  request.placement.ttl = chain.ttl;
}

int run(const AuditFlags& options, const std::vector<PlacementFlags>& flags, Context& context) {
  auto format = parse_output_format(context);
  SourceFlags source = options.source;
  apply_shard_options(options.shard, source, context, true);
  std::vector<PlacementTier> tiers(1);
  std::optional<EffectsOptions> effects;
  AuditRequest request = audit_request(options, flags.front(), context, tiers.front().options, effects);
  parse_tiers(options, flags, tiers, context);
  const PlacementOptions& placement = tiers.front().options;
  // Everything typed was valid: a snapshot file is opened before anything is contacted (a bad one is
  // exit 2; its records load beside the reading, a bad line among them is exit 2 at the end), then
  // the systems.
  std::int64_t now = context.now_ms();
  std::optional<std::string> failure = open_tiers(tiers, true, flags, request, std::nullopt, now, context);
  auto digest = open_shard_digest(options.shard, source);
  if (digest) {
    request.digest = digest->recorder();
  }
  connectors::file::AnalyzerArchives archives(context.global.verbose > 0);
  archives.attach(request.analyzer);
  OpenedSource opened = open_source(source, context, request.has_seek ? std::optional(options.seek) : std::nullopt,
                                    nullptr, options.committed);
  opened.info.payload_decoding = decoding_of(request.identify);
  failure = failure ? failure : opened.failure;
  if (!failure) {
    decide_retention(request, opened.info, placement, context);
    failure =
        open_tiers(tiers, false, flags, request, static_cast<std::int64_t>(expected_events(opened.info)), now, context);
  }
  if (!failure) {
    place_tiers(request, tiers);
  }
  OpenedEffects opened_effects;
  if (!failure && effects) {
    opened_effects = open_effects(*effects, context, static_cast<std::int64_t>(expected_events(opened.info)), false,
                                  opened.file ? nullptr : &opened.plans);
    failure = opened_effects.failure;
    request.effects = opened_effects.store.get();
    request.store_settings.emplace_back("effects", describe_effects(*effects));
  }
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
    report = run_audit(request, *opened.source, *tiers.front().opened.store, opened.info, now);
    archives.note(context.global.verbose > 0);
    if (request.times) {
      context.note("audit stages: " + times.describe());
    }
    if (request.has_seek && opened.info.kind == core::SourceKind::File && report.complete && report.source) {
      if (auto why = core::dump_partitions_without_offsets(*report.source, options.committed)) {
        throw UsageError(*why);
      }
    }
    for (const auto& tier : tiers) {
      if (tier.opened.inbox && context.global.verbose) {
        context.note("inbox lookups: " + tier.opened.inbox->lookup_stats());
      }
    }
  }
  for (auto& tier : tiers) {
    if (tier.opened.store) {
      tier.opened.store->ready(); // a snapshot's bad line is exit 2, whatever the source did
    }
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
  add_version_options(*sub, options->identity);
  add_placement_options(*sub, options->placement, PlacementUse::Tiers);
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
    return run(*options, tier_flags(*sub, options->placement), context);
  };
}

} // namespace dedupctl::commands
