#pragma once

#include "core/event.hpp"
#include "core/merge/digest.hpp"
#include "core/source/kcat_line.hpp"
#include "core/source/range.hpp"
#include "core/util/offset_set.hpp"

#include <atomic>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <xxhash.h>

namespace dedupctl::connectors::file {

// Reads a kcat -J dump (NDJSON, "-" for stdin) as an event source. Partitions are discovered as
// they appear and each is filtered by the same plan.
class KcatFileSource final : public core::EventSource {
public:
  // Throws UsageError when the file cannot be opened.
  KcatFileSource(std::string path, core::PartitionPlan plan, bool skip_invalid, const std::atomic<bool>* stop = nullptr,
                 long start_byte = 0);
  // A shard reads every line and keeps the events of its partitions only.
  void set_shard(core::ShardSpec shard) { m_shard = shard; }
  // A hash of every byte read so far: shards of one dump agree on it once each read the whole file.
  std::uint64_t content_hash() const;
  ~KcatFileSource() override;
  KcatFileSource(const KcatFileSource&) = delete;
  KcatFileSource& operator=(const KcatFileSource&) = delete;

  // A malformed line is a UsageError naming the file and line, unless skip_invalid counts it.
  bool next_batch(core::EventBatch& batch) override;
  std::vector<core::PartitionPosition> positions() const override;

  std::int64_t invalid_lines() const { return m_invalid_lines; }
  // Records whose (topic, partition, offset) was already delivered (two dumps concatenated):
  // dropped, each record counts once.
  std::int64_t repeated_records() const { return m_repeated_records; }
  const std::string& path() const { return m_path; }

private:
  std::string m_path;
  core::PartitionPlan m_plan;
  bool m_skip_invalid;
  const std::atomic<bool>* m_stop;
  std::FILE* m_file = nullptr;
  bool m_owns_file = false;
  char* m_line = nullptr;
  std::size_t m_line_capacity = 0;
  std::int64_t m_line_number = 0;
  std::int64_t m_invalid_lines = 0;
  std::int64_t m_repeated_records = 0;
  core::KcatLineParser m_parser;
  std::optional<core::ShardSpec> m_shard;
  std::unique_ptr<XXH3_state_t, XXH_errorcode (*)(XXH3_state_t*)> m_hash{XXH3_createState(), XXH3_freeState};
  struct Partition {
    core::PartitionCursor cursor;
    core::OffsetSet delivered;
  };
  std::map<std::pair<std::string, std::int32_t>, Partition> m_partitions;
};

} // namespace dedupctl::connectors::file
