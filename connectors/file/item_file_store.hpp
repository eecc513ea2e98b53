#pragma once

#include "core/store/dedup_store.hpp"
#include "core/store/layout.hpp"

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace dedupctl::connectors::file {

// A DynamoDB table read offline as a dedup store: the JSON `aws dynamodb scan --output json` prints,
// or an export to S3 in DYNAMODB_JSON (gzipped lines of {"Item":{…}}: one file, or the export's
// directory, whose data/*.json.gz are all read). Loaded whole into memory at construction.
class ItemFileStore final : public core::DedupStore {
public:
  // Whether `path` looks like one (a directory, a gzip file, or JSON text), not a snapshot.
  static bool is_item_file(const std::string& path);
  // Throws UsageError naming the file (and line) for what is not one, or a scan cut short.
  ItemFileStore(const std::string& path, core::RecordLayout layout);
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override;
  std::string kind() const override { return "file"; }
  std::size_t size() const { return m_records.size(); }
  std::size_t files() const { return m_files; }
  // The newest modification time of the files read: when the scan or the export was written.
  std::int64_t written_at_ms() const { return m_written_at_ms; }

private:
  void read(const std::string& path);

  core::RecordLayout m_layout;
  std::unordered_map<std::string, std::string> m_records;
  std::size_t m_files = 0;
  std::int64_t m_written_at_ms = 0;
};

} // namespace dedupctl::connectors::file
