#include "connectors/file/replay_files.hpp"

#include "connectors/file/output.hpp"
#include "connectors/file/text.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <unistd.h>

namespace dedupctl::connectors::file {

std::optional<core::Checkpoint> read_checkpoint(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) {
    return std::nullopt;
  }
  std::string text = read_text_file(path, "--checkpoint");
  core::Checkpoint checkpoint;
  std::string error;
  if (!core::parse_checkpoint(text, checkpoint, error)) {
    throw UsageError(fmt::format("--checkpoint {}: {}; remove it to start over", path, error));
  }
  return checkpoint;
}

void write_checkpoint(const std::string& path, const core::Checkpoint& checkpoint) {
  ReportOutput out(path);
  std::string text = core::format_checkpoint(checkpoint);
  std::fwrite(text.data(), 1, text.size(), out.stream());
  out.commit();
}

std::unordered_set<std::string> ReleaseLog::read() const {
  std::unordered_set<std::string> keys;
  std::error_code ec;
  if (!std::filesystem::exists(m_path, ec)) {
    return keys;
  }
  std::string text = read_text_file(m_path, "the repair's release log");
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    std::string_view line(text.data() + start, (end == std::string::npos ? text.size() : end) - start);
    start = end == std::string::npos ? text.size() : end + 1;
    std::string key;
    bool ok = line.size() % 2 == 0;
    for (std::size_t i = 0; ok && i < line.size(); i += 2) {
      unsigned value = 0;
      ok = std::sscanf(std::string(line.substr(i, 2)).c_str(), "%2x", &value) == 1;
      key.push_back(static_cast<char>(value));
    }
    if (!ok) { // a line cut short by a kill mid-write: its keys were not released yet
      continue;
    }
    if (!key.empty()) {
      keys.insert(std::move(key));
    }
  }
  return keys;
}

void ReleaseLog::append(const std::vector<std::string>& keys) {
  std::string text;
  for (const auto& key : keys) {
    for (unsigned char c : key) {
      text += fmt::format("{:02x}", c);
    }
    text += '\n';
  }
  int fd = ::open(m_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  bool ok = fd >= 0;
  std::size_t done = 0;
  while (ok && done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    ok = n > 0 || (n < 0 && errno == EINTR);
    done += n > 0 ? static_cast<std::size_t>(n) : 0;
  }
  ok = ok && ::fsync(fd) == 0;
  int error = errno;
  if (fd >= 0) {
    ::close(fd);
  }
  if (!ok) {
    throw UnreachableError(fmt::format("cannot write the repair's release log {} ({}): nothing more is released",
                                       m_path, std::strerror(error)));
  }
}

DecisionLog::DecisionLog(const std::string& path) : m_path(path) {
  if (!path.empty()) {
    m_file = std::fopen(path.c_str(), "a");
    if (!m_file) {
      throw UsageError(fmt::format("cannot open --decisions {}: {}", path, std::strerror(errno)));
    }
  }
}

DecisionLog::~DecisionLog() {
  if (m_file) {
    std::fclose(m_file);
  }
}

void DecisionLog::write(const core::DecisionRecord& record) {
  std::string line = core::format_decision(record);
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), m_file);
}

void DecisionLog::flush() {
  if (std::fflush(m_file) != 0 || std::ferror(m_file)) {
    throw UnreachableError(fmt::format("cannot write --decisions {}: {}", m_path, std::strerror(errno)));
  }
}

RunLock::RunLock(const std::string& path, std::string_view what) {
  std::string lock = path + ".lock";
  m_fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (m_fd < 0) {
    throw UsageError(fmt::format("cannot lock {} ({}: {}); check the directory", what, lock, std::strerror(errno)));
  }
  if (::flock(m_fd, LOCK_EX | LOCK_NB) != 0) {
    int saved = errno;
    char holder[64] = {};
    ssize_t n = ::pread(m_fd, holder, sizeof holder - 1, 0);
    std::string who = n > 0 ? std::string(holder, static_cast<std::size_t>(n)) : std::string("another process");
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) {
      who.pop_back();
    }
    ::close(m_fd);
    m_fd = -1;
    if (saved == EWOULDBLOCK) {
      throw UsageError(fmt::format("{} is in use by another replay ({}): two runs at once would corrupt it; wait "
                                   "for that run to end, or stop it",
                                   what, who));
    }
    throw UsageError(fmt::format("cannot lock {}: {}", what, std::strerror(saved)));
  }
  std::string me = fmt::format("pid {}\n", ::getpid());
  if (::ftruncate(m_fd, 0) != 0 || ::pwrite(m_fd, me.data(), me.size(), 0) < 0) {
    // The lock holds without the note of who holds it.
  }
}

RunLock::~RunLock() {
  if (m_fd >= 0) {
    ::close(m_fd); // releases the flock
  }
}

} // namespace dedupctl::connectors::file
