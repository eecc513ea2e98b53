#pragma once

#include "core/merge/digest.hpp"
#include "reports/report.hpp"

#include <memory>
#include <string>
#include <vector>

namespace dedupctl::commands {

// One shard's digest as the merge reads it.
struct ShardInput {
  std::string name; // the file, for messages
  core::DigestHeader header;
  std::unique_ptr<core::DigestRecords> by_id;
  std::unique_ptr<core::DigestRecords> by_semantic;
  std::unique_ptr<core::DigestRecords> by_key;
  std::unique_ptr<core::DigestEvents> events; // for the examples
  std::unique_ptr<core::DigestEvents> replay; // an audit's events, classified again in canonical order
};

// The report one process over the whole range would have written, from the digests of all N
// shards. Refuses (UsageError naming the files) shards of different commands, settings, ranges or
// N, and a shard missing or given twice; a shard whose run was incomplete makes the report
// incomplete (exit 3).
reports::Report merge_shards(std::vector<ShardInput>& shards);

} // namespace dedupctl::commands
