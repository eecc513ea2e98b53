// The references for tests/bench/audit-redis: a plain hiredis loop over the keys
// dedup:evt-000000000000 … (N keys), 4096 per round trip, doing pipelined PTTL of each (the
// classic lookup), or with --values also an MGET of every k_lookup_chunk keys after their PTTLs
// (the commands an audit sends: the values tell a claim from a done record). Prints the keys found.
//   pttl_loop SOCKET_PATH N [--values]
#include "connectors/redis/connection.hpp" // k_lookup_chunk: the audit's MGET size

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  bool values = argc == 4 && std::strcmp(argv[3], "--values") == 0;
  if (argc != 3 && !values) {
    std::fprintf(stderr, "usage: pttl_loop SOCKET_PATH N [--values]\n");
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
  constexpr std::size_t k_chunk = dedupctl::connectors::redis::k_lookup_chunk;
  std::vector<std::string> keys;
  std::vector<const char*> args;
  std::vector<std::size_t> lengths;
  auto reply_of = [&]() -> redisReply* {
    void* reply = nullptr;
    if (redisGetReply(c, &reply) != REDIS_OK) {
      std::fprintf(stderr, "pttl_loop: %s\n", c->errstr);
      std::exit(3);
    }
    return static_cast<redisReply*>(reply);
  };
  for (long long start = 0; start < n; start += k_batch) {
    long long end = std::min(n, start + k_batch);
    keys.clear();
    char key[64];
    for (long long i = start; i < end; ++i) {
      std::snprintf(key, sizeof key, "dedup:evt-%012lld", i);
      keys.emplace_back(key);
    }
    for (std::size_t chunk = 0; chunk < keys.size(); chunk += k_chunk) {
      std::size_t chunk_end = std::min(keys.size(), chunk + k_chunk);
      for (std::size_t i = chunk; i < chunk_end; ++i) {
        redisAppendCommand(c, "PTTL %s", keys[i].c_str());
      }
      if (values) {
        args.assign(1, "MGET");
        lengths.assign(1, 4);
        for (std::size_t i = chunk; i < chunk_end; ++i) {
          args.push_back(keys[i].c_str());
          lengths.push_back(keys[i].size());
        }
        redisAppendCommandArgv(c, static_cast<int>(args.size()), args.data(), lengths.data());
      }
    }
    for (std::size_t chunk = 0; chunk < keys.size(); chunk += k_chunk) {
      std::size_t chunk_end = std::min(keys.size(), chunk + k_chunk);
      for (std::size_t i = chunk; i < chunk_end; ++i) {
        redisReply* reply = reply_of();
        found += reply->integer != -2 ? 1 : 0;
        freeReplyObject(reply);
      }
      if (values) {
        redisReply* reply = reply_of();
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != chunk_end - chunk) {
          std::fprintf(stderr, "pttl_loop: MGET answered something else\n");
          return 3;
        }
        freeReplyObject(reply);
      }
    }
  }
  std::printf("%lld\n", found);
  redisFree(c);
  return 0;
}
