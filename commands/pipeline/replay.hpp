#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/identity/key_template.hpp"
#include "core/replay/replay.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/scan/version_analyzer.hpp"
#include "core/source/source_info.hpp"
#include "reports/report.hpp"

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::commands {

// Where a run's wall time went, per stage, in seconds (printed with -v).
struct ReplayStageTimes {
  double read = 0;       // the source's next batch
  double prepare = 0;    // identify, render keys, build the batch
  double claim = 0;      // the placement's claims (or the plan's lookups)
  double publish = 0;    // handing events to the sink
  double wait = 0;       // waiting for delivery reports
  double settle = 0;     // the placement's settling
  double checkpoint = 0; // decisions and checkpoint files
  std::string describe() const;
};

// Where a replay writes down what it did: every event's decision (--decisions, NDJSON) and, in a run
// with --checkpoint, the checkpoint after each chunk settled. Abstract so that the pipeline's record
// of itself is unit-tested with a fake (FakeJournal, tests/unit/fakes.hpp); commands/replay.cpp
// writes the files through connectors/file. The defaults keep nothing (a plan without --decisions).
class ReplayJournal {
public:
  virtual ~ReplayJournal() = default;
  // One event's decision; the record's views live until the call returns.
  virtual void decide(const core::DecisionRecord& record) { (void)record; }
  // The decisions so far are written out: called before every checkpoint.
  virtual void flush_decisions() {}
  // Whether checkpoints are kept (a run with --checkpoint), and the next one.
  virtual bool keeps_checkpoints() const { return false; }
  virtual void checkpoint(const core::Checkpoint& checkpoint) { (void)checkpoint; }
};

struct ReplayRequest {
  core::IdentifyOptions identify = core::default_identify_options();
  core::KeyTemplate key_template = core::KeyTemplate::parse("{event_id}");
  // Second keys per event, one a template, for a placement that wants_second_keys() (--repair-lost:
  // the effect's; a chain of tiers: each reading tier's), handed to it key after key.
  std::vector<core::KeyTemplate> second_key_templates;
  bool repair = false; // --repair-lost: the placement answers lost (Claimed) and NotLost
  bool guard = false;  // --via a version guard: the placement answers applied (Claimed) and dropped (Done)
  std::optional<core::VersionOrder> versions; // with `guard`: how its versions compare (the report's settings)
  std::shared_ptr<const core::TransitionTable> transitions; // a state guard's (the report's settings)
  std::string consumer;
  bool execute = false;
  std::string run_id;
  std::optional<core::Checkpoint> checkpoint; // resume point
  core::FailOn fail_on;
  std::string fail_on_text = "error";
  std::size_t max_examples = 5;
  std::size_t batch_size = 5000;                // --batch: the events of one chunk (a claim, delivery and settle
                                                // round, and a transaction)
  core::KeyArchive* semantic_archive = nullptr; // see LogAnalyzerOptions::semantic_archive
  core::KeyArchive* id_archive = nullptr;       // see LogAnalyzerOptions::id_archive
  reports::PlacementInfo placement;
  std::vector<core::Finding> placement_findings; // e.g. what the memory window may miss
  ReplayJournal* journal = nullptr;              // the decisions and checkpoints; none kept when null
  // Called after each chunk, once it is journaled, with the events so far (progress).
  std::function<void(std::int64_t)> after_chunk;
  // Called before each publish with the number of events published once it is made (--max-rate
  // sleeps here).
  std::function<void(std::int64_t)> pace;
  ReplayStageTimes* times = nullptr; // filled when given
};

// One code path for the plan and the run (docs/design.md "Replay protocol"). Per chunk (--batch events
// cut from the source's batches): identify, render
// the keys, look at (plan) or claim (execute) them, publish what was claimed, wait for the
// deliveries, settle the claims (done, or released when delivery failed), log every decision, and
// write the checkpoint: per partition the next offset, held at the first failed event so that a
// rerun publishes it. Resuming, what the sink received after the checkpoint is read back first:
// those events were published by the interrupted run and are settled without publishing again.
// A failure of the source, the placement or the sink ends the run incomplete (exit 3 or 130) with
// the checkpoint of the last settled chunk.
reports::Report run_replay(const ReplayRequest& request, core::EventSource& source, core::ReplayPlacement& placement,
                           core::ReplaySink* sink, core::SourceInfo info, std::int64_t now_ms);

} // namespace dedupctl::commands
