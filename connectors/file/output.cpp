#include "connectors/file/output.hpp"

#include "core/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace dedupctl::connectors::file {

ReportOutput::ReportOutput(const std::string& path) : m_path(path == "-" ? "" : path) {
  if (m_path.empty()) {
    m_stream = stdout;
    return;
  }
  m_temp = fmt::format("{}.tmp-{}", m_path, ::getpid());
  m_stream = std::fopen(m_temp.c_str(), "wb");
  if (!m_stream) {
    throw UsageError(fmt::format("cannot write --output {}: {}; check the directory", m_path, std::strerror(errno)));
  }
}

ReportOutput::~ReportOutput() {
  if (!m_path.empty() && !m_committed) {
    std::fclose(m_stream);
    std::remove(m_temp.c_str());
  }
}

bool ReportOutput::is_terminal() const { return m_path.empty() && ::isatty(STDOUT_FILENO) == 1; }

void ReportOutput::commit() {
  if (m_path.empty()) {
    std::fflush(stdout);
    return;
  }
  bool failed = std::fflush(m_stream) != 0 || std::ferror(m_stream) != 0;
  failed = std::fclose(m_stream) != 0 || failed;
  m_committed = true;
  if (failed || std::rename(m_temp.c_str(), m_path.c_str()) != 0) {
    int saved = errno;
    std::remove(m_temp.c_str());
    throw UsageError(fmt::format("cannot write --output {}: {}", m_path, std::strerror(saved)));
  }
}

} // namespace dedupctl::connectors::file
