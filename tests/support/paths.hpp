#pragma once

// Where the tests find the source tree and the programs they run. The absolute paths are compiled
// into one file (paths.cpp) rather than into every test's command line, so that a clone elsewhere
// (CI's) compiles nothing ccache has not seen but that file (CMakeLists.txt, DEDUPCTL_CCACHE).
namespace dedupctl::testing {

struct BuildPaths {
  const char* source_dir; // the source tree
  const char* binary;     // the dedupctl built beside the tests
  const char* mockbroker; // tests/support/mockbroker.cpp
  const char* seeder;     // tests/support/seeder.cpp
};
const BuildPaths& build_paths();

} // namespace dedupctl::testing

#define DEDUPCTL_SOURCE_DIR (::dedupctl::testing::build_paths().source_dir)
#define DEDUPCTL_BINARY (::dedupctl::testing::build_paths().binary)
#define DEDUPCTL_MOCKBROKER (::dedupctl::testing::build_paths().mockbroker)
#define DEDUPCTL_SEEDER (::dedupctl::testing::build_paths().seeder)
