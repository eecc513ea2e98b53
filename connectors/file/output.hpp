#pragma once

#include <cstdio>
#include <string>

namespace dedupctl::connectors::file {

// Where a report goes: stdout ("", "-" or /dev/stdout); a regular file, which appears whole or not
// at all (written to a temporary sibling and renamed on commit), so that an interrupted run never
// leaves half a report; or a device, FIFO or socket, written in place (a rename would replace it).
class ReportOutput {
public:
  // Throws UsageError naming the path when it cannot be written (a directory, no permission).
  explicit ReportOutput(const std::string& path);
  ~ReportOutput();
  ReportOutput(const ReportOutput&) = delete;
  ReportOutput& operator=(const ReportOutput&) = delete;

  std::FILE* stream() const { return m_stream; }
  bool is_terminal() const;
  // Flushes, closes and renames into place. A failed write (a full disk, /dev/full) throws
  // UnreachableError naming the output and the cause: the report was lost, and the exit code says so.
  void commit();

private:
  std::string m_path;
  std::string m_temp;
  std::FILE* m_stream = nullptr;
  bool m_committed = false;
  bool m_in_place = false; // a device, FIFO or socket
};

} // namespace dedupctl::connectors::file
