#include "commands/context.hpp"
#include "commands/options.hpp"
#include "connectors/file/output.hpp"
#include "connectors/redis/redis.hpp"
#include "core/errors.hpp"
#include "core/snapshot_line.hpp"
#include "core/store_uri.hpp"
#include "core/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

struct SnapshotOptions {
  std::string store;
  std::string match = "*";
};

int run(const SnapshotOptions& options, Context& context) {
  auto uri = core::parse_store_uri(options.store, "--store");
  if (uri.kind != core::StoreUri::Kind::Redis) {
    throw UsageError(fmt::format("--store {}: snapshot reads redis:// placements", uri.redacted()));
  }
  connectors::redis::RedisSettings settings;
  settings.uri = uri;
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  settings.stop = &context.stop;
  // The file appears whole or not at all: records go to a temporary sibling first. The header
  // needs the snapshot's time, known only once the scan starts, so records are kept until then.
  std::vector<std::string> lines;
  std::int64_t records = 0;
  std::int64_t taken_at = connectors::redis::scan_records(
      settings, options.match,
      [&](const connectors::redis::SnapshotRecord& record) {
        lines.push_back(core::format_snapshot_entry(core::SnapshotEntry{record.key, record.pttl_ms, record.value}));
        ++records;
      },
      [&](std::int64_t seen) {
        if (context.progress) {
          context.progress(fmt::format("snapshot: {} keys scanned, {} records", seen, records));
        }
      });
  if (context.progress) {
    context.progress("");
  }
  connectors::file::ReportOutput output(context.global.output);
  std::string header = core::format_snapshot_header(core::SnapshotHeader{taken_at, uri.redacted(), options.match});
  fmt::print(output.stream(), "{}\n", header);
  for (const auto& line : lines) {
    fmt::print(output.stream(), "{}\n", line);
  }
  output.commit();
  context.note(fmt::format("snapshot of {} records matching '{}' from {} taken at {}{}", records, options.match,
                           uri.redacted(), core::format_time(taken_at),
                           context.global.output.empty() ? "" : " written to " + context.global.output));
  return k_exit_ok;
}

} // namespace

CommandRunner register_snapshot(CLI::App& app, Context& context) {
  auto options = std::make_shared<SnapshotOptions>();
  auto* sub = app.add_subcommand("snapshot", "Export a placement's records (SCAN, PTTL, value prefix) to a file for "
                                             "offline audits with --store file:PATH");
  sub->add_option("--store", options->store, "redis://[user:pass@]host:port[/db] or redis+unix:///path")
      ->required()
      ->type_name("URI");
  sub->add_option("--match", options->match, "SCAN MATCH pattern of the dedup keys")->type_name("PATTERN");
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "snapshot";
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
