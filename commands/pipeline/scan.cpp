#include "commands/pipeline/scan.hpp"

#include "core/errors.hpp"
#include "core/time.hpp"

#include <algorithm>

namespace dedupctl::commands {

namespace {
// Beyond this many events the tables grow as they fill instead of being allocated up front.
constexpr std::int64_t k_max_presized_events = 64 * 1024 * 1024;
} // namespace

reports::Report run_scan(const ScanRequest& request, core::EventSource& source, core::SourceInfo info,
                         std::int64_t now_ms) {
  reports::Report report;
  report.command = "scan";
  report.generated_at_ms = now_ms;
  report.fail_on = request.fail_on_text;

  core::Identifier identifier(request.identify);
  core::LogAnalyzerOptions analyzer_options = request.analyzer;
  analyzer_options.max_examples = request.max_examples;
  analyzer_options.id_specs = core::to_string(request.identify.id);
  // A Kafka range says how many events it holds: size the tables once rather than doubling them
  // (a doubling briefly holds both copies, the peak of the scan's memory).
  std::int64_t expected = 0;
  for (const auto& range : info.partitions) {
    expected += std::max<std::int64_t>(0, range.to - range.from);
  }
  if (expected > 0) {
    analyzer_options.expected_events = static_cast<std::size_t>(std::min<std::int64_t>(expected, k_max_presized_events));
  }
  core::LogAnalyzer analyzer(analyzer_options);

  core::EventBatch batch;
  std::vector<core::Identity> identities;
  try {
    while (source.next_batch(batch)) {
      identifier.identify(batch, identities);
      analyzer.observe(batch.events, identities);
      if (request.progress) {
        request.progress(analyzer.counters().events);
      }
    }
  } catch (const UnreachableError& e) {
    report.complete = false;
    report.error = e.what();
    report.exit_code = k_exit_unreachable;
  } catch (const InterruptedError& e) {
    report.complete = false;
    report.error = e.what();
    report.exit_code = k_exit_interrupted;
  }

  core::finalize_source(info, source.positions());
  const auto& counters = analyzer.counters();
  report.summary = {{"events", counters.events},
                    {"no_id", counters.no_id},
                    {"log_duplicates", counters.log_duplicates},
                    {"id_reuse", counters.id_reuse},
                    {"semantic_duplicates", counters.semantic_duplicates}};
  report.findings = analyzer.findings();
  if (auto clamped = core::range_clamped_finding(info, request.max_examples)) {
    report.findings.push_back(std::move(*clamped));
  }
  core::sort_findings(report.findings);
  report.source = std::move(info);
  report.settings = {{"id", core::to_string(request.identify.id)},
                     {"type", core::to_string(request.identify.type)},
                     {"entity", request.identify.entity.empty() ? "-" : core::to_string(request.identify.entity)},
                     {"semantic key", request.identify.semantic.empty() ? "type + entity + payload without the id"
                                                                        : core::to_string(request.identify.semantic)},
                     {"semantic window", core::format_duration(request.analyzer.semantic_window_ms)},
                     {"fail on", request.fail_on_text}};
  if (report.complete) {
    report.exit_code = core::exit_code_for(report.findings, request.fail_on);
  }
  return report;
}

} // namespace dedupctl::commands
