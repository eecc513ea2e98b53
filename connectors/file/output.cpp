#include "connectors/file/output.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace dedupctl::connectors::file {

namespace {

bool is_stdout(const std::string& path) { return path.empty() || path == "-" || path == "/dev/stdout"; }

} // namespace

ReportOutput::ReportOutput(const std::string& path) : m_path(is_stdout(path) ? "" : path) {
  if (m_path.empty()) {
    m_stream = stdout;
    return;
  }
  struct stat st {};
  if (::stat(m_path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      throw UsageError(fmt::format("cannot write --output {}: it is a directory; name a file in it", m_path));
    }
    if (!S_ISREG(st.st_mode)) {
      // A device, a FIFO or a socket: written in place. A rename would replace it with a file.
      m_stream = std::fopen(m_path.c_str(), "wb");
      if (!m_stream) {
        throw UsageError(fmt::format("cannot write --output {}: {}", m_path, std::strerror(errno)));
      }
      m_in_place = true;
      return;
    }
    if (::access(m_path.c_str(), W_OK) != 0) {
      throw UsageError(fmt::format("cannot write --output {}: {}; it exists and is not writable by this user", m_path,
                                   std::strerror(errno)));
    }
  }
  m_temp = fmt::format("{}.tmp-{}", m_path, ::getpid());
  m_stream = std::fopen(m_temp.c_str(), "wb");
  if (!m_stream) {
    int error = errno;
    std::string directory = std::filesystem::path(m_path).parent_path().string();
    directory = directory.empty() ? "." : directory;
    std::error_code ec;
    std::string why;
    if (!std::filesystem::exists(directory, ec)) {
      why = fmt::format("the directory {} does not exist; create it or choose another path", directory);
    } else if (!std::filesystem::is_directory(directory, ec)) {
      why = fmt::format("{} is not a directory; choose another path", directory);
    } else {
      why = fmt::format("no new file can be created in {} ({}): the report is written to a temporary file beside "
                        "its path and renamed into place; choose a path in a directory this user can write",
                        directory, std::strerror(error));
    }
    throw UsageError(fmt::format("cannot write --output {}: {}", m_path, why));
  }
}

ReportOutput::~ReportOutput() {
  if (m_path.empty() || m_committed) {
    return;
  }
  std::fclose(m_stream);
  if (!m_in_place) {
    std::remove(m_temp.c_str());
  }
}

bool ReportOutput::is_terminal() const { return m_path.empty() && ::isatty(STDOUT_FILENO) == 1; }

void ReportOutput::commit() {
  std::string name = m_path.empty() ? "standard output" : "--output " + m_path;
  bool failed = std::fflush(m_stream) != 0 || std::ferror(m_stream) != 0;
  int saved = errno;
  if (m_path.empty()) {
    if (failed) {
      std::clearerr(stdout);
      throw UnreachableError(fmt::format("cannot write the report to {}: {}", name, std::strerror(saved)));
    }
    return;
  }
  if (std::fclose(m_stream) != 0 && !failed) {
    failed = true;
    saved = errno;
  }
  m_committed = true;
  if (!failed && !m_in_place && std::rename(m_temp.c_str(), m_path.c_str()) != 0) {
    failed = true;
    saved = errno;
  }
  if (failed) {
    if (!m_in_place) {
      std::remove(m_temp.c_str());
    }
    throw UnreachableError(fmt::format("cannot write the report to {}: {}", name, std::strerror(saved)));
  }
}

} // namespace dedupctl::connectors::file
