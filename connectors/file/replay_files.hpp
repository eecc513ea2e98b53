#pragma once

#include "core/replay/replay.hpp"

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

// The files a replay keeps beside its sink: the checkpoint it resumes from, and the log of its
// decisions.
namespace dedupctl::connectors::file {

// The checkpoint at `path`; nullopt when none is given or the file does not exist yet (a fresh
// run). Throws UsageError naming the file when it cannot be read or parsed.
std::optional<core::Checkpoint> read_checkpoint(const std::string& path);

// Writes the checkpoint whole or not at all (a temporary sibling renamed into place).
void write_checkpoint(const std::string& path, const core::Checkpoint& checkpoint);

// Appends the decisions as NDJSON (--decisions); flushed after each batch, before its checkpoint.
// Without a path it writes nothing.
class DecisionLog {
public:
  // Throws UsageError when the file cannot be opened for appending.
  explicit DecisionLog(const std::string& path);
  ~DecisionLog();
  DecisionLog(const DecisionLog&) = delete;
  DecisionLog& operator=(const DecisionLog&) = delete;

  bool open() const { return m_file != nullptr; }
  void write(const core::DecisionRecord& record);
  // Throws UnreachableError naming the file when a write failed (a full disk).
  void flush();

private:
  std::string m_path;
  std::FILE* m_file = nullptr;
};

// --repair-lost with --checkpoint: the keys whose records a run is about to release, written down
// (one hex-encoded key a line, fsync'd) before they are, in PATH (the checkpoint's path +
// ".released"), so that a run resumed after a kill between a release and its publish knows them.
class ReleaseLog {
public:
  explicit ReleaseLog(std::string path) : m_path(std::move(path)) {}
  // The keys written down so far (none when the file does not exist). Throws UsageError naming the
  // file when it cannot be read.
  std::unordered_set<std::string> read() const;
  // Throws UnreachableError naming the file when it cannot be written to disk (a full disk): then
  // nothing is released.
  void append(const std::vector<std::string>& keys);

private:
  std::string m_path;
};

// An exclusive hold on a file a running replay writes (its checkpoint, a file sink): flock(2) on
// PATH.lock, which records the holder's pid. The kernel lets go when the process ends, SIGKILL
// included, so a killed run never wedges the next one. A second run finds it held: UsageError
// naming the file and the holder.
class RunLock {
public:
  // `what` names the file as the user gave it ("--checkpoint ck.json").
  RunLock(const std::string& path, std::string_view what);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;

private:
  int m_fd = -1;
};

} // namespace dedupctl::connectors::file
