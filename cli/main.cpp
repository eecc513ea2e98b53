#include "cli/app.hpp"

#include <cstdlib> // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

int main(int argc, char** argv) {
#if defined(__GLIBC__)
  // A fixed threshold: blocks of 1 MiB and more (librdkafka's fetch responses, an id spill's run)
  // come from mmap and go back to the system when freed. glibc's default raises the threshold to
  // the largest such block freed so far, after which they come from the heap, where what is freed
  // stays resident: a 4M-event audit peaked at 330 MB against 280 MB with it fixed, for about
  // 0.2 s of system time a million events (tests/bench/audit-redis/growth).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  return dedupctl::cli::run(argc, argv);
}
