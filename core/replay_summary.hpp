#pragma once

#include "core/side_effect.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

// What a seek would re-apply (the audit's replay window) and what a replay did: report-v1's
// `replay`, which audit, replay and every renderer share.
namespace dedupctl::core {

// What a replay did (or, as a plan, would do): report-v1 `replay` adds these for replay.
struct ReplayPartition {
  std::string topic;
  std::int32_t partition = 0;
  std::optional<std::int64_t> from; // where this run started (a resumed run: the checkpoint)
  std::optional<std::int64_t> to;   // the end of the range
  std::int64_t events = 0;          // read in this run
  std::int64_t publish = 0;         // published, or would be
  std::int64_t skip = 0;            // skipped, or would be
  std::optional<std::int64_t> next; // the checkpoint's next offset after the run
};
struct ReplayRun {
  bool execute = false;
  std::string run_id;
  std::string sink;
  bool resumed = false;
  std::int64_t replayed = 0;          // published (execute)
  std::int64_t would_replay = 0;      // plan
  std::int64_t skipped_duplicate = 0; // a record existed (or the key came earlier in the range)
  std::int64_t skipped_claimed = 0;   // in progress elsewhere
  std::int64_t failed = 0;            // delivery failed (claims released)
  std::int64_t released = 0;          // claims released after a failed delivery
  std::int64_t no_id = 0;             // no event id: never published
  std::int64_t id_unfit = 0;          // an id the placement cannot hold (Claim::Unfit): never published
  std::int64_t found_in_sink = 0;     // published by an interrupted run, settled on resume
  std::vector<ReplayPartition> partitions;
};

struct TypeRisk {
  SideEffect side_effects = SideEffect::External;
  std::int64_t would_reapply = 0;
};

struct SafeFrom {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::optional<std::int64_t> timestamp_ms;
};

struct ReplaySummary {
  std::string window; // "[seek, committed)" or "scanned range"
  std::int64_t events = 0;
  std::int64_t would_skip = 0;
  std::int64_t would_reapply = 0;
  std::int64_t would_skip_unfinished = 0;
  std::int64_t first_delivery = 0; // pending events in the window: applied for the first time
  // With --effects: would_reapply split by whether the effect exists (certain duplicates; an event
  // whose effect could not be looked up, having no id, counts here too) or not (deliveries that
  // repair). safe_from then counts only the first.
  std::optional<std::int64_t> would_reapply_applied;
  std::optional<std::int64_t> would_reapply_unapplied;
  std::map<std::string, TypeRisk> by_type;
  std::vector<SafeFrom> safe_from;
  std::optional<ReplayRun> run; // replay plans and runs
};

} // namespace dedupctl::core
