#include "commands/delivery.hpp"

#include "connectors/file/output.hpp"
#include "core/store/secrets.hpp"
#include "core/util/errors.hpp"
#include "reports/printable.hpp"

#include <algorithm>
#include <cstdio>

#include <fmt/format.h>

namespace dedupctl::commands {

reports::Report unreachable_report(const std::string& command, const std::string& error, const core::SourceInfo& info,
                                   const Context& context) {
  reports::Report report;
  report.command = command;
  report.generated_at_ms = context.now_ms();
  report.complete = false;
  report.error = error;
  report.exit_code = k_exit_unreachable;
  report.fail_on = context.global.fail_on;
  report.source = info;
  return report;
}

namespace {

// Says where each setting an option sets got its value. A setting is named as people read it ("max
// lag"); its option is the same words with dashes ("max-lag"), except the semantic window (--window).
void note_setting_origins(reports::Report& report, const Context& context) {
  for (const auto& [name, value] : report.settings) {
    std::string option = name == "semantic window" ? "window" : name;
    std::replace(option.begin(), option.end(), ' ', '-');
    if (context.has_option(option)) {
      report.settings_origin[name] = std::string(core::origin_name(context.origin_of(option)));
    }
  }
}

} // namespace

void complete_report(reports::Report& report, const OpenedSource& opened, const Context& context) {
  note_setting_origins(report, context);
  if (opened.file && report.source) {
    report.source->invalid_lines = opened.file->invalid_lines();
    report.source->repeated_records = opened.file->repeated_records();
  }
}

int deliver_report(reports::Report& report, const OpenedSource& opened, reports::Format format,
                   const Context& context) {
  complete_report(report, opened, context);
  if (context.progress) {
    context.progress("");
  }
  if (report.error) {
    context.error(*report.error);
  }
  write_report(report, format, context);
  return report.exit_code;
}

void write_report(const reports::Report& report, reports::Format format, const Context& context) {
  write_report(report, format, context, context.global.output);
}

void write_report(const reports::Report& report, reports::Format format, const Context& context,
                  const std::string& output_path) {
  connectors::file::ReportOutput output(output_path);
  reports::RenderOptions render_options;
  render_options.color = !context.global.no_color && output.is_terminal();
  // The last line of defence for secrets: whatever a message echoed, in any spelling typed. The
  // report's strings are scrubbed, not the rendered text, whose syntax a secret could match.
  auto scrubbed =
      reports::with_strings_fixed(report, [&](std::string& s, bool) { s = core::scrub_secrets(s, context.secrets); });
  std::string text = reports::render_to_string(scrubbed, format, render_options);
  std::fwrite(text.data(), 1, text.size(), output.stream());
  output.commit();
}

} // namespace dedupctl::commands
