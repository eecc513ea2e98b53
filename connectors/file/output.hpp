#pragma once

#include <cstdio>
#include <string>

namespace dedupctl::connectors::file {

// Where a report goes: stdout, or a file that appears whole or not at all (written to a
// temporary sibling and renamed on commit), so that an interrupted run never leaves half a report.
class ReportOutput {
public:
  // Empty path or "-": stdout. Throws UsageError when the file cannot be created.
  explicit ReportOutput(const std::string& path);
  ~ReportOutput();
  ReportOutput(const ReportOutput&) = delete;
  ReportOutput& operator=(const ReportOutput&) = delete;

  std::FILE* stream() const { return m_stream; }
  bool is_terminal() const;
  // Flushes and renames into place. Throws UsageError on a write error.
  void commit();

private:
  std::string m_path;
  std::string m_temp;
  std::FILE* m_stream = nullptr;
  bool m_committed = false;
};

} // namespace dedupctl::connectors::file
