#include "commands/shard.hpp"

#include "core/store/secrets.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

ShardDigest::ShardDigest(const ShardFlags& options, core::ShardSpec shard)
    : m_shard(shard), m_writer(options.digest), m_recorder(m_sink) {}

void ShardDigest::finish(const reports::Report& report, const OpenedSource& opened, const Context& context) {
  auto scrub = [&](std::string s) { return core::scrub_secrets(s, context.secrets); };
  core::DigestHeader header;
  header.command = report.command;
  header.shard = m_shard;
  header.generated_at_ms = report.generated_at_ms;
  header.complete = report.complete;
  header.exit_code = report.exit_code;
  if (report.error) {
    header.error = scrub(*report.error);
  }
  for (const auto& [name, value] : report.settings) {
    header.settings.emplace_back(name, scrub(value));
    header.settings_key += fmt::format("{}={}; ", name, scrub(value));
  }
  for (const auto& [name, value] : m_recorder.settings) {
    header.settings_key += fmt::format("{}={}; ", name, scrub(value));
  }
  header.settings_key += fmt::format("max examples={}", m_recorder.log_options.max_examples);
  header.settings_origin = report.settings_origin;
  header.fail_on = report.fail_on;
  header.log_options = m_recorder.log_options;
  header.check_keys = m_recorder.check_keys();
  header.range_key = opened.range_key;
  if (opened.file) {
    header.range_key += fmt::format(" of {:016x}", opened.file->content_hash());
  }
  header.range_order = opened.range_order;
  if (report.source) {
    header.source = *report.source;
    header.source.bootstrap = scrub(header.source.bootstrap);
  }
  header.log = m_recorder.log;
  header.audit = m_recorder.audit;
  m_writer.finish(header);
}

std::optional<ShardDigest> open_shard_digest(const ShardFlags& options, const SourceFlags& source) {
  if (!source.shard) {
    return std::nullopt;
  }
  return std::optional<ShardDigest>(std::in_place, options, *source.shard);
}

} // namespace dedupctl::commands
