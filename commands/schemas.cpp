// dedupctl schemas export: the schemas a range's framed payloads and keys use, fetched from the
// registry (with their references) into a directory that --schemas reads, so that a post-mortem on
// a kcat dump works on a laptop without the registry.
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "commands/settings.hpp"
#include "commands/source.hpp"
#include "connectors/schema/decoder.hpp"
#include "core/util/errors.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <set>

namespace dedupctl::commands {

namespace {

struct ExportFlags {
  SourceFlags source;
  IdentityFlags identity; // only the registry's flags are offered
  std::string out;
  std::vector<std::uint32_t> ids;
};

int run_export(const ExportFlags& options, Context& context) {
  auto settings = registry_settings(options.identity, context);
  if (!settings) {
    throw UsageError("schemas export needs --registry URL (or DEDUPCTL_REGISTRY_URL)");
  }
  if (options.out.empty()) {
    throw UsageError("schemas export needs --out DIR");
  }
  connectors::schema::make_export_directory(options.out);
  if (options.source.topics.empty() && options.source.input.empty() && options.ids.empty()) {
    throw UsageError("schemas export needs --topic T (with --bootstrap-server), --input FILE or --schema-id N: "
                     "which schemas to export");
  }
  connectors::schema::SchemaDecoder decoder(connectors::schema::open_registry(*settings));
  std::set<std::uint32_t> ids(options.ids.begin(), options.ids.end());
  if (!options.source.topics.empty() || !options.source.input.empty()) {
    OpenedSource opened = open_source(options.source, context);
    if (opened.failure) {
      throw UnreachableError(*opened.failure);
    }
    core::EventBatch batch;
    std::int64_t events = 0;
    while (opened.source->next_batch(batch)) {
      for (const auto& event : batch.events) {
        for (const auto& bytes : {event.payload, event.key}) {
          if (auto frame = bytes ? core::parse_wire_frame(*bytes) : std::nullopt) {
            ids.insert(frame->schema_id);
          }
        }
      }
      events += static_cast<std::int64_t>(batch.events.size());
    }
    context.note(fmt::format("{} events read, {} schema ids framed in them", events, ids.size()));
  }
  std::vector<std::string> unknown;
  for (auto id : ids) {
    std::string why = decoder.prepare(id);
    if (why.find("does not know") != std::string::npos) {
      unknown.push_back(std::to_string(id));
    } else if (!why.empty()) {
      context.note(fmt::format("schema id {}: exported, but {}", id, why));
    }
  }
  auto fetched = decoder.fetched();
  connectors::schema::write_export(options.out, fetched);
  fmt::print("exported {} schemas ({} framed, {} referenced) from {} to {}\n", fetched.size(),
             ids.size() - unknown.size(), fetched.size() - (ids.size() - unknown.size()),
             connectors::schema::strip_credentials(settings->url, nullptr), options.out);
  if (!unknown.empty()) {
    context.note(fmt::format("schema ids the registry does not know (not exported): {}", fmt::join(unknown, ", ")));
    return k_exit_findings;
  }
  return k_exit_ok;
}

} // namespace

CommandRunner register_schemas(CLI::App& app, Context& context) {
  auto* sub = app.add_subcommand("schemas", "The schemas of framed payloads (schema registry wire format)");
  sub->require_subcommand(1);
  auto options = std::make_shared<ExportFlags>();
  auto* exporter = sub->add_subcommand(
      "export", "Fetch the schemas a range's payloads and keys use (with their references) into DIR, for --schemas");
  add_source_options(*exporter, options->source);
  add_registry_options(*exporter, options->identity, false);
  exporter->add_option("--out", options->out, "the directory to write <id>.json into (made if missing)")
      ->type_name("DIR");
  exporter->add_option("--schema-id", options->ids, "export this schema id too (repeatable)")
      ->type_name("N")
      ->allow_extra_args(false);
  return [options, &context, exporter]() -> int {
    if (!exporter->parsed()) {
      return -1;
    }
    context.command = "schemas";
    return run_export(*options, context);
  };
}

} // namespace dedupctl::commands
