#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace dedupctl::connectors::file {

// Throws UsageError naming `what` when `path` is a directory (which reads as an empty file).
void refuse_directory(const std::string& path, std::string_view what);

// The whole file; throws UsageError naming it and `what` (the flag or argument) when unreadable.
std::string read_text_file(const std::string& path, std::string_view what);

// Opens the snapshot `path` (--store file:) into `in`, and parses its first line with `parse` (false,
// with its error set, for a line that is not the header); throws UsageError naming the file (and
// line 1) when either fails.
template <typename Header>
void open_snapshot(std::ifstream& in, const std::string& path, Header& header,
                   bool (*parse)(std::string_view, Header&, std::string&));
void open_snapshot_file(std::ifstream& in, const std::string& path);
[[noreturn]] void bad_snapshot_header(const std::string& path, const std::string& error);

template <typename Header>
void open_snapshot(std::ifstream& in, const std::string& path, Header& header,
                   bool (*parse)(std::string_view, Header&, std::string&)) {
  open_snapshot_file(in, path);
  std::string line;
  std::string error;
  if (!std::getline(in, line) || !parse(line, header, error)) {
    bad_snapshot_header(path, error);
  }
}

// When the file was last written, in epoch milliseconds; 0 when it cannot be told.
std::int64_t mtime_ms(const std::string& path);

} // namespace dedupctl::connectors::file
