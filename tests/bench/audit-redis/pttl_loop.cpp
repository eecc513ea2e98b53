// The reference for tests/bench/audit-redis: a plain hiredis loop doing pipelined PTTL of the
// keys dedup:evt-000000000000 … (N keys), 4096 per round trip. Prints the keys found.
//   pttl_loop SOCKET_PATH N
#include <hiredis/hiredis.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: pttl_loop SOCKET_PATH N\n");
    return 2;
  }
  redisContext* c = redisConnectUnix(argv[1]);
  if (!c || c->err) {
    std::fprintf(stderr, "pttl_loop: cannot connect\n");
    return 3;
  }
  long long n = std::atoll(argv[2]);
  long long found = 0;
  constexpr long long k_batch = 4096;
  char key[64];
  for (long long start = 0; start < n; start += k_batch) {
    long long end = std::min(n, start + k_batch);
    for (long long i = start; i < end; ++i) {
      std::snprintf(key, sizeof key, "dedup:evt-%012lld", i);
      redisAppendCommand(c, "PTTL %s", key);
    }
    for (long long i = start; i < end; ++i) {
      void* reply = nullptr;
      if (redisGetReply(c, &reply) != REDIS_OK) {
        std::fprintf(stderr, "pttl_loop: %s\n", c->errstr);
        return 3;
      }
      found += static_cast<redisReply*>(reply)->integer != -2 ? 1 : 0;
      freeReplyObject(reply);
    }
  }
  std::printf("%lld\n", found);
  redisFree(c);
  return 0;
}
