#include "commands/pipeline/common.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::commands {

namespace {
// Beyond this many events the tables grow as they fill instead of being allocated up front.
constexpr std::int64_t k_max_presized_events = 64 * 1024 * 1024;
} // namespace

void read_source(core::EventSource& source, reports::Report& report,
                 const std::function<void(const core::EventBatch&)>& on_batch) {
  core::EventBatch batch;
  incomplete_on_failure(report, [&] {
    while (source.next_batch(batch)) {
      on_batch(batch);
    }
  });
}

reports::Report start_report(std::string command, std::int64_t now_ms, std::string fail_on_text) {
  reports::Report report;
  report.command = std::move(command);
  report.generated_at_ms = now_ms;
  report.fail_on = std::move(fail_on_text);
  return report;
}

void incomplete_on_failure(reports::Report& report, const std::function<void()>& body) {
  try {
    body();
  } catch (const UnreachableError& e) {
    report.complete = false;
    report.error = e.what();
    report.exit_code = k_exit_unreachable;
  } catch (const InterruptedError& e) {
    report.complete = false;
    report.error = e.what();
    report.exit_code = k_exit_interrupted;
  }
}

std::size_t expected_events(const core::SourceInfo& info) {
  std::int64_t expected = 0;
  for (const auto& range : info.partitions) {
    expected += std::max<std::int64_t>(0, range.to - range.from);
  }
  return static_cast<std::size_t>(std::min<std::int64_t>(expected, k_max_presized_events));
}

void finish_report(reports::Report& report, core::SourceInfo info, const core::LogAnalyzer& log,
                   std::vector<core::Finding> more_findings, std::size_t max_examples, const core::FailOn& fail_on,
                   const std::vector<core::PartitionPosition>& positions) {
  finish_report(report, std::move(info), log.findings(), std::move(more_findings), max_examples, fail_on, positions);
}

void add_version_settings(reports::Report& report, const core::IdentifyOptions& identify,
                          const core::LogAnalyzerOptions& analyzer) {
  if (analyzer.transitions) { // a state guard's: the types it moves by, not versions
    report.settings.emplace_back("type", core::to_string(identify.type));
    report.settings.emplace_back("transitions", fmt::format("{} event types", analyzer.transitions->size()));
    return;
  }
  if (analyzer.versions) {
    report.settings.emplace_back("version", core::to_string(identify.version));
    report.settings.emplace_back("version order", std::string(core::to_string(*analyzer.versions)));
  }
}

std::vector<std::pair<std::string, std::int64_t>> scan_summary(const core::LogCounters& counters) {
  return {{"events", counters.events},
          {"no_id", counters.no_id},
          {"log_duplicates", counters.log_duplicates},
          {"id_reuse", counters.id_reuse},
          {"semantic_duplicates", counters.semantic_duplicates}};
}

void finish_report(reports::Report& report, core::SourceInfo info, std::vector<core::Finding> log_findings,
                   std::vector<core::Finding> more_findings, std::size_t max_examples, const core::FailOn& fail_on,
                   const std::vector<core::PartitionPosition>& positions) {
  core::finalize_source(info, positions);
  report.findings = std::move(log_findings);
  for (auto& finding : more_findings) {
    report.findings.push_back(std::move(finding));
  }
  if (auto clamped = core::range_clamped_finding(info, max_examples)) {
    report.findings.push_back(std::move(*clamped));
  }
  core::sort_findings(report.findings);
  report.source = std::move(info);
  if (report.complete) {
    report.exit_code = core::exit_code_for(report.findings, fail_on);
  }
}

} // namespace dedupctl::commands
