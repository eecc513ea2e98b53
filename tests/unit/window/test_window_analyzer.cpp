// core::WindowAnalyzer over the decisions the libraries' own windows made (tests/unit/data/bloom/
// decide-*.txt, written by the Go WindowDedup over bits-and-blooms and by the Guava consumer): the
// misses it finds are exactly the repeats the consumer applied again, the false positives exactly the
// ids it skipped before it ever applied them.
#include "core/util/fingerprint.hpp"
#include "core/window/window_analyzer.hpp"
#include "tests/unit/test_data.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace dedupctl::core;

namespace {

struct Golden {
  std::vector<std::string> ids;
  std::set<std::int64_t> misses;          // offsets the consumer applied again
  std::set<std::int64_t> false_positives; // offsets it skipped before ever applying the id
};

Golden golden(const std::string& name) {
  std::ifstream in(std::string(DEDUPCTL_TEST_DATA) + "/bloom/" + name);
  EXPECT_TRUE(in) << name;
  Golden g;
  std::set<std::string> applied;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("#")) {
      continue;
    }
    auto space = line.find(' ');
    std::string id = line.substr(0, space);
    bool skipped = line.substr(space + 1) == "skipped";
    auto offset = static_cast<std::int64_t>(g.ids.size());
    if (!skipped && applied.count(id)) {
      g.misses.insert(offset);
    }
    if (skipped && !applied.count(id)) {
      g.false_positives.insert(offset);
    }
    if (!skipped) {
      applied.insert(id);
    }
    g.ids.push_back(id);
  }
  return g;
}

WindowSpec spec(WindowKind kind, BloomImpl impl = BloomImpl::BitsAndBlooms) {
  WindowSpec s;
  s.kind = kind;
  s.capacity = 30; // as tests/support/window/vectors ran the consumers
  s.bloom_items = 100;
  s.bloom_fp = 0.05;
  s.bloom_impl = impl;
  return s;
}

Event event_at(std::int32_t partition, std::int64_t offset) {
  Event e;
  e.topic = "t";
  e.partition = partition;
  e.offset = offset;
  e.seq = static_cast<std::uint64_t>(offset);
  return e;
}

// The identity an event with `id` and `type` has (the analyzer reads its id and type).
Identity id_of(const std::string& id, std::string_view type) {
  Identity out;
  out.has_id = true;
  out.id = id;
  out.type = type;
  return out;
}

const Finding* find(const WindowResult& result, std::string_view id) {
  for (const auto& f : result.findings) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

std::set<std::int64_t> offsets(const Finding* finding) {
  std::set<std::int64_t> out;
  for (const auto& e : finding ? finding->examples : std::vector<Example>{}) {
    out.insert(e.offset);
  }
  return out;
}

void expect_as_the_consumer(const std::string& file, const WindowSpec& s) {
  SCOPED_TRACE(file);
  Golden g = golden(file);
  WindowAnalyzer analyzer(s, 1000, {});
  for (std::size_t i = 0; i < g.ids.size(); ++i) {
    analyzer.observe(event_at(0, static_cast<std::int64_t>(i)), id_of(g.ids[i], "PaymentCharged"), g.ids[i],
                     hash64(g.ids[i]));
  }
  WindowResult result = analyzer.finish();
  EXPECT_TRUE(result.summary.exact);
  EXPECT_EQ(result.summary.window_misses.low, static_cast<std::int64_t>(g.misses.size()));
  EXPECT_EQ(result.summary.false_positives.low, static_cast<std::int64_t>(g.false_positives.size()));
  EXPECT_EQ(offsets(find(result, "window-miss")), g.misses);
  EXPECT_EQ(offsets(find(result, "bloom-false-positive")), g.false_positives);
  EXPECT_EQ(result.summary.events, static_cast<std::int64_t>(g.ids.size()));
}

} // namespace

TEST(WindowAnalyzer, AnLruMissesWhatTheGoLruReapplied) {
  Golden g = golden("decide-lru.txt");
  EXPECT_GT(g.misses.size(), 10u); // the far repeats
  expect_as_the_consumer("decide-lru.txt", spec(WindowKind::Lru));
}

TEST(WindowAnalyzer, AnLruBloomDropsWhatTheBitsAndBloomsConsumerDropped) {
  Golden g = golden("decide-lru-bloom.txt");
  EXPECT_GT(g.false_positives.size(), 10u); // an overfilled filter
  EXPECT_TRUE(g.misses.empty());            // the filter holds every id applied
  expect_as_the_consumer("decide-lru-bloom.txt", spec(WindowKind::LruBloom));
}

TEST(WindowAnalyzer, ABloomExactMissesWhatTheGoBloomExactReapplied) {
  expect_as_the_consumer("decide-bloom-exact.txt", spec(WindowKind::BloomExact));
}

TEST(WindowAnalyzer, AGuavaLruBloomDropsWhatTheGuavaConsumerDropped) {
  Golden g = golden("decide-guava-lru-bloom.txt");
  EXPECT_GT(g.false_positives.size(), 10u);
  expect_as_the_consumer("decide-guava-lru-bloom.txt", spec(WindowKind::LruBloom, BloomImpl::Guava));
}

TEST(WindowAnalyzer, AMissOfAnExternalTypeIsAnErrorOfAnIdempotentOneAWarning) {
  for (auto [effect, severity] :
       {std::pair{SideEffect::Idempotent, Severity::Warning}, std::pair{SideEffect::External, Severity::Error}}) {
    WindowSpec s = spec(WindowKind::Lru);
    s.capacity = 1;
    WindowAnalyzer analyzer(s, 5, {{"EmailSent", effect}});
    std::vector<std::string> ids{"a", "b", "a"};
    for (std::size_t i = 0; i < ids.size(); ++i) {
      analyzer.observe(event_at(0, static_cast<std::int64_t>(i)), id_of(ids[i], "EmailSent"), ids[i], hash64(ids[i]));
    }
    auto result = analyzer.finish();
    ASSERT_NE(find(result, "window-miss"), nullptr);
    EXPECT_EQ(find(result, "window-miss")->severity, severity);
    EXPECT_EQ(find(result, "window-miss")->count, 1);
  }
}

TEST(WindowAnalyzer, OneWindowAPartitionIsExactAndStartsEmpty) {
  // The same ids in two partitions: each partition's window is its own, so each first delivery is
  // applied (two windows, no miss, nothing caught across them).
  WindowAnalyzer analyzer(spec(WindowKind::Lru), 5, {});
  analyzer.observe(event_at(0, 0), id_of("a", "T"), "a", hash64("a"));
  analyzer.observe(event_at(1, 0), id_of("a", "T"), "a", hash64("a"));
  analyzer.observe(event_at(0, 1), id_of("a", "T"), "a", hash64("a"));
  auto result = analyzer.finish();
  EXPECT_TRUE(result.summary.exact);
  EXPECT_EQ(result.summary.windows, 2);
  EXPECT_EQ(result.summary.applied, 2);
  EXPECT_EQ(result.summary.caught, 1);
  EXPECT_EQ(result.findings.size(), 0u);
}

TEST(WindowAnalyzer, AConsumersWindowOverSeveralPartitionsGivesBoundsNotOneNumber) {
  WindowSpec s = spec(WindowKind::Lru);
  s.capacity = 2;
  s.scope = WindowScope::Consumer;
  WindowAnalyzer analyzer(s, 5, {});
  // Partition 0: a x a (a repeat 2 apart: held by a window of 2 unless partition 1's ids come between).
  // Partition 1: y z.
  analyzer.observe(event_at(0, 0), id_of("a", "T"), "a", hash64("a"));
  analyzer.observe(event_at(0, 1), id_of("x", "T"), "x", hash64("x"));
  analyzer.observe(event_at(1, 0), id_of("y", "T"), "y", hash64("y"));
  analyzer.observe(event_at(1, 1), id_of("z", "T"), "z", hash64("z"));
  analyzer.observe(event_at(0, 2), id_of("a", "T"), "a", hash64("a"));
  auto result = analyzer.finish();
  EXPECT_FALSE(result.summary.exact);
  EXPECT_EQ(result.summary.window_misses.low, 0); // partition 0 alone holds a
  EXPECT_EQ(result.summary.window_misses.high, 1);
  ASSERT_NE(find(result, "window-miss"), nullptr);
  EXPECT_NE(find(result, "window-miss")->title.find("between 0 and 1"), std::string::npos)
      << find(result, "window-miss")->title;
}

TEST(WindowAnalyzer, AConsumersWindowOverOnePartitionIsExact) {
  WindowSpec s = spec(WindowKind::Lru);
  s.capacity = 1;
  s.scope = WindowScope::Consumer;
  WindowAnalyzer analyzer(s, 5, {});
  analyzer.observe(event_at(0, 0), id_of("a", "T"), "a", hash64("a"));
  analyzer.observe(event_at(0, 1), id_of("b", "T"), "b", hash64("b"));
  analyzer.observe(event_at(0, 2), id_of("a", "T"), "a", hash64("a"));
  auto result = analyzer.finish();
  EXPECT_TRUE(result.summary.exact);
  EXPECT_EQ(result.summary.window_misses.low, 1);
  EXPECT_EQ(result.summary.window_misses.high, 1);
}
