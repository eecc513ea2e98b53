#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/identity/key_template.hpp"
#include "core/scan/version_analyzer.hpp"
#include "core/source/source_info.hpp"
#include "core/store/dedup_store.hpp"
#include "core/store/effect_store.hpp"
#include "core/store/layout.hpp"
#include "core/trace/trace.hpp"
#include "reports/report.hpp"

#include <string>
#include <vector>

namespace dedupctl::commands {

// A tier of a chain after the first (--store repeated, docs/windows.md "Tiers"); the first tier is the
// request's own fields and the store run_trace is given.
struct TraceTierRequest {
  std::string name; // "tier 2 (redis://host:6379)"
  core::DedupStore* store = nullptr;
  core::KeyTemplate key_template = core::KeyTemplate::parse("{event_id}");
  std::vector<std::string> in_progress_values{"processing", "INPROGRESS"};
  bool inbox = false;
  bool orphans_reapplied = false; // its library takes an orphaned claim over (core::CoveragePolicy)
  core::RecordLayout layout;
  core::Span ttl; // an inbox: its retention
};

struct TraceRequest {
  core::IdentifyOptions identify = core::default_identify_options();
  core::KeyTemplate key_template = core::KeyTemplate::parse("{event_id}");
  std::string consumer;
  std::vector<std::string> ids; // as requested, in order
  std::vector<std::string> in_progress_values{"processing", "INPROGRESS"};
  bool inbox = false; // records are inbox rows: the value is the status, with processed_at
  core::FailOn fail_on;
  std::string fail_on_text = "error";
  std::size_t max_examples = 5;
  reports::PlacementInfo placement; // its ttl decides the verdicts (an inbox: its retention)
  core::RecordLayout layout;        // how the records' values are read (record.fields); a window's spec
  bool orphans_reapplied = false;   // the layout's library takes an orphaned claim over
  // A chain: the tiers after the first, in lookup order. Each trace then lists every tier's keys,
  // record and verdict alone (traces[].tiers); its own record and verdict are the best tier's.
  std::vector<TraceTierRequest> more_tiers;
  // --effects: each found id's effect, looked up by the key this renders from its first occurrence.
  core::EffectStore* effects = nullptr;
  core::KeyTemplate effects_template = core::KeyTemplate::parse("{event_id}");
  // --version with --entity: each found id's entity's versions around it join its timeline.
  std::optional<core::VersionOrder> versions;
  // --layout version-guard: the store is the projection, looked up by entity, and each verdict is the
  // guard's (core::decide_guard_trace). One tier only.
  bool version_guard = false;
};

// Reads the range once, keeps every occurrence of the requested ids (and, for ids not found, log
// ids that start with them), looks their dedup keys up in one call, and decides a verdict per id.
// Findings: one per verdict other than protected (applied-twice, state-lost, id-reused,
// claim-orphaned, effect-lost and bloom-false-positive are errors, exposed a warning, not-found info).
// A window in memory (a tier whose layout is one) is simulated over the whole range, empty at its
// start, and each copy says what it did (occurrences[].window).
reports::Report run_trace(const TraceRequest& request, core::EventSource& source, core::DedupStore& store,
                          core::SourceInfo info, std::int64_t now_ms);

} // namespace dedupctl::commands
