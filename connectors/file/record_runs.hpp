#pragma once

#include "connectors/file/temp_file.hpp"
#include "core/merge/digest.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

// The records of a shard's digest, sorted in each order a merge reads them in, in memory bounded by
// one run whatever the shard reads (an external sort, as sort(1) does it): records are held until
// `run_records` of them are, then sorted in each order and appended as runs to an unlinked
// temporary file in TMPDIR; at the end each order's runs are merged. A shard whose records fit in
// one run never writes the temporary file. Nothing is left behind, whatever ends the process.
namespace dedupctl::connectors::file {

class RecordRuns {
public:
  static constexpr std::size_t k_default_run_records = std::size_t{64} << 10; // 3 MiB

  // Creates the temporary file at once: a UsageError naming TMPDIR when it cannot.
  explicit RecordRuns(std::size_t run_records = k_default_run_records);

  void add(const core::DigestRecord& record);
  std::uint64_t count() const { return m_count; }
  // Of the records in the key order: those whose key_hash is not 0.
  std::uint64_t keyed() const { return m_keyed; }
  std::size_t runs() const { return m_runs.size(); }

  // Hands the records of `order` to `write` in that order, a piece at a time. A failed read or
  // write of the temporary file throws UnreachableError naming it.
  void write_sorted(core::DigestOrder order, const std::function<void(const void*, std::size_t)>& write);

private:
  struct Run {
    std::uint64_t at[3] = {}; // where its records of each order start in the temporary file
    std::uint64_t count = 0;
    std::uint64_t keyed = 0;
  };
  void spill();

  std::size_t m_run_records;
  std::vector<core::DigestRecord> m_buffer;
  std::vector<Run> m_runs;
  std::uint64_t m_count = 0;
  std::uint64_t m_keyed = 0;
  TempFile m_file;
};

} // namespace dedupctl::connectors::file
