// dedupctl audit --store memory: end to end: the consumer's window simulated over a topic on either
// broker, what a seek re-applies when the window is empty after a restart, the text a person reads,
// and every way the placement can be given wrong (exit 2, before anything is contacted).
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace dedupctl::testing;

namespace {

// Ids a, b, c, a, d, b, a (offsets 0..6), one partition, group billing committed at 5.
std::string repeats(long long now) {
  std::string out;
  std::vector<std::string> ids{"a", "b", "c", "a", "d", "b", "a"};
  for (std::size_t i = 0; i < ids.size(); ++i) {
    out += envelope(static_cast<long long>(i), now - (10 - static_cast<long long>(i)) * k_minute, ids[i],
                    "PaymentCharged");
  }
  return out;
}

std::vector<std::string> window_args(const TestTopic& cluster, std::vector<std::string> extra) {
  std::vector<std::string> args{"audit",  "-b", cluster.bootstrap, "--topic", cluster.topic, "--group", "billing",
                                "--seek", "1",  "--store",         "memory:", "--retention", "7d",      "--fail-on",
                                "none"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

} // namespace

class Windows : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    m_cluster = fresh_topic(GetParam(), "pay", 1, repeats(wall_ms()), "billing", {{0, 5}});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
  }
  TestTopic m_cluster;
};

INSTANTIATE_TEST_SUITE_P(Brokers, Windows, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

// An LRU of 2 over a b c a d b a: the first a repeat comes 3 apart (b and c pushed it out): applied
// again; b comes back after a and d: applied again; the last a follows d and b: applied again. The
// window is empty after a restart, so the seek to 1 re-applies all of [1, 5).
TEST_P(Windows, AnLruNamesEachRepeatItLetThroughAndASeekReappliesTheWholeWindow) {
  auto result =
      run_dedupctl(window_args(m_cluster, {"--layout", "lru", "--layout-option", "capacity=2", "-o", "json"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = parse(result);
  const auto& window = doc.at("summary").at("window");
  EXPECT_EQ(window.at("layout"), "lru");
  EXPECT_EQ(window.at("exact"), true);
  EXPECT_EQ(window.at("events"), 7);
  EXPECT_EQ(window.at("window_misses"), 3);
  EXPECT_EQ(window.at("false_positives"), 0);
  EXPECT_EQ(window.at("applied"), 7);
  std::vector<long long> offsets;
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == "window-miss") {
      EXPECT_EQ(f.at("severity"), "error"); // PaymentCharged is of no declared class: external
      for (const auto& e : f.at("examples")) {
        offsets.push_back(e.at("offset"));
      }
    }
  }
  EXPECT_EQ(offsets, (std::vector<long long>{3, 5, 6}));
  EXPECT_EQ(doc.at("placement").at("ttl_source"), "window");
  EXPECT_EQ(doc.at("placement").at("kind"), "memory");
  EXPECT_EQ(doc.at("replay").at("would_reapply"), 4); // [1, 5): nothing of the window survives the restart
  EXPECT_EQ(doc.at("summary").at("pending"), 2);
}

// A window of 4 holds every repeat (3 distinct ids at most come between two of one id): no miss, and
// the text says what the window did.
TEST_P(Windows, TheTextReportShowsTheWindowBesideTheCoverage) {
  auto result = run_dedupctl(window_args(m_cluster, {"--layout", "lru", "--layout-option", "capacity=4"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("WINDOW  lru of 4 ids, one window a partition"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("window misses (applied again)  0"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("a window in memory: nothing survives a restart"), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("window-miss"), std::string::npos) << result.out;
}

TEST_P(Windows, AnIdempotentTypesMissIsAWarning) {
  auto result = run_dedupctl(window_args(m_cluster, {"--layout", "lru", "--layout-option", "capacity=2",
                                                     "--side-effects", "PaymentCharged=idempotent", "-o", "json"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (const auto& f : parse(result).at("findings")) {
    if (f.at("id") == "window-miss") {
      EXPECT_EQ(f.at("severity"), "warning");
    }
  }
}

// Every wrong placement of a window or a filter is exit 2 with what to do, nothing on stdout, and the
// broker never asked (the bootstrap is a closed port).
TEST(WindowUsage, AWrongWindowIsAUsageErrorBeforeAnythingIsContacted) {
  struct Case {
    std::vector<std::string> args;
    const char* said;
  };
  const std::vector<Case> cases{
      {{"--store", "memory:"}, "give --layout lru, lru-bloom or bloom-exact with --layout-option capacity=N"},
      {{"--store", "memory:", "--layout", "lru"}, "--layout lru needs --layout-option capacity=N"},
      {{"--store", "memory:", "--layout", "lru-bloom", "--layout-option", "capacity=3"},
       "needs --layout-option bloom-items=N --layout-option bloom-fp=P"},
      {{"--store", "memory:", "--layout", "lru", "--layout-option", "capacity=3", "--layout-option", "bloom-fp=0.1"},
       "--layout lru has no Bloom filter"},
      {{"--store", "memory:", "--layout", "lru", "--layout-option", "capacity=-1"},
       "capacity is a whole number above 0"},
      {{"--store", "memory:", "--layout", "lru", "--layout-option", "capacity=4294967295"},
       "capacity is at most 4294967294 ids"},
      {{"--store", "memory:", "--layout", "bloom-exact", "--layout-option", "capacity=3", "--layout-option",
        "bloom-items=10", "--layout-option", "bloom-fp=1.5"},
       "bloom-fp is a rate above 0 and below 1"},
      {{"--store", "memory:", "--layout", "lru", "--layout-option", "capacity=3", "--layout-option", "scope=node"},
       "takes capacity=N, bloom-items=N, bloom-fp=P (0 < P < 1), bloom-impl=bits-and-blooms|guava, "
       "scope=partition|consumer"},
      {{"--store", "memory:", "--layout", "lru", "--layout-option", "capacity=3", "--ttl", "1h"},
       "a window in memory has no TTL"},
      {{"--store", "redis://127.0.0.1:1", "--layout", "lru", "--layout-option", "capacity=3"},
       "is an in-process window: it is simulated over the log with --store memory:"},
      {{"--store", "memory:", "--layout", "spring-hash"}, "is a Redis layout"},
      // A filter the consumer dumped itself (--layout bloom): its library named, a file.
      {{"--store", "file:/nonexistent", "--layout", "bloom"},
       "--layout bloom needs --layout-option bloom-impl=bits-and-blooms|guava: the library that wrote the dump"},
      {{"--store", "file:/nonexistent", "--layout", "bloom", "--layout-option", "capacity=3"},
       "--layout bloom takes bloom-impl=bits-and-blooms|guava"},
      {{"--store", "redis://127.0.0.1:1", "--layout", "bloom", "--layout-option", "bloom-impl=guava"},
       "give --store file:PATH, not redis (a filter in Redis is --layout redis-bloom)"},
      {{"--store", "file:/nonexistent", "--layout", "bloom", "--layout-option", "bloom-impl=guava", "--collection",
        "x"},
       "--collection x: --layout bloom reads the whole file"},
      {{"--store", "file:/nonexistent", "--layout", "bloom", "--layout-option", "bloom-impl=guava"},
       "cannot read --store file: /nonexistent"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"audit",       "-b", fmt::format("127.0.0.1:{}", free_port()), "--topic", "pay",
                                  "--retention", "7d"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    SCOPED_TRACE(fmt::format("{}", fmt::join(c.args, " ")));
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(c.said), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "");
  }
}

// A replay cannot claim in a window: a memory window with a layout is refused as --via, naming why.
TEST(WindowUsage, AReplayViaAWindowIsRefused) {
  auto result =
      run_dedupctl({"replay", "-b", fmt::format("127.0.0.1:{}", free_port()), "--topic", "pay", "--via",
                    "memory:", "--layout", "lru-bloom", "--layout-option", "capacity=3", "--sink", "file:/dev/null"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("a window in memory cannot hold a replay's claims"), std::string::npos) << result.err;
}
