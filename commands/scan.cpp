#include "commands/pipeline/scan.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/options.hpp"
#include "commands/shard.hpp"
#include "commands/source.hpp"
#include "connectors/file/key_archive.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

struct ScanFlags {
  SourceFlags source;
  ShardFlags shard;
  IdentityFlags identity;
  std::string semantic_window = core::format_duration(core::k_default_semantic_window_ms); // --window
  std::size_t examples = 5;
};

int run(const ScanFlags& options, Context& context) {
  // Everything the user typed is validated before anything is contacted.
  auto format = parse_output_format(context);
  ScanRequest request;
  request.fail_on = core::parse_fail_on(context.global.fail_on);
  request.fail_on_text = context.global.fail_on;
  request.identify = parse_identity(options.identity, context);
  request.analyzer.semantic_window_ms = core::parse_duration(options.semantic_window, "--window");
  request.analyzer.versions =
      parse_version_options(options.identity, !options.shard.digest.empty() || !options.shard.shard.empty());
  request.max_examples = options.examples;
  if (context.progress) {
    request.progress = [&context](std::int64_t events) { context.progress(fmt::format("scan: {} events", events)); };
  }
  SourceFlags source = options.source;
  apply_shard_options(options.shard, source, context, false);
  auto digest = open_shard_digest(options.shard, source);
  if (digest) {
    request.digest = digest->recorder();
  }
  connectors::file::AnalyzerArchives archives(context.global.verbose > 0);
  archives.attach(request.analyzer);

  OpenedSource opened = open_source(source, context);
  opened.info.payload_decoding = decoding_of(request.identify);
  reports::Report report;
  if (opened.failure) {
    report = unreachable_report("scan", *opened.failure, opened.info, context);
  } else {
    note_ranges(opened.info, context);
    report = run_scan(request, *opened.source, opened.info, context.now_ms());
    archives.note(context.global.verbose > 0);
  }
  if (digest) {
    complete_report(report, opened, context);
    digest->finish(report, opened, context);
  }
  return deliver_report(report, opened, format, context);
}

} // namespace

CommandRunner register_scan(CLI::App& app, Context& context) {
  auto options = std::make_shared<ScanFlags>();
  auto* sub = app.add_subcommand("scan", "What the log itself shows: duplicate ids, id reuse, semantic duplicates, "
                                         "events without ids");
  add_source_options(*sub, options->source);
  add_shard_options(*sub, options->shard);
  add_identity_options(*sub, options->identity);
  add_version_options(*sub, options->identity);
  auto* analysis = sub->add_option_group("Analysis");
  analysis
      ->add_option("--window", options->semantic_window,
                   "how close in time two events must be to be semantic duplicates")
      ->type_name("DURATION");
  add_examples_option(*analysis, options->examples);
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "scan";
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
