#pragma once

// A shard's digest (--shard K/N --digest FILE) from the start of its run to its end.
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "commands/source.hpp"
#include "connectors/file/digest_file.hpp"
#include "core/merge/digest.hpp"
#include "reports/report.hpp"

#include <memory>
#include <optional>
#include <string>

namespace dedupctl::commands {

class ShardDigest {
public:
  // Opens FILE for writing (UsageError naming it when it cannot be), before anything is contacted.
  ShardDigest(const ShardFlags& options, core::ShardSpec shard);

  core::DigestRecorder* recorder() { return &m_recorder; }

  // Writes the records and the header from the shard's finished report; renames FILE into place.
  // A failed write is an UnreachableError naming FILE.
  void finish(const reports::Report& report, const OpenedSource& opened, const Context& context);

private:
  class WriterSink final : public core::DigestSink {
  public:
    explicit WriterSink(connectors::file::DigestWriter& writer) : m_writer(writer) {}
    void add_event(const core::Event& event, const core::Identity& identity, std::string_view dedup_key,
                   const core::RecordState* record) override {
      m_writer.add_event(event, identity, dedup_key, record);
    }
    void add_record(const core::DigestRecord& record) override { m_writer.add_record(record); }

  private:
    connectors::file::DigestWriter& m_writer;
  };

  core::ShardSpec m_shard;
  connectors::file::DigestWriter m_writer;
  WriterSink m_sink{m_writer};
  core::DigestRecorder m_recorder;
};

// With --shard or --digest, the run's digest; nullopt otherwise.
std::optional<ShardDigest> open_shard_digest(const ShardFlags& options, const SourceFlags& source);

} // namespace dedupctl::commands
