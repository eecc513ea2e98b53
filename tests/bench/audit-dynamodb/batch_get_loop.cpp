// The reference for tests/bench/audit-dynamodb: a bare loop of the BatchGetItem calls an audit of N
// seeded events makes (the keys dedup:evt-000000000000 …, 100 a request, 8 requests in flight, signed
// and retried by the same client), with nothing else: no log to read, no ids to take, no verdicts.
// Prints the keys found.
//   batch_get_loop dynamodb://TABLE?region=R&endpoint=URL N   (credentials from the environment)
#include "connectors/aws/aws.hpp"
#include "core/store/dynamodb.hpp"
#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: batch_get_loop dynamodb://TABLE?… N\n");
    return 2;
  }
  try {
    using namespace dedupctl;
    connectors::aws::AwsSettings settings;
    settings.uri = core::parse_store_uri(argv[1]);
    settings.layout = core::find_layout("json");
    connectors::aws::DynamoClient client(settings);
    long long n = std::atoll(argv[2]);
    constexpr long long k_keys = 100;
    std::atomic<long long> found{0};
    std::size_t requests = static_cast<std::size_t>((n + k_keys - 1) / k_keys);
    connectors::aws::parallel_for(requests, 8, [&](std::size_t r) {
      std::vector<std::string> keys;
      char key[64];
      for (long long i = static_cast<long long>(r) * k_keys; i < std::min(n, static_cast<long long>(r + 1) * k_keys);
           ++i) {
        std::snprintf(key, sizeof key, "dedup:evt-%012lld", i);
        keys.emplace_back(key);
      }
      std::vector<std::string_view> views(keys.begin(), keys.end());
      while (!views.empty()) {
        auto body = client.call("BatchGetItem", core::batch_get_body(settings.uri.table, settings.layout, views));
        std::string error;
        auto answer = core::parse_batch_get(*body, settings.uri.table, settings.layout, error);
        if (!answer) {
          throw std::runtime_error(error);
        }
        found += static_cast<long long>(answer->records.size());
        keys = std::move(answer->unprocessed);
        views.assign(keys.begin(), keys.end());
      }
    });
    std::printf("%lld\n", found.load());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "batch_get_loop: %s\n", e.what());
    return 3;
  }
  return 0;
}
