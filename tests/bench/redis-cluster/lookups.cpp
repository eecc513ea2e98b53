// The lookups of an audit through dedupctl's Redis connector, timed: for tests/bench/redis-cluster,
// which runs it against one server and against a three-master cluster.
//   bench_redis_lookups load URI N     writes dedup:evt-000000000000 … (every key but each tenth)
//   bench_redis_lookups lookup URI N   looks the N keys up in batches of 1000; prints seconds, found
//   bench_redis_lookups bloom URI FILTER N   (tests/bench/redis-bloom) looks evt-000000000000 … up in the
//     filter FILTER through the store of --layout redis-bloom, 4096 ids a lookup as bf_loop asks them;
//     prints the ids it holds
#include "connectors/redis/redis.hpp"
#include "core/span.hpp"
#include "core/store/layout.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace dedupctl;

namespace {

constexpr std::size_t k_batch = 1000;

std::vector<std::string> batch_keys(long long start, long long end) {
  std::vector<std::string> keys;
  char key[64];
  for (long long i = start; i < end; ++i) {
    std::snprintf(key, sizeof key, "dedup:evt-%012lld", i);
    keys.emplace_back(key);
  }
  return keys;
}

} // namespace

// The store an audit with --layout redis-bloom --collection FILTER reads, over bf_loop's batches.
int bloom_lookups(const std::string& uri, const std::string& filter, long long n) {
  connectors::redis::RedisSettings settings;
  settings.uri = core::parse_store_uri(uri);
  settings.layout = core::find_layout("redis-bloom");
  settings.collection = filter;
  auto store = connectors::redis::open_store(settings);
  std::vector<core::RecordState> states;
  std::vector<std::string> ids;
  long long found = 0;
  constexpr long long k_ids = 4096;
  char id[64];
  for (long long start = 0; start < n; start += k_ids) {
    ids.clear();
    for (long long i = start; i < std::min(n, start + k_ids); ++i) {
      std::snprintf(id, sizeof id, "evt-%012lld", i);
      ids.emplace_back(id);
    }
    store->lookup(ids, states);
    for (const auto& state : states) {
      found += state.kind == core::RecordState::Kind::Present ? 1 : 0;
    }
  }
  std::printf("%lld\n", found);
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "bloom") {
    return bloom_lookups(argv[2], argv[3], std::atoll(argv[4]));
  }
  if (argc != 4) {
    std::fprintf(stderr, "usage: bench_redis_lookups load|lookup URI N, or bloom URI FILTER N\n");
    return 2;
  }
  std::string mode = argv[1];
  connectors::redis::RedisSettings settings;
  settings.uri = core::parse_store_uri(argv[2]);
  long long n = std::atoll(argv[3]);
  if (mode == "load") {
    // Claimed and settled as a replay would: SET … NX, then SET key done PX 1d, routed by slot.
    auto placement =
        connectors::redis::open_replay_placement(settings, core::Span::finite(86'400'000), 60'000, {"processing"});
    std::vector<core::Claim> claims;
    for (long long start = 0; start < n; start += static_cast<long long>(k_batch)) {
      std::vector<std::string> keys;
      for (auto& key : batch_keys(start, std::min(n, start + static_cast<long long>(k_batch)))) {
        if (std::stoll(key.substr(10)) % 10 != 0) {
          keys.push_back(std::move(key));
        }
      }
      placement->claim(keys, "load", claims);
      placement->settle(keys, claims, std::vector<bool>(keys.size(), true));
    }
    return 0;
  }
  auto store = connectors::redis::open_store(settings);
  std::vector<core::RecordState> states;
  long long found = 0;
  auto started = std::chrono::steady_clock::now();
  for (long long start = 0; start < n; start += static_cast<long long>(k_batch)) {
    auto keys = batch_keys(start, std::min(n, start + static_cast<long long>(k_batch)));
    store->lookup(keys, states);
    for (const auto& state : states) {
      found += state.kind == core::RecordState::Kind::Present ? 1 : 0;
    }
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("%.3f %lld\n", seconds, found);
  return 0;
}
