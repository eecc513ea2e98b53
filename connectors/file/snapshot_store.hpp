#pragma once

#include "core/dedup_store.hpp"
#include "core/snapshot_line.hpp"

#include <optional>
#include <string>
#include <unordered_map>

namespace dedupctl::connectors::file {

// A snapshot file as a dedup store: the records as they were when it was taken, so an audit
// against it must use header().taken_at_ms as now. Loads the whole file (keys and value prefixes).
class SnapshotStore final : public core::DedupStore {
public:
  // Throws UsageError naming the file (and line) when it cannot be read or parsed.
  explicit SnapshotStore(const std::string& path);

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override;
  std::string kind() const override { return "file"; }
  const core::SnapshotHeader& header() const { return m_header; }
  std::size_t size() const { return m_records.size(); }

private:
  struct Record {
    std::optional<std::int64_t> pttl_ms;
    std::string value;
  };
  core::SnapshotHeader m_header;
  std::unordered_map<std::string, Record> m_records;
};

} // namespace dedupctl::connectors::file
