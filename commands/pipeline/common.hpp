#pragma once

#include "core/event.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/source/source_info.hpp"
#include "reports/report.hpp"

#include <chrono>
#include <ctime>
#include <functional>

// What scan and audit share: reading a source to its end (or to the failure that makes the report
// incomplete) and folding in what the log alone shows.
namespace dedupctl::commands {

// A command's report before anything is read: its name, time and --fail-on.
reports::Report start_report(std::string command, std::int64_t now_ms, std::string fail_on_text);

// Runs `body`; an UnreachableError or InterruptedError in it marks the report incomplete (exit 3
// or 130) instead of propagating.
void incomplete_on_failure(reports::Report& report, const std::function<void()>& body);

// Calls `on_batch` for every batch. An UnreachableError or InterruptedError marks the report
// incomplete (exit 3 or 130) instead of propagating; a UsageError (malformed input) propagates.
void read_source(core::EventSource& source, reports::Report& report,
                 const std::function<void(const core::EventBatch&)>& on_batch);

// Adds the time until it goes out of scope to one stage's seconds (nothing when `slot` is null: -v
// did not ask for stage times).
class StageTimer {
public:
  explicit StageTimer(double* slot) : m_slot(slot) {
    if (m_slot) {
      m_start = std::chrono::steady_clock::now();
    }
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  ~StageTimer() {
    if (m_slot) {
      *m_slot += std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    }
  }

private:
  double* m_slot;
  std::chrono::steady_clock::time_point m_start;
};

// The CPU time of the calling thread while it lives, added to *slot (none when slot is null): a stage
// on a thread of its own, told apart from its waits (-v).
class ThreadCpuTimer {
public:
  explicit ThreadCpuTimer(double* slot) : m_slot(slot), m_start(slot ? now() : 0) {}
  ThreadCpuTimer(const ThreadCpuTimer&) = delete;
  ThreadCpuTimer& operator=(const ThreadCpuTimer&) = delete;
  ~ThreadCpuTimer() {
    if (m_slot) {
      *m_slot += now() - m_start;
    }
  }

private:
  static double now() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
  }
  double* m_slot;
  double m_start;
};

// How many events the resolved ranges hold (0 when unknown): tables are sized once from it.
std::size_t expected_events(const core::SourceInfo& info);

// Finalizes the source, adds the log analyzer's and range findings, sorts them and sets the exit
// code of a complete report.
// --version's settings ("version", "version order"), after the others, when it was given.
void add_version_settings(reports::Report& report, const core::IdentifyOptions& identify,
                          const core::LogAnalyzerOptions& analyzer);

void finish_report(reports::Report& report, core::SourceInfo info, const core::LogAnalyzer& log,
                   std::vector<core::Finding> more_findings, std::size_t max_examples, const core::FailOn& fail_on,
                   const std::vector<core::PartitionPosition>& positions);
// The same with the log findings given (a merge of shards).
void finish_report(reports::Report& report, core::SourceInfo info, std::vector<core::Finding> log_findings,
                   std::vector<core::Finding> more_findings, std::size_t max_examples, const core::FailOn& fail_on,
                   const std::vector<core::PartitionPosition>& positions);

// A scan's summary (report-v1) from its log counters.
std::vector<std::pair<std::string, std::int64_t>> scan_summary(const core::LogCounters& counters);

} // namespace dedupctl::commands
