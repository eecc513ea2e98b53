#include "commands/pipeline/merge.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/options.hpp"
#include "connectors/file/digest_file.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

int run(const std::vector<std::string>& paths, Context& context) {
  auto format = parse_output_format(context);
  std::vector<connectors::file::DigestFile> files;
  files.reserve(paths.size());
  for (const auto& path : paths) {
    files.emplace_back(path);
  }
  std::vector<ShardInput> shards;
  for (const auto& file : files) {
    ShardInput shard;
    shard.name = file.path();
    shard.header = file.header();
    shard.by_id = file.records(core::DigestOrder::Id);
    shard.by_semantic = file.records(core::DigestOrder::Semantic);
    shard.by_key = file.records(core::DigestOrder::Key);
    shard.events = file.events();
    shard.replay = file.events();
    shards.push_back(std::move(shard));
  }
  reports::Report report = merge_shards(shards);
  if (report.error) {
    context.error(*report.error);
  }
  write_report(report, format, context);
  return report.exit_code;
}

} // namespace

CommandRunner register_merge(CLI::App& app, Context& context) {
  auto paths = std::make_shared<std::vector<std::string>>();
  auto* sub = app.add_subcommand("merge", "Put the digests of N shards (scan or audit --shard K/N --digest FILE) "
                                          "together into the report one process over the whole range would write");
  sub->add_option("digests", *paths, "the digest of every shard, in any order")->type_name("DIGEST")->required();
  return [paths, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "merge";
    return run(*paths, context);
  };
}

} // namespace dedupctl::commands
