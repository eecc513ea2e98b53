#pragma once

// tests/unit/data, whose absolute path is compiled into test_data.cpp alone (as tests/support/paths.hpp
// does for the other tiers), so that a clone elsewhere shares every other unit test's object in ccache.
namespace dedupctl::testing {
const char* test_data_dir();
} // namespace dedupctl::testing

#define DEDUPCTL_TEST_DATA (::dedupctl::testing::test_data_dir())
