#include "commands/context.hpp"
#include "commands/options.hpp"
#include "commands/settings.hpp"
#include "connectors/aws/aws.hpp"
#include "connectors/file/output.hpp"
#include "connectors/postgres/inbox.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/redis/redis.hpp"
#include "core/store/dynamodb.hpp"
#include "core/store/inbox_snapshot.hpp"
#include "core/store/layout.hpp"
#include "core/store/snapshot_line.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dedupctl::commands {

namespace {

struct SnapshotFlags {
  std::string store;
  std::string match = "*";
  std::string consumer;
  InboxFlags inbox;
  std::string layout = "plain";
  std::string collection;
  std::vector<std::string> layout_options;
  int segments = 4;
};

// A DynamoDB table's records by a parallel Scan (Segment/TotalSegments), what it costs said first.
int snapshot_dynamodb(const SnapshotFlags& options, const core::StoreUri& uri, Context& context) {
  auto layout = core::find_layout(options.layout);
  for (const auto& option : options.layout_options) {
    core::apply_layout_option(layout, option);
  }
  if (options.match != "*") {
    throw UsageError("--match is for Redis keys: a DynamoDB snapshot holds the layout's records (items of another "
                     "partition or shape are left out)");
  }
  if (options.segments < 1 || options.segments > 1'000'000) {
    throw UsageError(fmt::format("--segments {}: give 1 to 1000000 (DynamoDB's TotalSegments)", options.segments));
  }
  auto table = connectors::aws::open_table(aws_settings(uri, layout, context));
  for (auto& secret : table.client->credentials().secrets()) {
    context.secrets.push_back(std::move(secret));
  }
  context.note(fmt::format("scanning table {} in {} segments: about {} items, {} bytes, about {:.0f} read units "
                           "(eventually consistent)",
                           uri.table, options.segments, table.facts.item_count, table.facts.size_bytes,
                           core::scan_read_units(table.facts.size_bytes)));
  std::int64_t taken_at = context.now_ms();
  std::vector<std::string> lines;
  auto scanned = connectors::aws::scan_table(*table.client, options.segments, [&](const core::DynamoRecord& record) {
    lines.push_back(core::format_snapshot_entry(
        core::SnapshotEntry{record.key, std::nullopt, core::snapshot_value(layout, record.value)}));
    if (context.progress && lines.size() % 100'000 == 0) {
      context.progress(fmt::format("snapshot: {} records", lines.size()));
    }
  });
  if (context.progress) {
    context.progress("");
  }
  connectors::file::ReportOutput output(context.global.output);
  fmt::print(output.stream(), "{}\n",
             core::format_snapshot_header(core::SnapshotHeader{taken_at, uri.redacted(), "*", "", layout.name}));
  for (const auto& line : lines) {
    fmt::print(output.stream(), "{}\n", line);
  }
  output.commit();
  context.note(fmt::format("snapshot of {} records ({} items scanned, {:.1f} read units consumed) from {} taken at "
                           "{}{}",
                           lines.size(), scanned, table.client->consumed_units(), uri.redacted(),
                           core::format_time(taken_at),
                           context.global.output.empty() ? "" : " written to " + context.global.output));
  return k_exit_ok;
}

// COPY of the inbox's rows, behind a header with the time the export started.
int snapshot_inbox(const SnapshotFlags& options, const core::StoreUri& uri, Context& context) {
  auto layout = core::find_layout(options.layout);
  if (layout.name != "plain" && !layout.inbox) {
    throw UsageError(fmt::format("--layout {} is a Redis layout: an inbox's snapshot holds its rows", layout.name));
  }
  if (layout.inbox_schema.time == core::InboxSchema::Time::Expiry) {
    throw UsageError(fmt::format("--layout {}: its rows say when they lapse, which an inbox snapshot (processed_at) "
                                 "cannot keep; audit the table itself",
                                 layout.name));
  }
  auto settings = inbox_settings(uri, options.inbox, options.consumer, context, &layout);
  std::vector<std::string> lines;
  std::int64_t taken_at = connectors::postgres::export_inbox(settings, [&](const std::string& line) {
    lines.push_back(line);
    if (context.progress && lines.size() % 100'000 == 0) {
      context.progress(fmt::format("snapshot: {} rows", lines.size()));
    }
  });
  if (context.progress) {
    context.progress("");
  }
  connectors::file::ReportOutput output(context.global.output);
  fmt::print(
      output.stream(), "{}\n",
      core::format_inbox_snapshot_header(core::InboxSnapshotHeader{taken_at, uri.redacted(), options.inbox.table}));
  for (const auto& line : lines) {
    fmt::print(output.stream(), "{}\n", line);
  }
  output.commit();
  context.note(fmt::format("snapshot of {} rows of {} from {} taken at {}{}", lines.size(), options.inbox.table,
                           uri.redacted(), core::format_time(taken_at),
                           context.global.output.empty() ? "" : " written to " + context.global.output));
  return k_exit_ok;
}

int run(const SnapshotFlags& options, Context& context) {
  auto uri = core::parse_store_uri(options.store, "--store");
  if (uri.kind == core::StoreUri::Kind::Postgres) {
    connectors::postgres::check_conninfo(uri.conninfo, "--store");
    return snapshot_inbox(options, uri, context);
  }
  if (uri.kind == core::StoreUri::Kind::Dynamodb) {
    return snapshot_dynamodb(options, uri, context);
  }
  if (uri.kind != core::StoreUri::Kind::Redis) {
    throw UsageError(
        fmt::format("--store {}: snapshot reads redis://, postgres:// and dynamodb:// placements", uri.redacted()));
  }
  auto settings = redis_settings(uri, context);
  settings.layout = core::find_layout(options.layout);
  if (settings.layout.inbox) {
    throw UsageError(fmt::format("--layout {} is an inbox layout: it reads postgres:// stores", options.layout));
  }
  for (const auto& option : options.layout_options) {
    core::apply_layout_option(settings.layout, option);
  }
  if (core::one_key(settings.layout)) {
    settings.collection = core::collection_key(settings.layout, options.collection);
  }
  // The file appears whole or not at all: records go to a temporary sibling first. The header
  // needs the snapshot's time, known only once the scan starts, so records are kept until then.
  std::vector<std::string> lines;
  std::int64_t records = 0;
  auto scanned = connectors::redis::scan_records(
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
  std::int64_t taken_at = scanned.started_ms;
  // The header says which servers were scanned: every master of a cluster, each once.
  std::string nodes = fmt::format("{}", fmt::join(scanned.nodes, ","));
  connectors::file::ReportOutput output(context.global.output);
  std::string header = core::format_snapshot_header(
      core::SnapshotHeader{taken_at, uri.redacted(), options.match, nodes, settings.layout.name});
  fmt::print(output.stream(), "{}\n", header);
  for (const auto& line : lines) {
    fmt::print(output.stream(), "{}\n", line);
  }
  output.commit();
  context.note(fmt::format("snapshot of {} records matching '{}' from {} ({}) taken at {}{}", records, options.match,
                           uri.redacted(), scanned.nodes.size() == 1 ? "one server" : "masters " + nodes,
                           core::format_time(taken_at),
                           context.global.output.empty() ? "" : " written to " + context.global.output));
  return k_exit_ok;
}

} // namespace

CommandRunner register_snapshot(CLI::App& app, Context& context) {
  auto options = std::make_shared<SnapshotFlags>();
  auto* sub = app.add_subcommand("snapshot", "Export a placement's records (SCAN, PTTL, value prefix) to a file for "
                                             "offline audits with --store file:PATH");
  sub->add_option("--store", options->store,
                  "redis://[user:pass@]host:port[/db], redis+unix:///path, redis+cluster://h1:p1,h2:p2 (every "
                  "master), redis+sentinel://s1:26379/MASTER, postgres://… (an inbox table) or "
                  "dynamodb://TABLE[?region=R&endpoint=URL]")
      ->required()
      ->type_name("URI");
  sub->add_option("--match", options->match,
                  "SCAN MATCH pattern of the dedup keys (Redis; of the members or fields of a one-key layout)")
      ->type_name("PATTERN");
  sub->add_option("--layout", options->layout,
                  "the record layout (dedupctl audit --layout): a JSON record keeps the fields its rules read, a "
                  "one-key layout's collection is read with HSCAN, SSCAN or ZSCAN")
      ->type_name("NAME");
  sub->add_option("--collection", options->collection, "the one key of a spring-hash, camel-set or zset layout")
      ->type_name("KEY");
  sub->add_option("--layout-option", options->layout_options, "NAME=VALUE for --layout json (repeatable)")
      ->type_name("NAME=VALUE");
  sub->add_option("--segments", options->segments,
                  "dynamodb://: scan the table in this many segments at once (a parallel Scan; default 4)")
      ->type_name("N");
  auto* inbox = sub->add_option_group("Inbox", "The inbox table of a postgres:// store");
  add_inbox_options(*inbox, options->inbox);
  inbox->add_option("--consumer", options->consumer, "export this consumer's rows only")->type_name("NAME");
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "snapshot";
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
