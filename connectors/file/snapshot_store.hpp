#pragma once

#include "core/dedup_store.hpp"
#include "core/flat_map.hpp"
#include "core/snapshot_line.hpp"

#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dedupctl::connectors::file {

// A snapshot file as a dedup store: the records as they were when it was taken, so an audit
// against it must use header().taken_at_ms as now. Loads the whole file (keys and value prefixes)
// into a flat index: about 60 bytes a record besides the key itself. A key given twice takes its
// last line.
class SnapshotStore final : public core::DedupStore {
public:
  // Throws UsageError naming the file (and line) when it cannot be read or parsed.
  explicit SnapshotStore(const std::string& path);

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override;
  std::string kind() const override { return "file"; }
  const core::SnapshotHeader& header() const { return m_header; }
  std::size_t size() const { return m_records.size(); }

private:
  // A record in compact form: its key in m_key_bytes, its value in m_values (values repeat:
  // "done" is stored once).
  struct Record {
    std::uint64_t key_offset = 0;
    std::uint32_t key_size = 0;
    std::uint32_t value = 0;
    std::int64_t pttl_ms = k_no_expiry;
  };
  static constexpr std::int64_t k_no_expiry = INT64_MIN;

  void add(const core::SnapshotEntry& entry);
  std::optional<std::uint32_t> find(std::string_view key) const; // the record's index
  std::string_view key_of(const Record& record) const {
    return {m_key_bytes.data() + record.key_offset, record.key_size};
  }

  core::SnapshotHeader m_header;
  std::string m_key_bytes;
  std::vector<Record> m_records;
  std::vector<std::string> m_values;
  std::unordered_map<std::string, std::uint32_t> m_value_index;
  std::uint32_t m_last_value = 0;
  // Key hash → record index + 1; keys whose hash another key took (2^-64 each) go to m_collided.
  core::FlatHashMap<std::uint32_t> m_index;
  std::unordered_map<std::string, std::uint32_t> m_collided;
};

} // namespace dedupctl::connectors::file
