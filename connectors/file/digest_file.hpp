#pragma once

#include "connectors/file/output.hpp"
#include "connectors/file/record_runs.hpp"
#include "core/merge/digest.hpp"

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

// A shard's digest file (--digest FILE): its header (core::DigestHeader as JSON) and its records,
// once in each order a merge reads them in, and its events by seq for the examples. Written whole
// or not at all (ReportOutput), little-endian as the machine that wrote it; see dedupctl-merge(1).
namespace dedupctl::connectors::file {

class DigestWriter {
public:
  // Throws UsageError naming the path when it cannot be written (or TMPDIR, where the records are
  // sorted). `run_records`: how many records are sorted in memory at a time (RecordRuns).
  explicit DigestWriter(const std::string& path, std::size_t run_records = RecordRuns::k_default_run_records);
  ~DigestWriter();
  DigestWriter(const DigestWriter&) = delete;
  DigestWriter& operator=(const DigestWriter&) = delete;

  // Events in canonical order.
  void add_event(const core::Event& event, const core::Identity& identity, std::string_view dedup_key,
                 const core::RecordState* record);
  // The record of each event with an id, in canonical order (core::DigestSink::add_record).
  void add_record(const core::DigestRecord& record) { m_records.add(record); }
  // Writes the records in each order, then the header, and renames the file into place. A failed
  // write throws UnreachableError naming the file.
  void finish(const core::DigestHeader& header);

private:
  void write(const void* data, std::size_t size);

  std::string m_path;
  ReportOutput m_output;
  std::FILE* m_out;
  std::uint64_t m_offset = 0;
  std::uint64_t m_events = 0;
  std::map<std::string, std::uint32_t, std::less<>> m_topics;
  RecordRuns m_records;
};

// Reads a digest: its header at once, its sections as streams (each with a file handle of its own).
class DigestFile {
public:
  // Throws UsageError naming the path when it is missing, unreadable, or not a whole digest.
  explicit DigestFile(std::string path);

  const std::string& path() const { return m_path; }
  const core::DigestHeader& header() const { return m_header; }
  std::unique_ptr<core::DigestRecords> records(core::DigestOrder order) const;
  std::unique_ptr<core::DigestEvents> events() const;

  struct Layout {
    std::uint64_t events_at = 0, events = 0;
    std::uint64_t records = 0;
    std::uint64_t id_at = 0, semantic_at = 0, key_at = 0, key_records = 0;
    std::uint64_t header_at = 0, header_size = 0;
  };

private:
  std::string m_path;
  Layout m_layout;
  core::DigestHeader m_header;
  std::vector<std::string> m_topics;
};

} // namespace dedupctl::connectors::file
