#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/merge/digest.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/source/source_info.hpp"
#include "reports/report.hpp"

#include <cstdint>
#include <functional>
#include <string>

namespace dedupctl::commands {

struct ScanRequest {
  core::IdentifyOptions identify = core::default_identify_options();
  core::LogAnalyzerOptions analyzer;
  core::FailOn fail_on;
  std::string fail_on_text = "error";
  std::size_t max_examples = 5;
  // Called after every batch with the events read so far (progress on stderr).
  std::function<void(std::int64_t)> progress;
  // A shard's (--shard, --digest): records every event, and takes the log analysis at the end.
  core::DigestRecorder* digest = nullptr;
};

// Reads the whole source through identify → LogAnalyzer and builds the report. A source that
// fails (UnreachableError) or is interrupted yields a report with complete=false and exit code 3
// or 130 over what was read; a malformed input (UsageError) propagates.
reports::Report run_scan(const ScanRequest& request, core::EventSource& source, core::SourceInfo info,
                         std::int64_t now_ms);

} // namespace dedupctl::commands
