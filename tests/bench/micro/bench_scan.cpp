// Google Benchmark for scan's hot loops: identification (header and JSON ids), the log analyzer, and
// rendering dedup keys (a plain template, and Powertools' digest of the id as JSON).
#include "core/identity/identify.hpp"
#include "core/identity/key_template.hpp"
#include "core/scan/log_analyzer.hpp"

#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <string>
#include <vector>

using namespace dedupctl::core;

namespace {

struct Fixture {
  std::vector<std::string> payloads;
  std::vector<std::string> ids;
  std::vector<std::vector<Header>> headers;
  EventBatch batch;

  explicit Fixture(std::size_t n, bool id_in_json) {
    payloads.reserve(n);
    ids.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      ids.push_back(fmt::format("evt-{:012}", i));
      std::string payload = id_in_json ? fmt::format(R"({{"event_id":"{}","type":"OrderPlaced",)", ids.back())
                                       : std::string(R"({"type":"OrderPlaced",)");
      payload += fmt::format(R"("order_id":"order-{}","amount_cents":{},"pad":")", i / 3, 1000 + i % 9000);
      payload.append(200 - payload.size() - 2, 'x');
      payload += "\"}";
      payloads.push_back(std::move(payload));
    }
    headers.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      if (!id_in_json) {
        headers[i].push_back(Header{"event_id", std::string_view(ids[i])});
      }
      headers[i].push_back(Header{"type", std::string_view("OrderPlaced")});
      Event e;
      e.topic = "bench";
      e.partition = static_cast<std::int32_t>(i % 64);
      e.offset = static_cast<std::int64_t>(i);
      e.timestamp_ms = static_cast<std::int64_t>(i);
      e.payload = std::string_view(payloads[i]);
      e.headers = headers[i];
      batch.events.push_back(e);
    }
  }
};

void identify(benchmark::State& state, bool json) {
  Fixture fixture(4096, json);
  IdentifyOptions options = default_identify_options();
  if (json) {
    options.id = parse_field_specs("json:/event_id", "--id");
  }
  Identifier identifier(options);
  std::vector<Identity> out;
  for (auto _ : state) {
    identifier.identify(fixture.batch, out);
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 4096);
}

void BM_IdentifyHeaderIds(benchmark::State& state) { identify(state, false); }
void BM_IdentifyJsonIds(benchmark::State& state) { identify(state, true); }

// The i-th of distinct ids, payloads and semantic keys.
Identity distinct_identity(std::uint64_t i) {
  Identity id;
  id.has_id = true;
  id.id_hash = (i + 1) * 0x9e3779b97f4a7c15ULL;
  id.payload_fingerprint = i;
  id.semantic_hash = (i + 1) * 0xc2b2ae3d27d4eb4fULL;
  return id;
}

void BM_LogAnalyzerDistinctIds(benchmark::State& state) {
  for (auto _ : state) {
    LogAnalyzer analyzer(LogAnalyzerOptions{});
    Event e;
    for (std::uint64_t i = 0; i < 1'000'000; ++i) {
      analyzer.observe(e, distinct_identity(i));
    }
    benchmark::DoNotOptimize(analyzer.counters().events);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * 1'000'000);
}

// 4M events one ms apart on 256 partitions, with every key in memory (0) or with the old ones
// handed to an archive (1) that keeps nothing (in time order nothing is asked back).
class DiscardingArchive final : public KeyArchive {
public:
  bool archive(std::span<const Entry> run) override {
    archived += run.size();
    return true;
  }
  std::optional<std::uint64_t> latest(std::uint64_t) override { return std::nullopt; }
  std::size_t archived = 0;
};

void BM_LogAnalyzer4MEvents(benchmark::State& state) {
  constexpr std::uint64_t k_events = 4'000'000;
  for (auto _ : state) {
    DiscardingArchive archive;
    LogAnalyzerOptions options;
    options.expected_events = k_events;
    options.semantic_archive = state.range(0) != 0 ? &archive : nullptr;
    LogAnalyzer analyzer(options);
    Event e;
    e.topic = "bench";
    for (std::uint64_t i = 0; i < k_events; ++i) {
      e.partition = static_cast<std::int32_t>(i % 256);
      e.timestamp_ms = 1'700'000'000'000 + static_cast<std::int64_t>(i);
      analyzer.observe(e, distinct_identity(i));
    }
    benchmark::DoNotOptimize(analyzer.counters().events);
    state.counters["archived"] = static_cast<double>(archive.archived);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(k_events));
}

void render_keys(benchmark::State& state, const char* text) {
  Fixture fixture(4096, false);
  KeyTemplate tmpl = KeyTemplate::parse(text);
  std::string key;
  for (auto _ : state) {
    for (const auto& id : fixture.ids) {
      KeyValues values{id, "OrderPlaced", "", "bench", 0, 0, "", "billing", nullptr};
      render_key(tmpl, values, key);
      benchmark::DoNotOptimize(key.data());
    }
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(fixture.ids.size()));
}
void BM_RenderKeyPlain(benchmark::State& state) { render_keys(state, "dedup:{consumer}:{event_id}"); }
void BM_RenderKeyPowertools(benchmark::State& state) {
  render_keys(state, "test-func.__main__.charge#{event_id|json-ascii|md5}");
}

} // namespace

BENCHMARK(BM_IdentifyHeaderIds);
BENCHMARK(BM_RenderKeyPlain);
BENCHMARK(BM_RenderKeyPowertools);
BENCHMARK(BM_IdentifyJsonIds);
BENCHMARK(BM_LogAnalyzerDistinctIds)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_LogAnalyzer4MEvents)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
