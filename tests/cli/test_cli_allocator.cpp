// The allocator the executable runs on.
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::testing;

namespace {

#if defined(DEDUPCTL_JEMALLOC)
// The executable allocates through jemalloc, librdkafka's and hiredis' allocations included (a
// replay of 1M events took 11% less CPU than on glibc's malloc, tests/bench/replay/run). A build
// that drops the link would still pass every other test; this one asks jemalloc itself, through its
// MALLOC_CONF, to print its statistics as the process exits, and checks the settings main.cpp gives
// it took effect (a misspelt malloc_conf symbol is silently ignored).
TEST(Allocator, TheExecutableAllocatesThroughJemalloc) {
  auto result = run_dedupctl({"version"}, {}, {{"MALLOC_CONF", "stats_print:true"}});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("Begin jemalloc statistics"), std::string::npos)
      << "no jemalloc statistics on stderr: " << result.err.substr(0, 400);
  EXPECT_NE(result.err.find("opt.narenas: 2\n"), std::string::npos);
  EXPECT_NE(result.err.find("opt.dirty_decay_ms: 1000 "), std::string::npos);
  EXPECT_NE(result.err.find("opt.muzzy_decay_ms: 0 "), std::string::npos);
}
#endif

} // namespace
