#pragma once

// What the report tests share: a report rendered to a string, a golden file's text, a summary count.

#include "reports/report.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace dedupctl::testing {

inline std::string rendered(const reports::Report& report, reports::Format format) {
  return reports::render_to_string(report, format);
}

inline std::string golden(const std::string& name) {
  std::ifstream in(std::string(DEDUPCTL_TEST_DATA) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A summary counter of the report; a test failure (and -1) when it has none of that name.
inline std::int64_t summary(const reports::Report& report, const std::string& name) {
  for (const auto& [key, value] : report.summary) {
    if (key == name) {
      return value;
    }
  }
  ADD_FAILURE() << "no summary field " << name;
  return -1;
}

} // namespace dedupctl::testing
