#include "commands/pipeline/scan.hpp"

#include "commands/pipeline/common.hpp"
#include "core/util/time.hpp"

namespace dedupctl::commands {

reports::Report run_scan(const ScanRequest& request, core::EventSource& source, core::SourceInfo info,
                         std::int64_t now_ms) {
  reports::Report report = start_report("scan", now_ms, request.fail_on_text);

  core::Identifier identifier(request.identify);
  core::LogAnalyzerOptions analyzer_options = request.analyzer;
  analyzer_options.max_examples = request.max_examples;
  analyzer_options.id_specs = core::to_string(request.identify.id);
  if (auto expected = expected_events(info)) {
    analyzer_options.expected_events = expected;
  }
  core::LogAnalyzer analyzer(analyzer_options);

  std::vector<core::Identity> identities;
  read_source(source, report, [&](const core::EventBatch& batch) {
    identifier.identify(batch, identities);
    analyzer.observe(batch.events, identities);
    if (request.digest) {
      for (std::size_t i = 0; i < batch.events.size(); ++i) {
        request.digest->observe(batch.events[i], identities[i], {});
      }
    }
    if (request.progress) {
      request.progress(analyzer.counters().events);
    }
  });

  const auto& counters = analyzer.counters();
  report.summary = scan_summary(counters);
  report.settings = {{"id", core::to_string(request.identify.id)},
                     {"type", core::to_string(request.identify.type)},
                     {"entity", request.identify.entity.empty() ? "-" : core::to_string(request.identify.entity)},
                     {"semantic key", request.identify.semantic.empty() ? "type + entity + payload without the id"
                                                                        : core::to_string(request.identify.semantic)},
                     {"semantic window", core::format_duration(request.analyzer.semantic_window_ms)},
                     {"fail on", request.fail_on_text}};
  add_version_settings(report, request.identify, request.analyzer);
  finish_report(report, std::move(info), analyzer, {}, request.max_examples, request.fail_on, source.positions());
  if (request.digest) {
    request.digest->log = analyzer.tally();
    request.digest->log_options = analyzer_options;
  }
  return report;
}

} // namespace dedupctl::commands
