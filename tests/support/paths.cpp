#include "tests/support/paths.hpp"

namespace dedupctl::testing {

const BuildPaths& build_paths() {
  static const BuildPaths paths{DEDUPCTL_PATH_SOURCE_DIR, DEDUPCTL_PATH_BINARY, DEDUPCTL_PATH_MOCKBROKER,
                                DEDUPCTL_PATH_SEEDER};
  return paths;
}

} // namespace dedupctl::testing
