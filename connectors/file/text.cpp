#include "connectors/file/text.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace dedupctl::connectors::file {

void refuse_directory(const std::string& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw UsageError(fmt::format("cannot read {} {}: it is a directory; name a file in it", what, path));
  }
}

std::string read_text_file(const std::string& path, std::string_view what) {
  refuse_directory(path, what);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UsageError(fmt::format("cannot read {} {}: {}; check the path", what, path, std::strerror(errno)));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void open_snapshot_file(std::ifstream& in, const std::string& path) {
  refuse_directory(path, "--store file:");
  in.open(path, std::ios::binary);
  if (!in) {
    throw UsageError(fmt::format("cannot read snapshot {}: {}; check --store file:PATH", path, std::strerror(errno)));
  }
}

void bad_snapshot_header(const std::string& path, const std::string& error) {
  throw UsageError(fmt::format("{}:1: {}", path, error.empty() ? "empty file" : error));
}

std::int64_t mtime_ms(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return 0;
  }
  return static_cast<std::int64_t>(info.st_mtim.tv_sec) * 1000 + info.st_mtim.tv_nsec / 1'000'000;
}

} // namespace dedupctl::connectors::file
