#include "cli/app.hpp"

#include <cstdlib> // defines __GLIBC__ on glibc

#if defined(__GLIBC__) && !defined(DEDUPCTL_JEMALLOC)
#include <malloc.h>
#endif

#if defined(DEDUPCTL_JEMALLOC)
// jemalloc's settings, read at its first allocation (MALLOC_CONF in the environment still overrides
// them). Its defaults keep freed pages resident for ten seconds and open four arenas a core (eight
// on a 2-core machine): a 4M-event audit then peaked at 265-292 MB against 215 MB on glibc's
// malloc. Here freed pages go back after a second, and two arenas serve the few threads that
// allocate (4M audit: 217-224 MB, and a 1M replay's CPU is unchanged; tests/bench/audit-redis/growth,
// tests/bench/replay/run).
extern "C" {
// The name jemalloc looks for (unprefixed, as Debian builds it).
extern const char* const malloc_conf;
const char* const malloc_conf = "narenas:2,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
#endif

int main(int argc, char** argv) {
#if defined(__GLIBC__) && !defined(DEDUPCTL_JEMALLOC)
  // Built without jemalloc (DEDUPCTL_JEMALLOC=OFF), on glibc's malloc: a fixed threshold, so that
  // blocks of 1 MiB and more (librdkafka's fetch responses, an id spill's run) come from mmap and go
  // back to the system when freed. glibc's default raises the threshold to the largest such block
  // freed so far, after which they come from the heap, where what is freed stays resident: a
  // 4M-event audit peaked at 330 MB against 280 MB with it fixed, for about 0.2 s of system time a
  // million events (tests/bench/audit-redis/growth).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
  return dedupctl::cli::run(argc, argv);
}
