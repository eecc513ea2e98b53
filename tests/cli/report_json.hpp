#pragma once

// A command's stdout as JSON, for the tests of the binary; a failure (not JSON) says what was printed.
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace dedupctl::testing {

inline nlohmann::json parse(const CommandResult& result) {
  try {
    return nlohmann::json::parse(result.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "stdout is not JSON: " << e.what() << "\n" << result.out << "\nstderr: " << result.err;
    return nlohmann::json::object();
  }
}

} // namespace dedupctl::testing
