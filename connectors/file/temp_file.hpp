#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

// A scratch file in TMPDIR (/tmp when unset), as sort(1) keeps its runs: unlinked the moment it is
// created, so nothing is left behind however the process ends.
namespace dedupctl::connectors::file {

class TempFile {
public:
  // `stem` starts its name ("dedupctl-digest"); `what` names it in errors ("the digest's temporary
  // sort file"); `room` says what TMPDIR needs room for ("144 bytes an event the shard reads").
  // A UsageError naming TMPDIR when it cannot be created.
  TempFile(const std::string& stem, std::string what, std::string room);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  // Appends at the end; an UnreachableError naming TMPDIR when it cannot (a full disk), with the
  // file as it was before the call.
  void append(const void* data, std::size_t size);
  // Reads `size` bytes at `at`; an UnreachableError when they are not all there.
  void read(std::uint64_t at, void* out, std::size_t size) const;
  std::uint64_t size() const { return m_size; }
  // "<what> in <dir> (TMPDIR)".
  const std::string& describe() const { return m_describe; }

private:
  std::string m_room;
  std::string m_dir;
  std::string m_describe;
  int m_fd = -1;
  std::uint64_t m_size = 0;
};

} // namespace dedupctl::connectors::file
