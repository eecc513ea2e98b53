#include "tests/unit/test_data.hpp"

namespace dedupctl::testing {

const char* test_data_dir() { return DEDUPCTL_PATH_TEST_DATA; }

} // namespace dedupctl::testing
