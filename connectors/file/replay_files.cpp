#include "connectors/file/replay_files.hpp"

#include "connectors/file/output.hpp"
#include "connectors/file/text.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

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

} // namespace dedupctl::connectors::file
