#include "connectors/file/text.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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

} // namespace dedupctl::connectors::file
