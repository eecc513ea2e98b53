#include "commands/context.hpp"
#include "commands/options.hpp"
#include "commands/placement/family.hpp"
#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

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

// The flags parsed: the layout accepted by the store's family, the collection of a one-key layout;
// then the family exports its records.
int run(const SnapshotFlags& flags, Context& context) {
  SnapshotOptions options;
  options.uri = core::parse_store_uri(flags.store, "--store");
  placement::require(options.uri, placement::StoreUse::Snapshot);
  const auto& family = commands::family(options.uri.kind);
  family.check(options.uri, flags.inbox); // before anything is contacted
  options.layout = core::find_layout(flags.layout);
  for (const auto& option : flags.layout_options) {
    core::apply_layout_option(options.layout, option);
  }
  family.accept(options.layout);
  if (options.layout.version_guard()) {
    throw UsageError(fmt::format("--layout {}: snapshot does not export a projection; dedupctl audit reads it live",
                                 options.layout.name));
  }
  if (core::one_key(options.layout)) {
    options.collection = core::collection_key(options.layout, flags.collection);
  }
  options.match = flags.match;
  options.segments = flags.segments;
  options.inbox = flags.inbox;
  options.consumer = flags.consumer;
  return family.take_snapshot(options, context);
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
  sub->add_option("--collection", options->collection,
                  "the one key of a spring-hash, camel-set, zset or redis-bloom layout")
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
    context.output_is_data = true;
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
