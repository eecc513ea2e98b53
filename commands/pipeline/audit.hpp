#pragma once

#include "core/audit/audit_analyzer.hpp"
#include "core/audit/retention.hpp"
#include "core/audit/tiers.hpp"
#include "core/audit/window_store_replay.hpp"
#include "core/event.hpp"
#include "core/identity/identify.hpp"
#include "core/merge/digest.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/scan/version_analyzer.hpp"
#include "core/source/source_info.hpp"
#include "core/store/dedup_store.hpp"
#include "core/store/effect_store.hpp"
#include "reports/report.hpp"

#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace dedupctl::commands {

// Where an audit's time went, for -v: the main thread's stages, and the lookups on their worker
// thread (which overlap the reading; `lookup_wait` is the main thread waiting for them).
struct AuditStageTimes {
  double read = 0;        // the source's next batch
  double identify = 0;    // event ids and the log analyzer
  double render = 0;      // dedup keys
  double lookup_wait = 0; // waiting for a batch's lookups
  double classify = 0;    // coverage states
  double fold_wait = 0;   // a Kafka Streams store: waiting for its changelog's fold once the log is read
  double replay = 0;      // and its processor over the fold
  double lookup = 0;      // the store's lookups (worker thread)
  double lookup_cpu = 0;  // of which the worker thread's CPU (the rest waits for the store)
  std::string describe() const;
};

// One tier of a chain (--store repeated, in lookup order): its store, read as that tier alone would be.
struct AuditTier {
  core::DedupStore* store = nullptr;
  core::AuditOptions audit;         // its key template, TTL, lease, claim markers and layout's rules
  reports::PlacementInfo placement; // as placement.tiers lists it
  core::Tier tier;                  // its name, and whether it survives a restart
};

struct AuditRequest {
  core::IdentifyOptions identify = core::default_identify_options();
  core::LogAnalyzerOptions analyzer;
  core::AuditOptions audit; // policy.now_ms is set by run_audit
  std::string consumer;
  bool has_seek = false;
  core::FailOn fail_on;
  std::string fail_on_text = "error";
  std::size_t max_examples = 5;
  reports::PlacementInfo placement;              // kind, store, sources; TTL figures are filled in
  std::vector<core::Finding> placement_findings; // what the store itself showed (its schema, constraints)
  std::vector<std::pair<std::string, std::string>> store_settings; // how the store was read
  std::function<void(std::int64_t)> progress;
  AuditStageTimes* times = nullptr; // filled when given
  // A shard's (--shard, --digest): records every event with its record, and takes the setup and
  // the log analysis at the end.
  core::DigestRecorder* digest = nullptr;
  // --effects: each event's effect looked up beside its record, by the key this renders (the event
  // id for a table's row). Set audit.effects too.
  core::EffectStore* effects = nullptr;
  core::KeyTemplate effects_template = core::KeyTemplate::parse("{event_id}");
  // Two or more: a chain of tiers, each looked up by its own key (the store run_audit is handed is not
  // asked). `audit` is then the chain's: what an event's best tier says is classified with it, its TTL
  // is the longest of the tiers' (core::TierChain::chain_ttl), and its window is the memory tier's.
  std::vector<AuditTier> tiers;
  std::size_t window_tier = 0; // the tier whose keys a window in memory is simulated with
  // --layout version-guard: each event's verdict once the guard's walk decided it, in read order
  // (replay --via a guard publishes the ones it applies).
  std::function<void(const core::GuardEvent&)> guard_verdicts;
  // A Kafka Streams store (kstreams://): how the application reads it, and its changelog's fold, asked
  // for once the log is read (it may throw what the changelog's read threw). The store handed to
  // run_audit is then not looked up: each event's verdict is the processor's over the fold.
  std::optional<core::WindowStoreReading> window_store;
  std::function<core::WindowStoreChangelog&()> changelog;
};

// Reads the source, renders each event's dedup key, looks the keys up in the store batch by batch
// and classifies every event (docs/design.md "Coverage"). A source or store that fails midway gives an
// incomplete report (exit 3, or 130 when interrupted) over what was read, never a clean verdict.
reports::Report run_audit(const AuditRequest& request, core::EventSource& source, core::DedupStore& store,
                          core::SourceInfo info, std::int64_t now_ms);

// covered, expiring, expired, missing, pending, in_progress, orphaned and no_expiry, as summary (and
// summary.tiers) names them.
std::vector<std::pair<std::string, std::int64_t>> state_counts(const core::AuditResult& result);

// An audit's report from its analyzers once every event was observed: shared by run_audit and the
// merge of shards (which classifies the shards' events again).
void finish_audit_report(reports::Report& report, core::SourceInfo info, core::AuditAnalyzer& audit,
                         const core::LogTally& log, const core::LogAnalyzerOptions& log_options,
                         reports::PlacementInfo placement, const std::vector<core::Finding>& placement_findings,
                         std::size_t max_examples, const core::FailOn& fail_on,
                         const std::vector<core::PartitionPosition>& positions);

} // namespace dedupctl::commands
