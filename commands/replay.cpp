#include "commands/pipeline/replay.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/effects.hpp"
#include "commands/options.hpp"
#include "commands/pipeline/common.hpp"
#include "commands/placement/family.hpp"
#include "commands/placement/tiers.hpp"
#include "commands/placement/via_chain.hpp"
#include "commands/replay_guard.hpp"
#include "commands/settings.hpp"
#include "commands/source.hpp"
#include "connectors/file/key_archive.hpp"
#include "connectors/file/replay_files.hpp"
#include "connectors/file/replay_sink.hpp"
#include "connectors/kafka/kafka.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/redis/redis.hpp"
#include "core/audit/retention.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <unistd.h>

namespace dedupctl::commands {

namespace {

struct ReplayFlags {
  SourceFlags source;
  IdentityFlags identity;
  PlacementFlags placement;
  std::string sink;
  bool execute = false;
  bool dry_run = false;
  std::string checkpoint;
  double max_rate = 0;
  std::string decisions;
  bool allow_same_topic = false;
  bool no_dedup = false;
  std::size_t memory_window = 1'000'000;
  std::size_t examples = 5;
  std::size_t batch = 5000;
  bool repair_lost = false;
  EffectsFlags effects;
};

struct SinkSpec {
  enum class Kind { None, Kafka, File } kind = Kind::None;
  std::string target;
};

SinkSpec parse_sink(const std::string& text) {
  if (text.empty()) {
    return {};
  }
  if (text.starts_with("kafka:") && text.size() > 6) {
    return {SinkSpec::Kind::Kafka, text.substr(6)};
  }
  if (text.starts_with("file:") && text.size() > 5) {
    return {SinkSpec::Kind::File, text.substr(5)};
  }
  throw UsageError(fmt::format("--sink {}: expected kafka:TOPIC or file:PATH", text));
}

// The decisions file (--decisions) and, for a run, the checkpoint file (--checkpoint); either may
// be absent.
class FileJournal final : public ReplayJournal {
public:
  FileJournal(connectors::file::DecisionLog& decisions, std::string checkpoint)
      : m_decisions(decisions), m_checkpoint(std::move(checkpoint)) {}
  void decide(const core::DecisionRecord& record) override {
    if (m_decisions.open()) {
      m_decisions.write(record);
    }
  }
  void flush_decisions() override {
    if (m_decisions.open()) {
      m_decisions.flush();
    }
  }
  bool keeps_checkpoints() const override { return !m_checkpoint.empty(); }
  void checkpoint(const core::Checkpoint& checkpoint) override {
    connectors::file::write_checkpoint(m_checkpoint, checkpoint);
  }

private:
  connectors::file::DecisionLog& m_decisions;
  std::string m_checkpoint;
};

// The flags that contradict each other or the range, checked before anything is contacted.
void check_flags(const ReplayFlags& options, const SinkSpec& sink_spec, const PlacementOptions& placement) {
  bool has_via = !options.placement.store.empty();
  if (has_via && options.no_dedup) {
    throw UsageError("--via and --no-dedup contradict each other: pick one");
  }
  if (options.execute && !has_via && !options.no_dedup) {
    throw UsageError("--execute without --via would publish every event again, duplicates included; route it "
                     "through the consumer's placement with --via, or say --no-dedup explicitly");
  }
  if (options.execute && sink_spec.kind == SinkSpec::Kind::None) {
    throw UsageError("--execute needs --sink kafka:TOPIC or --sink file:PATH");
  }
  if (!options.execute && !has_via && !options.no_dedup) {
    throw UsageError("a replay plan needs --via (the placement it would route through) or --no-dedup");
  }
  if (has_via) {
    placement::require(placement.uri, placement::StoreUse::Via);
  }
  // A repair publishes only the lost events, which the consumer is to read again from its own topic.
  if (sink_spec.kind == SinkSpec::Kind::Kafka && !options.allow_same_topic && !options.repair_lost) {
    for (const auto& topic : options.source.topics) {
      if (topic == sink_spec.target) {
        throw UsageError(fmt::format("--sink kafka:{} is the topic being read: the replay would feed on itself and the "
                                     "consumers would see every event twice; pass --allow-same-topic if you mean it",
                                     topic));
      }
    }
  }
  // A repair writes no record: the consumer writes its own when it applies the event; nor does a
  // replay through a version guard, whose projection the consumer writes.
  if (has_via && !placement.layout.version_guard()) {
    family(placement.uri.kind).check_records(placement, options.execute && !options.repair_lost);
  }
  if (options.max_rate < 0) {
    throw UsageError("--max-rate must be a positive number of events per second");
  }
}

// --repair-lost: which flags it needs, and the placements whose records it can release; --effects
// is what it reads. Into `request` on success.
std::optional<EffectsOptions> check_repair(const ReplayFlags& options, const PlacementOptions& placement,
                                           ReplayRequest& request) {
  auto effects = parse_effects(options.effects);
  if (!options.repair_lost) {
    if (effects) {
      throw UsageError("--effects on replay is read by --repair-lost (which republishes the lost events); for what "
                       "a seek would re-apply, applied or not, run audit --effects");
    }
    return std::nullopt;
  }
  if (!effects) {
    throw UsageError("--repair-lost needs --effects URI: where the consumer's effect of each event can be looked "
                     "up, to tell the lost events (marked processed, effect absent)");
  }
  if (options.no_dedup || options.placement.store.empty()) {
    throw UsageError("--repair-lost needs --via: the consumer's own store, whose stale records it releases");
  }
  placement::require(placement.uri, placement::StoreUse::Release);
  if (core::one_key(placement.layout) && placement.layout.shape != core::RecordShape::HashField) {
    throw UsageError(fmt::format("--repair-lost --layout {}: its records are members of one key, which hold no "
                                 "value to compare before releasing; a plan of the lost events is audit --effects",
                                 placement.layout.name));
  }
  if (options.execute && options.checkpoint.empty()) {
    throw UsageError("--repair-lost --execute needs --checkpoint FILE: the keys whose records it releases are "
                     "written down beside it first, so that a run killed before publishing them is resumed "
                     "without losing them");
  }
  request.repair = true;
  request.second_key_templates = {effects->key_template};
  request.placement.effects = effects->placement;
  return effects;
}

// The layouts replay --via writes: a string key per id, with plain markers (plain, camel-string, whose
// library only asks whether the key exists) or the library's JSON records (Powertools, json), and a
// field of one hash (spring-hash), and the rows of the inboxes whose rows are an id, a scope and a
// time (eventuate, camel-jdbc, spring-jdbc). A set's members (camel-set, zset) and a Bloom filter's
// ids are read by a plan and refused for --execute; the other inboxes are refused; each saying why,
// before anything is contacted.
void check_replay_layout(const core::RecordLayout& layout, bool execute) {
  const auto& schema = layout.inbox_schema;
  if (layout.inbox() && (schema.time == core::InboxSchema::Time::Expiry || !schema.in_progress_column.empty() ||
                         !layout.in_progress_statuses.empty())) {
    throw UsageError(fmt::format("--layout {}: its rows carry columns of the library's own (lock ids, message "
                                 "bodies, dispatch state) that a replay cannot write; point --via at an inbox of the "
                                 "replay's own (--inbox-* flags)",
                                 layout.name));
  }
  if (execute && layout.shape == core::RecordShape::BloomMember) {
    throw UsageError(fmt::format(
        "--layout {}: an id added to a Bloom filter cannot be taken out again: a replay interrupted between adding "
        "an id and publishing its event would leave the event dropped for good, and a failed delivery could not be "
        "released; a plan (without --execute) reads the filter, a run takes a placement of the replay's own "
        "(--layout plain)",
        layout.name));
  }
  if (execute && core::one_key(layout) && layout.shape != core::RecordShape::HashField) {
    throw UsageError(fmt::format(
        "--layout {}: its records are members of one key with no value to hold a claim: a replay interrupted between "
        "recording an id and publishing its event could not tell, on resume, its own records from the consumer's, "
        "and would lose that event; a plan (without --execute) reads it, a run takes a placement of the replay's "
        "own (--layout plain)",
        layout.name));
  }
}

// What a repair holds open: the records it releases and the effects it reads.
struct RepairParts {
  std::unique_ptr<core::RecordRelease> records;
  OpenedEffects effects;
  std::optional<connectors::file::ReleaseLog> log; // with --checkpoint
};

// The placement the replay routes through; its notes (no dedup, the memory window) go to `findings`.
// With --repair-lost (`effects`), the repair's placement over `repair`'s parts. Throws
// UnreachableError.

std::unique_ptr<core::ReplayPlacement> open_via(const ReplayFlags& options, const PlacementOptions& placement,
                                                const OpenedSource& opened, Context& context,
                                                std::vector<core::Finding>& findings,
                                                const std::optional<EffectsOptions>& effects, RepairParts& repair) {
  if (effects) {
    repair.effects = open_effects(*effects, context, static_cast<std::int64_t>(expected_events(opened.info)), false,
                                  opened.file ? nullptr : &opened.plans);
    if (repair.effects.failure) {
      throw UnreachableError(*repair.effects.failure);
    }
    repair.records = family(placement.uri.kind).release(placement, context);
    auto markers = placement.audit.policy.in_progress_values;
    auto layout = placement.layout;
    auto now = context.now_ms;
    auto out = std::make_unique<core::RepairPlacement>(*repair.records, *repair.effects.store,
                                                       [markers, layout, now](const core::RecordState& record) {
                                                         return core::judge_record(layout, record, markers, now());
                                                       });
    out->effects_source = "--effects " + describe_effects(*effects);
    if (!options.checkpoint.empty()) {
      repair.log.emplace(options.checkpoint + ".released");
      out->released_before = repair.log->read();
      if (options.execute) {
        out->before_release = [log = &*repair.log](const std::vector<std::string>& keys) { log->append(keys); };
      }
    }
    return out;
  }
  if (options.no_dedup) {
    findings.push_back(core::no_dedup_finding());
    return std::make_unique<core::NoDedupPlacement>();
  }
  ViaOptions via{expected_events(opened.info), options.memory_window, &findings};
  return family(placement.uri.kind).via(placement, via, context);
}

// The sink an executed replay publishes to; none for a plan. Throws UnreachableError.
std::unique_ptr<core::ReplaySink> open_replay_sink(const ReplayFlags& options, const SinkSpec& sink_spec,
                                                   Context& context) {
  if (options.execute && sink_spec.kind == SinkSpec::Kind::Kafka) {
    return connectors::kafka::open_sink(kafka_settings(context), sink_spec.target);
  }
  if (options.execute) {
    return connectors::file::open_sink(sink_spec.target);
  }
  return nullptr;
}

// --max-rate's pace and the progress line, from `started` and the `total` events expected.
void pace_and_progress(ReplayRequest& request, const ReplayFlags& options, Context& context,
                       std::chrono::steady_clock::time_point started, std::int64_t total) {
  // --max-rate holds the sink to N events a second from the start: each publish waits for its turn,
  // so a batch is spread out rather than let through at once.
  if (options.max_rate > 0) {
    request.pace = [&options, started](std::int64_t published) {
      double due = static_cast<double>(published - 1) / options.max_rate;
      double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      if (due > elapsed) {
        std::this_thread::sleep_for(std::chrono::duration<double>(due - elapsed));
      }
    };
  }
  request.after_chunk = [&context, started, total](std::int64_t events) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (context.progress) {
      double rate = elapsed > 0 ? static_cast<double>(events) / elapsed : 0;
      std::string eta = total > events && rate > 0
                            ? ", ETA " + core::format_duration(static_cast<std::int64_t>(
                                             static_cast<double>(total - events) / rate * 1000.0))
                            : "";
      context.progress(fmt::format("replay: {} events, {:.0f} events/s{}", events, rate, eta));
    }
  };
}

// A run resumed from --checkpoint keeps its run id (whose claims it may retry) and its sink.
void resume(ReplayRequest& request, const ReplayFlags& options, const SinkSpec& sink_spec, Context& context) {
  request.checkpoint = connectors::file::read_checkpoint(options.checkpoint);
  std::string sink_name = sink_spec.kind == SinkSpec::Kind::Kafka  ? "kafka:" + sink_spec.target
                          : sink_spec.kind == SinkSpec::Kind::File ? "file:" + sink_spec.target
                                                                   : "";
  if (request.checkpoint && options.execute && !request.checkpoint->sink.empty() &&
      request.checkpoint->sink != sink_name) {
    throw UsageError(fmt::format("--checkpoint {} belongs to a replay into {}, not {}; use that sink or another "
                                 "checkpoint file",
                                 options.checkpoint, request.checkpoint->sink, sink_name));
  }
  request.run_id = request.checkpoint ? request.checkpoint->run_id
                                      : fmt::format("r{}-{}", context.now_ms(), static_cast<long>(::getpid()));
}

// The source a replay reads and the placement it routes through (an unreachable one in `failure`),
// filled in place: the repair's placement holds the addresses of `repair`'s parts.
struct OpenedRoute {
  OpenedSource opened;
  RepairParts repair;
  // A chain (--via repeated): the claiming tier's own placement and the tiers only read, which `via`
  // holds on to.
  std::unique_ptr<core::ReplayPlacement> claims;
  std::vector<OpenedStore> readers;
  std::unique_ptr<core::ReplayPlacement> via; // given before open_route: a version guard's walked verdicts
  std::optional<std::string> failure;
};
void open_route(const ReplayFlags& options, const PlacementOptions& placement,
                const std::optional<EffectsOptions>& effects, const core::Checkpoint* checkpoint,
                std::vector<core::Finding>& findings, Context& context, OpenedRoute& out,
                const ViaChain* chain = nullptr) {
  out.opened = open_source(options.source, context, std::nullopt, checkpoint);
  out.failure = out.opened.failure;
  if (!out.failure) {
    try {
      if (!out.via) {
        out.via = open_via(options, placement, out.opened, context, findings, effects, out.repair);
      }
      if (chain) {
        out.claims = std::move(out.via);
        out.via = open_via_chain(*chain, *out.claims, out.readers, context);
      }
    } catch (const UnreachableError& e) {
      out.failure = e.what();
    }
  }
}

// Before a repair releases anything: the whole range read as a plan until the effects of one record a
// replay finds completed are found. A lookup that finds none of them proves nothing (a column no id
// fits, an --effects-id no output record carries) and would call every processed event lost: exit 2,
// nothing released. Returns the plan's report when it could not read everything (exit 3).
std::optional<reports::Report> prove_effects_match(const ReplayFlags& options, const PlacementOptions& placement,
                                                   const std::optional<EffectsOptions>& effects,
                                                   const ReplayRequest& request, Context& context) {
  ReplayFlags plan_flags = options;
  plan_flags.execute = false;
  // The whole range, not only what a checkpoint leaves: a rerun's remaining events may hold no charged
  // one while the range does (what the earlier run released reads as absent and proves nothing).
  OpenedRoute route;
  std::vector<core::Finding> notes;
  open_route(plan_flags, placement, effects, nullptr, notes, context, route);
  if (route.failure) {
    reports::Report report = unreachable_report("replay", *route.failure, route.opened.info, context);
    report.placement = request.placement;
    return report;
  }
  auto& repair = dynamic_cast<core::RepairPlacement&>(*route.via);
  repair.stop_when_proven = true;
  ReplayRequest plan = request;
  plan.checkpoint.reset();
  plan.execute = false;
  plan.journal = nullptr;
  plan.after_chunk = nullptr;
  plan.pace = nullptr;
  plan.times = nullptr;
  connectors::file::AnalyzerArchives archives(false);
  plan.semantic_archive = archives.semantic.get();
  plan.id_archive = archives.ids.get();
  context.note("repair: reading the range as a plan until the effects lookup finds a processed event's effect");
  reports::Report report =
      run_replay(plan, *route.opened.source, *route.via, nullptr, route.opened.info, context.now_ms());
  if (!report.complete) {
    return report;
  }
  if (auto unmatched = repair.findings(); !unmatched.empty()) { // effects-unmatched, as a plan says it
    throw UsageError(fmt::format("--repair-lost --execute: {}; nothing was released. {}", unmatched.front().title,
                                 unmatched.front().advice));
  }
  return std::nullopt;
}

// --via a version guard (`placement`): what it cannot be combined with, refused before anything is
// contacted, and the order its versions compare by. True when it is one.
bool check_guard(const ReplayFlags& options, PlacementOptions& placement, const std::vector<PlacementFlags>& tiers) {
  auto a_guard = [](const PlacementFlags& t) { return t.layout == "version-guard" || t.layout == "state-guard"; };
  if (tiers.size() > 1 && std::any_of(tiers.begin(), tiers.end(), a_guard)) {
    throw UsageError(fmt::format("--via repeated with --layout {}: a guard is the consumer's whole placement (its "
                                 "projection), not a tier of a chain; replay --via the projection alone",
                                 std::find_if(tiers.begin(), tiers.end(), a_guard)->layout));
  }
  if (!placement.layout.version_guard()) {
    if (!options.identity.version.empty()) {
      throw UsageError("--version on replay is read by --via with --layout version-guard (what the guard applies); "
                       "other placements decide by the dedup key");
    }
    return false;
  }
  if (options.repair_lost) {
    throw UsageError(fmt::format("--repair-lost --layout {}: a guard keeps no record to release; a replay --via the "
                                 "projection already publishes only the events it applies",
                                 placement.layout.name));
  }
  placement.version_order = guard_order(options.identity, placement, "--via --layout", false);
  return true;
}

// The report's placement: the one the replay routes through (a chain's claiming tier), or none.
void name_placement(ReplayRequest& request, const PlacementOptions& placement, bool has_via) {
  request.placement.kind = has_via ? core::store_kind_name(placement.uri.kind) : "none";
  request.placement.store = has_via ? placement.uri.redacted() : "";
  request.placement.key_template = request.key_template.text();
  request.placement.consumer = request.consumer;
  request.placement.ttl = placement.audit.ttl;
  request.placement.layout = placement.layout.name;
}

// The request's settings from the flags: identification, the keys it claims by, the run's shape.
void fill_request(ReplayRequest& request, const ReplayFlags& options, const PlacementOptions& placement,
                  const ViaChain* chain, bool guard, Context& context) {
  bool has_via = !options.placement.store.empty();
  request.fail_on = core::parse_fail_on(context.global.fail_on);
  request.fail_on_text = context.global.fail_on;
  request.identify = parse_identity(options.identity, context);
  request.key_template = placement.audit.key_template;
  if (has_via && !guard && placement::family_row(placement.uri.kind).keyed_by_event_id) {
    request.key_template = core::KeyTemplate::parse("{event_id}"); // an inbox is keyed by the event id
  }
  if (chain) {
    request.second_key_templates = reader_templates(*chain);
  }
  request.guard = guard;
  if (guard) {
    request.versions = placement.version_order;
    request.transitions = placement.transitions;
  }
  request.consumer = options.placement.consumer;
  request.execute = options.execute;
  request.max_examples = options.examples;
  if (options.batch == 0) {
    throw UsageError("--batch must be at least 1");
  }
  request.batch_size = options.batch;
}

int run(const ReplayFlags& options, const std::vector<PlacementFlags>& flags, Context& context) {
  auto format = parse_output_format(context);
  // Everything typed is checked before anything is contacted.
  if (options.execute && options.dry_run) {
    throw UsageError("--dry-run and --execute are mutually exclusive");
  }
  SinkSpec sink_spec = parse_sink(options.sink);
  std::optional<ViaChain> chain; // --via repeated: the claims go to one tier, the others are read
  if (flags.size() > 1) {
    chain = parse_via_chain(flags, options.repair_lost, context);
  }
  PlacementOptions placement = parse_placement(chain ? flags[chain->claims] : options.placement, context, "--via");
  const bool guard = check_guard(options, placement, flags);
  if (!guard) {
    check_replay_layout(placement.layout, options.execute && !options.repair_lost);
  }
  check_flags(options, sink_spec, placement);
  bool has_via = !options.placement.store.empty();
  ReplayRequest request;
  auto effects = check_repair(options, placement, request);
  fill_request(request, options, placement, chain ? &*chain : nullptr, guard, context);
  connectors::file::AnalyzerArchives archives(context.global.verbose > 0);
  request.semantic_archive = archives.semantic.get();
  request.id_archive = archives.ids.get();
  // One run at a time per checkpoint and per file sink, held until this process ends.
  std::optional<connectors::file::RunLock> checkpoint_lock, sink_lock;
  if (options.execute && !options.checkpoint.empty()) {
    checkpoint_lock.emplace(options.checkpoint, "--checkpoint " + options.checkpoint);
  }
  if (options.execute && sink_spec.kind == SinkSpec::Kind::File) {
    sink_lock.emplace(sink_spec.target, "--sink file:" + sink_spec.target);
  }
  resume(request, options, sink_spec, context);
  name_placement(request, placement, has_via);
  OpenedRoute route;
  if (guard) { // each event's verdict, before anything is published
    request.key_template = core::guard_replay_key_template();
    WalkedGuard walked = walk_version_guard(options.source, request.identify, placement, request.consumer, context);
    if (walked.unread) {
      walked.unread->placement = request.placement;
      return deliver_report(*walked.unread, OpenedSource{}, format, context);
    }
    route.via = std::move(walked.placement);
  }
  if (effects && options.execute) {
    if (auto unread = prove_effects_match(options, placement, effects, request, context)) {
      return deliver_report(*unread, OpenedSource{}, format, context);
    }
  }
  connectors::file::DecisionLog decisions(options.decisions);

  open_route(options, placement, effects, request.checkpoint ? &*request.checkpoint : nullptr,
             request.placement_findings, context, route, chain ? &*chain : nullptr);
  OpenedSource& opened = route.opened;
  opened.info.payload_decoding = decoding_of(request.identify);
  std::optional<std::string>& failure = route.failure;
  std::unique_ptr<core::ReplaySink> sink;
  if (!failure) {
    try {
      if (effects && options.execute) {
        dynamic_cast<core::RepairPlacement&>(*route.via).proven_before = true; // prove_effects_match said so
      }
      sink = open_replay_sink(options, sink_spec, context);
    } catch (const UnreachableError& e) {
      failure = e.what();
    }
  }
  reports::Report report;
  if (failure) {
    report = unreachable_report("replay", *failure, opened.info, context);
    report.placement = request.placement;
    return deliver_report(report, opened, format, context);
  }
  note_ranges(opened.info, context);
  if (request.checkpoint) {
    context.note(fmt::format("resuming run {} from {}", request.run_id, options.checkpoint));
  }
  FileJournal journal(decisions, options.execute ? options.checkpoint : "");
  request.journal = &journal;
  auto started = std::chrono::steady_clock::now();
  pace_and_progress(request, options, context, started, static_cast<std::int64_t>(expected_events(opened.info)));
  ReplayStageTimes times;
  if (context.global.verbose) {
    request.times = &times;
  }
  report = run_replay(request, *opened.source, *route.via, sink.get(), opened.info, context.now_ms());
  archives.note(context.global.verbose > 0);
  if (request.times) {
    context.note("replay stages: " + times.describe());
  }
  return deliver_report(report, opened, format, context);
}

} // namespace

CommandRunner register_replay(CLI::App& app, Context& context) {
  auto options = std::make_shared<ReplayFlags>();
  auto* sub = app.add_subcommand("replay", "Re-publish a range through a dedup placement; a plan unless --execute");
  add_source_options(*sub, options->source);
  add_identity_options(*sub, options->identity);
  add_version_options(*sub, options->identity);
  add_placement_options(*sub, options->placement, PlacementUse::Replay);
  auto* replay = sub->add_option_group("Replay");
  replay->add_option("--sink", options->sink, "where events that pass are published")
      ->type_name("kafka:TOPIC|file:PATH");
  replay->add_flag("--dry-run", options->dry_run, "print the plan and change nothing (the default)");
  replay->add_flag("--execute", options->execute, "claim, publish and settle");
  replay->add_option("--checkpoint", options->checkpoint, "resume point: written after every batch, read on start")
      ->type_name("FILE");
  replay->add_option("--max-rate", options->max_rate, "events per second at most")->type_name("N");
  replay
      ->add_option("--decisions", options->decisions,
                   "append an NDJSON line per event: id, partition, offset, "
                   "decision, reason")
      ->type_name("FILE");
  replay->add_flag("--allow-same-topic", options->allow_same_topic, "allow --sink to be the topic being read");
  replay->add_flag("--no-dedup", options->no_dedup, "publish every event, duplicates included (no --via)");
  replay->add_option("--memory-window", options->memory_window, "memory: keys remembered exactly (default 1000000)")
      ->type_name("N");
  replay
      ->add_option("--batch", options->batch,
                   "events per claim/publish/settle round: one transaction and one checkpoint each (default 5000)")
      ->type_name("N");
  replay->add_flag("--repair-lost", options->repair_lost,
                   "republish only the lost events (marked processed in --via, effect absent in --effects), each "
                   "after releasing its stale record if it is still as read, so the consumer applies it once");
  add_effects_options(*sub, options->effects);
  add_examples_option(*replay, options->examples);
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "replay";
    return run(*options, tier_flags(*sub, options->placement), context);
  };
}

} // namespace dedupctl::commands
