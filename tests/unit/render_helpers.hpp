#pragma once

// What the renderer tests share: a report rendered to a string, and a golden file's text.

#include "reports/report.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace dedupctl::testing {

// Renders into memory; the stream is closed and freed even when render() throws.
inline std::string rendered(const reports::Report& report, reports::Format format) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  struct Close {
    std::FILE* out;
    char** buffer;
    ~Close() {
      std::fclose(out);
      std::free(*buffer);
    }
  } close{out, &buffer};
  reports::render(report, format, out);
  std::fflush(out);
  return std::string(buffer, size);
}

inline std::string golden(const std::string& name) {
  std::ifstream in(std::string(DEDUPCTL_TEST_DATA) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace dedupctl::testing
