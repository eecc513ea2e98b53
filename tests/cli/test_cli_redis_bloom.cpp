// --layout redis-bloom end to end: a Bloom filter kept in Redis (RedisBloom's BF.*, loaded into
// Debian's redis-server from tests/support/redisbloom), read live with BF.MEXISTS, on either broker.
// Absent is exact (a filter has no false negatives); an event the group has not consumed that the
// filter already holds, under an id no consumed event carries, will be dropped: bloom-false-positive.
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

using namespace dedupctl::testing;

namespace {

std::string module_path() {
  const char* module = std::getenv("DEDUPCTL_REDISBLOOM_MODULE");
  return module && std::filesystem::exists(module) ? module : "";
}

std::string id_at(int i) { return fmt::format("pay-{:04d}", i); }

// pay-0000 … pay-0017 at offsets 0-17 then pay-0002 again (a redelivery) and pay-0019: 20 events, group
// billing committed at 15.
std::string events(long long now) {
  std::string out;
  for (int i = 0; i < 20; ++i) {
    out += envelope(i, now - (30 - i) * k_minute, i == 18 ? id_at(2) : id_at(i), "PaymentCharged");
  }
  return out;
}

} // namespace

class RedisBloom : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(!module_path().empty(), "no RedisBloom module: run tests/support/redisbloom/fetch and set "
                                                    "DEDUPCTL_REDISBLOOM_MODULE (scripts/test does)");
    m_redis.emplace(std::vector<std::string>{"--loadmodule", module_path()});
    DEDUPCTL_REQUIRE_SERVER(m_redis->available(), m_redis->why_unavailable());
    m_cluster = fresh_topic(GetParam(), "pay", 1, events(wall_ms()), "billing", {{0, 15}});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
    // The consumer added every id it applied below the committed offset but pay-0003 (lost with a
    // replica, say); pay-0017, not consumed yet, is in the filter too: as a false positive looks.
    ASSERT_EQ(m_redis->command("BF.RESERVE seen 0.01 1000"), "+OK\r\n");
    for (int i = 0; i < 15; ++i) {
      if (i != 3) {
        ASSERT_EQ(m_redis->command("BF.ADD seen " + id_at(i)), ":1\r\n");
      }
    }
    ASSERT_EQ(m_redis->command("BF.ADD seen " + id_at(17)), ":1\r\n");
  }

  // The audit of the filter `collection` live, or of its snapshot with `store` file:PATH.
  CommandResult audit(const std::string& collection, std::vector<std::string> extra = {}, std::string store = "") {
    store = store.empty() ? m_redis->uri() : store;
    std::vector<std::string> args{"audit",       "-b",           m_cluster.bootstrap, "--topic",     m_cluster.topic,
                                  "--group",     "billing",      "--store",           store,         "--layout",
                                  "redis-bloom", "--collection", collection,          "--retention", "7d",
                                  "--fail-on",   "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args);
  }

  std::optional<RedisServer> m_redis;
  TestTopic m_cluster;
};

INSTANTIATE_TEST_SUITE_P(Brokers, RedisBloom, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(RedisBloom, AbsentIsMissingAndAPendingEventTheFilterHoldsWillBeDropped) {
  auto result = audit("seen", {"-o", "json", "--examples", "100"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = parse(result);
  const auto& summary = doc.at("summary");
  EXPECT_EQ(summary.at("covered"), 16); // 14 consumed, pay-0017 and the redelivered pay-0002
  EXPECT_EQ(summary.at("missing"), 1);  // pay-0003: a filter has no false negatives
  EXPECT_EQ(summary.at("pending"), 3);  // offsets 15, 16, 19
  std::vector<long long> dropped;
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == "bloom-false-positive") {
      EXPECT_EQ(f.at("severity"), "error");
      EXPECT_EQ(f.at("count"), 1);
      for (const auto& e : f.at("examples")) {
        dropped.push_back(e.at("offset"));
        EXPECT_EQ(e.at("event_id"), id_at(17));
      }
    }
  }
  // pay-0002 at 18 is a redelivery of a consumed id, which the filter rightly catches.
  EXPECT_EQ(dropped, std::vector<long long>{17});
  EXPECT_EQ(doc.at("placement").at("layout"), "redis-bloom");
  EXPECT_EQ(doc.at("placement").at("collection"), "seen");
  EXPECT_NE(result.err.find("--collection seen: a Bloom filter of 15 items in 1 link, capacity 1000 (BF.INFO)"),
            std::string::npos)
      << result.err;
}

TEST_P(RedisBloom, AKeyOfAnotherTypeIsAUsageError) {
  ASSERT_EQ(m_redis->command("SET plain x"), "+OK\r\n");
  auto result = audit("plain");
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--collection plain: the key holds a string, not a Bloom filter"), std::string::npos)
      << result.err;
  EXPECT_EQ(result.out, "");
}

TEST_P(RedisBloom, AFilterThatIsGoneLeavesEveryConsumedEventMissing) {
  auto result = audit("flushed", {"-o", "json"}); // no such key: as after a failover to an empty replica
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(parse(result).at("summary").at("missing"), 15);
}

TEST_P(RedisBloom, AServerLostIsExit3AndNoVerdict) {
  m_redis->kill();
  auto result = audit("seen", {"-o", "json"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), false);
  for (const auto& f : doc.at("findings")) {
    EXPECT_NE(f.at("id"), "bloom-false-positive");
  }
}

// discover finds the filter among the keys (TYPE answers MBbloom--) and proposes reading it.
TEST_P(RedisBloom, DiscoverProposesTheFilter) {
  auto result = run_dedupctl(
      {"discover", "-b", m_cluster.bootstrap, "--topic", m_cluster.topic, "--store", m_redis->uri(), "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto candidates = parse(result).at("candidates");
  ASSERT_FALSE(candidates.empty()) << result.out;
  EXPECT_EQ(candidates[0].at("layout"), "redis-bloom") << result.out;
  EXPECT_EQ(candidates[0].at("collection"), "seen") << result.out;
}

// What an audit says of the filter, to compare two audits of it: the states' counts and the events
// the filter will drop.
std::string verdicts(const CommandResult& result) {
  auto doc = nlohmann::json::parse(result.out);
  std::string out;
  for (const char* state : {"covered", "missing", "pending", "expired", "expiring"}) {
    out += fmt::format("{}={} ", state, doc.at("summary").value(state, 0));
  }
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == "bloom-false-positive") {
      out += fmt::format("dropped={}:", f.at("count").get<long long>());
      for (const auto& e : f.at("examples")) {
        out += fmt::format(" {}@{}", e.at("event_id").get<std::string>(), e.at("offset").get<long long>());
      }
    }
  }
  return out;
}

// BF.SCANDUMP into a snapshot, then the audit offline (RedisBloom's layout and hashing rebuilt in
// core/window/redis_bloom) says what the live filter says: for the filter of the set-up, and for an
// overfilled one of several links whose false positives cover a consumed id that was never added.
TEST_P(RedisBloom, ASnapshotOfTheFilterAuditsOfflineAsTheLiveFilterDoes) {
  ASSERT_EQ(m_redis->command("BF.RESERVE scaled 0.3 4 EXPANSION 2"), "+OK\r\n");
  for (int i = 0; i < 15; ++i) {
    if (i != 3) {
      ASSERT_EQ(m_redis->command("BF.ADD scaled " + id_at(i)), ":1\r\n");
    }
  }
  for (int i = 0; i < 200; ++i) {
    m_redis->command(fmt::format("BF.ADD scaled noise-{}", i)); // :0 when the filter already says maybe
  }
  TempDir dir;
  for (const std::string key : {"seen", "scaled"}) {
    SCOPED_TRACE(key);
    std::string file = dir.file(key + ".snapshot");
    auto snap = run_dedupctl(
        {"snapshot", "--store", m_redis->uri(), "--layout", "redis-bloom", "--collection", key, "--output", file});
    ASSERT_EQ(snap.exit_code, 0) << snap.err;
    EXPECT_NE(snap.err.find("snapshot of the Bloom filter " + key), std::string::npos) << snap.err;
    auto live = audit(key, {"-o", "json", "--examples", "100"});
    ASSERT_EQ(live.exit_code, 0) << live.err;
    auto offline = audit(key, {"-o", "json", "--examples", "100"}, "file:" + file);
    ASSERT_EQ(offline.exit_code, 0) << offline.err;
    EXPECT_NE(offline.err.find("reading the Bloom filter " + key + " of snapshot"), std::string::npos) << offline.err;
    EXPECT_EQ(verdicts(offline), verdicts(live));
    if (key == "scaled") {
      // Overfilled, it says maybe for pay-0003 too (never added): the audit calls it covered, as the
      // consumer's skip does. That the two agree on it is the hashing's test.
      EXPECT_NE(verdicts(live), verdicts(audit("seen", {"-o", "json", "--examples", "100"})));
    }
  }
}

// A filter's snapshot that is not whole, or read with another layout, is exit 2 naming the file.
TEST_P(RedisBloom, ASnapshotCutShortOrReadAsAnotherLayoutIsAUsageError) {
  TempDir dir;
  std::string file = dir.file("seen.snapshot");
  auto snap = run_dedupctl(
      {"snapshot", "--store", m_redis->uri(), "--layout", "redis-bloom", "--collection", "seen", "--output", file});
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  std::string text = read_file(file);
  std::string header_only = text.substr(0, text.find('\n', text.find('\n') + 1) + 1);
  ASSERT_LT(header_only.size(), text.size());
  write_file(dir.file("cut.snapshot"), header_only);
  auto cut = audit("seen", {}, "file:" + dir.file("cut.snapshot"));
  EXPECT_EQ(cut.exit_code, 2) << cut.err;
  EXPECT_NE(cut.err.find("cut.snapshot: the filter's snapshot is cut short (chunks are missing)"), std::string::npos)
      << cut.err;
  auto plain = run_dedupctl(
      {"audit", "-b", m_cluster.bootstrap, "--topic", m_cluster.topic, "--store", "file:" + file, "--retention", "7d"});
  EXPECT_EQ(plain.exit_code, 2) << plain.err;
  EXPECT_NE(plain.err.find("the snapshot holds records of --layout redis-bloom, not plain"), std::string::npos)
      << plain.err;
}

// snapshot of a key that is no filter, or of none, is exit 2 and writes nothing; of a server lost,
// exit 3 and nothing written.
TEST_P(RedisBloom, ASnapshotOfNoFilterOrOfAServerLostWritesNothing) {
  ASSERT_EQ(m_redis->command("SET plain x"), "+OK\r\n");
  TempDir dir;
  struct Case {
    std::string key;
    int exit_code;
    std::string said;
  };
  std::vector<Case> cases{{"plain", 2, "--collection plain: the key holds a string, not a Bloom filter"},
                          {"gone", 2, "--collection gone: no such key; check the name"}};
  for (const auto& c : cases) {
    auto result = run_dedupctl({"snapshot", "--store", m_redis->uri(), "--layout", "redis-bloom", "--collection", c.key,
                                "--output", dir.file(c.key)});
    EXPECT_EQ(result.exit_code, c.exit_code) << result.err;
    EXPECT_NE(result.err.find(c.said), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file(c.key)));
  }
  m_redis->kill();
  auto lost = run_dedupctl({"snapshot", "--store", m_redis->uri(), "--layout", "redis-bloom", "--collection", "seen",
                            "--output", dir.file("lost")});
  EXPECT_EQ(lost.exit_code, 3) << lost.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("lost")));
}

// --store file: --layout bloom: a filter the consumer wrote to a file itself, by the library's own
// WriteTo (bits-and-blooms, the Go window consumer) or writeTo (Guava, the Java one), holding what
// the set-up's filter holds. The audit reads it with the library's hashing and says what the live
// RedisBloom filter says of the same ids.
class BloomDump : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    if (GetParam() == "bits-and-blooms") {
      const char* binary = std::getenv("DEDUPCTL_WINDOW_CONSUMER");
      DEDUPCTL_REQUIRE_SERVER(binary && std::filesystem::exists(binary),
                              "no Go window consumer: run tests/support/window/setup and set "
                              "DEDUPCTL_WINDOW_CONSUMER (scripts/test does)");
      m_library = {binary};
    } else {
      const char* libs = std::getenv("DEDUPCTL_JAVA_LIBS");
      DEDUPCTL_REQUIRE_SERVER(libs && std::filesystem::exists(std::string(libs) + "/classes/GuavaWindowConsumer.class"),
                              "no Guava window consumer: run tests/support/libraries/java/fetch and set "
                              "DEDUPCTL_JAVA_LIBS (scripts/test does)");
      m_library = {find_program("java"), "-cp", fmt::format("{0}/classes:{0}/libs/*", libs), "GuavaWindowConsumer"};
    }
    m_cluster = fresh_topic("mock", "pay", 1, events(wall_ms()), "billing", {{0, 15}});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
  }

  // The library's dump of a filter for 1000 ids at 1 % holding `ids`, in `path`.
  void dump(const std::vector<std::string>& ids, const std::string& path) {
    std::string input;
    for (const auto& id : ids) {
      input += id + "\n";
    }
    std::vector<std::string> argv = m_library;
    argv.insert(argv.end(), {"dump", "--bloom-items", "1000", "--bloom-fp", "0.01", "--out", path});
    auto result = run_command(argv, input);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }

  CommandResult audit(const std::string& path, const std::string& impl, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"audit",
                                  "-b",
                                  m_cluster.bootstrap,
                                  "--topic",
                                  m_cluster.topic,
                                  "--group",
                                  "billing",
                                  "--store",
                                  "file:" + path,
                                  "--layout",
                                  "bloom",
                                  "--layout-option",
                                  "bloom-impl=" + impl,
                                  "--retention",
                                  "7d",
                                  "--fail-on",
                                  "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args);
  }

  std::vector<std::string> m_library; // the consumer whose dump mode writes the library's file
  TestTopic m_cluster;
  TempDir m_dir;
};

INSTANTIATE_TEST_SUITE_P(Libraries, BloomDump, ::testing::Values("bits-and-blooms", "guava"),
                         [](const ::testing::TestParamInfo<std::string>& impl) {
                           return impl.param == "guava" ? std::string("guava") : std::string("bits_and_blooms");
                         });

TEST_P(BloomDump, TheLibrarysDumpIsReadWithItsHashing) {
  std::vector<std::string> ids;
  for (int i = 0; i < 15; ++i) {
    if (i != 3) {
      ids.push_back(id_at(i));
    }
  }
  ids.push_back(id_at(17));
  std::string path = m_dir.file("filter.bin");
  ASSERT_NO_FATAL_FAILURE(dump(ids, path));
  auto result = audit(path, GetParam(), {"-o", "json", "--examples", "100"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find(fmt::format("reading the {} Bloom filter {}", GetParam(), path)), std::string::npos)
      << result.err;
  EXPECT_EQ(verdicts(result), "covered=16 missing=1 pending=3 expired=0 expiring=0 dropped=1: pay-0017@17");
  // Read as the other library's, the same bytes are refused, not guessed.
  auto other = audit(path, GetParam() == "guava" ? "bits-and-blooms" : "guava");
  EXPECT_EQ(other.exit_code, 2) << other.err;
  EXPECT_NE(other.err.find(path + ": not a"), std::string::npos) << other.err;
  EXPECT_EQ(other.out, "");
}
