// The reference for tests/bench/redis-bloom: a plain hiredis loop over the ids evt-000000000000 …
// (N ids), 4096 a round trip, asking the filter FILTER with BF.MEXISTS of every k_lookup_chunk ids
// (the batches an audit with --layout redis-bloom sends). Prints the ids the filter holds.
//   bf_loop SOCKET_PATH FILTER N
#include "connectors/redis/connection.hpp" // k_lookup_chunk: the audit's batch

#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: bf_loop SOCKET_PATH FILTER N\n");
    return 2;
  }
  redisContext* c = redisConnectUnix(argv[1]);
  if (!c || c->err) {
    std::fprintf(stderr, "bf_loop: cannot connect\n");
    return 3;
  }
  std::string filter = argv[2];
  long long n = std::atoll(argv[3]);
  long long found = 0;
  constexpr long long k_batch = 4096;
  constexpr std::size_t k_chunk = dedupctl::connectors::redis::k_lookup_chunk;
  std::vector<std::string> ids;
  std::vector<const char*> args;
  std::vector<std::size_t> lengths;
  for (long long start = 0; start < n; start += k_batch) {
    long long end = std::min(n, start + k_batch);
    ids.clear();
    char id[64];
    for (long long i = start; i < end; ++i) {
      std::snprintf(id, sizeof id, "evt-%012lld", i);
      ids.emplace_back(id);
    }
    std::size_t commands = 0;
    for (std::size_t chunk = 0; chunk < ids.size(); chunk += k_chunk, ++commands) {
      std::size_t chunk_end = std::min(ids.size(), chunk + k_chunk);
      args.assign({"BF.MEXISTS", filter.c_str()});
      lengths.assign({10, filter.size()});
      for (std::size_t i = chunk; i < chunk_end; ++i) {
        args.push_back(ids[i].c_str());
        lengths.push_back(ids[i].size());
      }
      redisAppendCommandArgv(c, static_cast<int>(args.size()), args.data(), lengths.data());
    }
    for (std::size_t k = 0; k < commands; ++k) {
      void* raw = nullptr;
      if (redisGetReply(c, &raw) != REDIS_OK) {
        std::fprintf(stderr, "bf_loop: %s\n", c->errstr);
        return 3;
      }
      auto* reply = static_cast<redisReply*>(raw);
      if (reply->type != REDIS_REPLY_ARRAY) {
        std::fprintf(stderr, "bf_loop: BF.MEXISTS answered something else\n");
        return 3;
      }
      for (std::size_t i = 0; i < reply->elements; ++i) {
        found += reply->element[i]->integer == 1 ? 1 : 0;
      }
      freeReplyObject(reply);
    }
  }
  std::printf("%lld\n", found);
  redisFree(c);
  return 0;
}
