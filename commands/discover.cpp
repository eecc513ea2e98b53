#include "commands/pipeline/discover.hpp"
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "commands/placement/family.hpp"
#include "commands/source.hpp"
#include "connectors/file/output.hpp"
#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"
#include "reports/discover.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

struct DiscoverFlags {
  SourceFlags source;
  IdentityFlags identity;
  std::string store;
  std::size_t sample = 200;
  std::size_t scan_limit = 10000;
};

// The audit that reads the store as the candidate says, with the source as discover was given it.
std::string audit_command(const DiscoverFlags& options, const core::StoreUri& uri, const Context& context,
                          const core::LayoutCandidate& c) {
  auto quoted = [](std::string_view text) {
    std::string out = "'";
    for (char ch : core::escape_non_utf8(text)) {
      out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    }
    return out + "'";
  };
  std::string line = "dedupctl audit";
  if (!options.source.input.empty()) {
    line += " --input " + quoted(options.source.input);
  } else {
    if (!context.global.bootstrap.empty()) {
      line += " --bootstrap-server " + quoted(context.global.bootstrap);
    }
    for (const auto& topic : options.source.topics) {
      line += " --topic " + quoted(topic);
    }
  }
  if (!options.source.group.empty()) {
    line += " --group " + quoted(options.source.group);
  }
  if (options.identity.id != IdentityFlags().id) {
    line += " --id " + quoted(options.identity.id);
  }
  line += " --store " + quoted(uri.redacted());
  for (const auto& [flag, value] : core::audit_flags(c)) {
    line += " " + flag + " " + (flag == "--layout" ? value : quoted(value)); // a layout's name needs no quotes
  }
  return line;
}

int render(const DiscoverFlags& options, const core::StoreUri& uri, const DiscoverResult& result, Context& context) {
  reports::DiscoverReport report;
  report.sampled_ids = result.ids.size();
  report.sampled_keys = result.keys_sampled;
  report.tried = result.tried;
  report.skipped = result.skipped;
  for (const auto& c : result.candidates) {
    report.candidates.push_back({c, audit_command(options, uri, context, c)});
  }
  connectors::file::ReportOutput output(context.global.output);
  if (context.global.format == "json") {
    reports::render_discover_json(report, output.stream());
  } else {
    reports::render_discover_text(report, output.stream());
  }
  output.commit();
  if (result.candidates.empty()) {
    bool inbox = placement::family_row(uri.kind).keyed_by_event_id;
    context.error(fmt::format("no layout finds the records of the {} sampled ids among {} {} of {}; tried: {}",
                              result.ids.size(), result.keys_sampled, inbox ? "tables" : "keys", uri.redacted(),
                              result.tried.empty() ? std::string(inbox ? "nothing (no table has the columns of an "
                                                                         "inbox layout)"
                                                                       : "nothing (no key held a sampled id)")
                                                   : fmt::format("{}", fmt::join(result.tried, "; "))) +
                  (result.skipped.empty() ? "" : fmt::format("; skipped: {}", fmt::join(result.skipped, "; "))));
    return k_exit_findings;
  }
  return k_exit_ok;
}

int run(const DiscoverFlags& options, Context& context) {
  if (context.global.format != "text" && context.global.format != "json") {
    throw UsageError(fmt::format("--format {}: discover writes text or json", context.global.format));
  }
  auto uri = core::parse_store_uri(options.store, "--store");
  placement::require(uri, placement::StoreUse::Discover);
  const auto& family = commands::family(uri.kind);
  family.check(uri); // before anything is contacted
  DiscoverFlags flags = options;
  if (flags.source.from == SourceFlags().from && flags.source.input.empty()) {
    flags.source.from = fmt::format("-{}", flags.sample); // the newest events: their records are likeliest there
  }
  DiscoverRequest request;
  request.identify = parse_identity(flags.identity, context);
  request.sample = flags.sample;
  request.scan_limit = flags.scan_limit;
  OpenedSource opened = open_source(flags.source, context);
  if (opened.failure) {
    throw UnreachableError(*opened.failure);
  }
  DiscoverResult result = family.discover_in(uri, request, *opened.source, context);
  if (result.ids.empty()) {
    throw UsageError("no event in the range carries an id: check --id, or widen --from");
  }
  return render(flags, uri, result, context);
}

} // namespace

CommandRunner register_discover(CLI::App& app, Context& context) {
  auto options = std::make_shared<DiscoverFlags>();
  auto* sub = app.add_subcommand("discover", "Find the record layout, key template and collection under which a "
                                             "store holds a topic's event ids, and the audit command to run");
  add_source_options(*sub, options->source);
  add_identity_options(*sub, options->identity);
  auto* group = sub->add_option_group("Discover");
  group
      ->add_option("--store", options->store,
                   "redis://…, redis+cluster://…, redis+sentinel://…, or postgres://… (its tables' columns)")
      ->required()
      ->type_name("URI");
  group->add_option("--sample", options->sample, "distinct event ids to sample (the newest, unless --from)")
      ->type_name("N")
      ->check(CLI::Range(1, 100000));
  group
      ->add_option("--scan-limit", options->scan_limit,
                   "keys to sample with SCAN (never KEYS); for PostgreSQL, tables read from the catalog")
      ->type_name("N")
      ->check(CLI::Range(1, 10000000));
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "discover";
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
