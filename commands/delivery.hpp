#pragma once

// The end every command shares: the report rendered to --output in --format, and its exit code.
#include "commands/context.hpp"
#include "commands/source.hpp"
#include "reports/report.hpp"

#include <string>

namespace dedupctl::commands {

// The report of a run that could not reach its systems before reading anything: exit 3.
reports::Report unreachable_report(const std::string& command, const std::string& error, const core::SourceInfo& info,
                                   const Context& context);

// What a report takes from the command line and the opened source once it is built: where each
// setting came from, the dump's skipped and repeated lines. deliver_report does it too.
void complete_report(reports::Report& report, const OpenedSource& opened, const Context& context);

// The end every command shares: counts skipped input lines, clears the progress line, says the
// error on stderr, writes the report in --format and returns its exit code.
int deliver_report(reports::Report& report, const OpenedSource& opened, reports::Format format, const Context& context);

// Renders the report to --output (or stdout) in --format.
void write_report(const reports::Report& report, reports::Format format, const Context& context);
// The same to `output` ("" for stdout) instead of --output.
void write_report(const reports::Report& report, reports::Format format, const Context& context,
                  const std::string& output);

} // namespace dedupctl::commands
