// Sharded runs and their merge (issue 17): N processes each reading the partitions p with
// p mod N = K, put together by `dedupctl merge`, give the report one process over the whole range
// gives, field by field; and merge refuses what cannot be put together exactly.
#include "tests/cli/report_json.hpp"
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <set>
#include <sstream>
#include <thread>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

constexpr std::int64_t k_base_ts = 1'763'600'000'000; // 2025-11-20T00:53:20Z
constexpr int k_partitions = 4;
constexpr int k_per_partition = 1300; // two rounds of the canonical order (blocks of 1,024 offsets)

struct Plant {
  int partition;
  int offset;
  std::string id; // empty: no id at all
  std::string payload;
  std::int64_t ts;
};

// Every finding kind that spans partitions planted across shards, with "first" decided by the
// canonical order (rounds of 1,024 offsets, partitions by number within a round) rather than by
// partition or offset alone:
// - dup-A on p1@20 (round 0) and p0@1100 (round 1): p1's is first, p0's a log duplicate;
// - reuse-B on p2@30 (round 0) and p1@1040 (round 1) with one payload: p1's a log duplicate; and on
//   p3@1200 (round 1, after p1 in it) with another: an id reuse;
// - sem-1 (p2@50), sem-2 (p3@51, 2 s later) and sem-3 (p2@1250, round 1, 1 s after sem-1): the same
//   intent under new ids, two semantic duplicates, sem-3's against sem-2's time (the latest earlier);
// - no id on p1@60 and p3@1290.
// Each repeat and the event it repeats are on adjacent partitions, so in different shards for every
// N from 2 to 4 (checked by PlantsSpanShards).
std::vector<Plant> plants() {
  const std::string same_order = R"({"type":"OrderPlaced","order_id":"o-sem","amount":5})";
  const std::string reused = R"({"type":"OrderPlaced","order_id":"o-reuse","amount":2})";
  return {
      {1, 20, "dup-A", R"({"type":"OrderPlaced","order_id":"o-dup","amount":1})", k_base_ts + 20'000},
      {0, 1100, "dup-A", R"({"type":"OrderPlaced","order_id":"o-dup","amount":1})", k_base_ts + 1'100'000},
      {2, 30, "reuse-B", reused, k_base_ts + 30'000},
      {1, 1040, "reuse-B", reused, k_base_ts + 1'040'000},
      {3, 1200, "reuse-B", R"({"type":"OrderPlaced","order_id":"o-other","amount":3})", k_base_ts + 1'200'000},
      {2, 50, "sem-1", same_order, k_base_ts + 3'000'000},
      {3, 51, "sem-2", same_order, k_base_ts + 3'002'000},
      {2, 1250, "sem-3", same_order, k_base_ts + 3'001'000},
      {1, 60, "", R"({"type":"OrderPlaced","order_id":"o-noid","amount":4})", k_base_ts + 60'000},
      {3, 1290, "", R"({"type":"OrderPlaced","order_id":"o-noid2","amount":4})", k_base_ts + 1'290'000},
  };
}

// (repeat, what it repeats) as partitions: dup-A, reuse-B twice, sem-2 and sem-3.
const std::vector<std::pair<int, int>> k_pairs{{0, 1}, {1, 2}, {3, 2}, {3, 2}, {2, 3}};

// kcat -J lines, partition after partition.
std::string planted_dump() {
  auto planted = plants();
  std::string out;
  for (int p = 0; p < k_partitions; ++p) {
    for (int i = 0; i < k_per_partition; ++i) {
      std::string id = fmt::format("e-{}-{}", p, i);
      std::string payload = fmt::format(R"({{"type":"OrderPlaced","order_id":"o-{}-{}","amount":{}}})", p, i, i);
      std::int64_t ts = k_base_ts + i * 1000 + p;
      for (const auto& plant : planted) {
        if (plant.partition == p && plant.offset == i) {
          id = plant.id;
          payload = plant.payload;
          ts = plant.ts;
        }
      }
      OwnedEvent e{.topic = "orders",
                   .partition = p,
                   .offset = i,
                   .timestamp_ms = ts,
                   .key = fmt::format("k{}", i),
                   .payload = payload};
      if (!id.empty()) {
        e.headers.emplace_back("event_id", id);
      }
      out += kcat_line(e);
    }
  }
  return out;
}

// The report without the time it was written at (each process has its own).
Json timeless(Json doc) {
  doc.erase("generated_at");
  return doc;
}

// Field by field, so that a failure names the field.
void expect_same_report(const Json& merged, const Json& whole, const std::string& what) {
  for (const auto& [key, value] : whole.items()) {
    EXPECT_EQ(merged.value(key, Json()), value) << what << ": field " << key;
  }
  for (const auto& [key, value] : merged.items()) {
    EXPECT_TRUE(whole.contains(key)) << what << ": the merge added field " << key;
  }
}

// Runs `args` as shards 0..N-1 of N, each with its digest, then merges them.
CommandResult sharded(const std::vector<std::string>& args, int n, const TempDir& dir, const std::string& name,
                      std::vector<std::string> merge_args = {}) {
  std::vector<std::string> digests;
  for (int k = 0; k < n; ++k) {
    std::string digest = dir.file(fmt::format("{}-{}-of-{}.digest", name, k, n));
    auto run = args;
    run.insert(run.end(), {"--shard", fmt::format("{}/{}", k, n), "--digest", digest});
    auto result = run_dedupctl(run);
    EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << "shard " << k << ": " << result.err;
    digests.push_back(digest);
  }
  std::vector<std::string> merge{"merge"};
  merge.insert(merge.end(), digests.begin(), digests.end());
  merge.insert(merge.end(), merge_args.begin(), merge_args.end());
  merge.insert(merge.end(), {"--format", "json"});
  return run_dedupctl(merge);
}

// What the planted data must show in one process over the whole range, so that the comparisons
// below are over every finding kind.
// A dump is read in its line order (partition after partition here), a topic in the canonical one.
void expect_plants_found(const Json& whole, bool dump) {
  const auto& summary = whole.at("summary");
  EXPECT_EQ(summary.at("events"), k_partitions * k_per_partition);
  EXPECT_EQ(summary.at("no_id"), 2);
  EXPECT_EQ(summary.at("log_duplicates"), 2);
  EXPECT_EQ(summary.at("id_reuse"), 1);
  EXPECT_EQ(summary.at("semantic_duplicates"), 2);
  for (const auto& finding : whole.at("findings")) {
    if (finding.at("id") == "log-duplicate") {
      // From a topic dup-A's repeat is on p0, reuse-B's on p1; in the dump p0 and p1 come first.
      EXPECT_EQ(finding.at("partitions"), Json::parse(dump ? "[1, 2]" : "[0, 1]"));
    }
    if (finding.at("id") == "id-reuse") {
      EXPECT_EQ(finding.at("examples").at(0).at("partition"), 3);
      EXPECT_EQ(finding.at("examples").at(0).at("offset"), 1200);
    }
    if (finding.at("id") == "semantic-duplicate") {
      EXPECT_EQ(finding.at("partitions"), Json::parse("[2, 3]"));
    }
  }
}

TEST(ShardedPlants, PlantsSpanShards) {
  for (int n = 2; n <= 4; ++n) {
    for (const auto& [repeat, original] : k_pairs) {
      EXPECT_NE(repeat % n, original % n) << "p" << repeat << " and p" << original << " share a shard of " << n;
    }
  }
}

class ShardedScan : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    write_file(m_dir.file("orders.ndjson"), planted_dump());
    if (GetParam() == "file") {
      m_args = {"scan", "--input", m_dir.file("orders.ndjson"), "--format", "json"};
      return;
    }
    m_topic = fresh_topic(GetParam(), "orders", k_partitions, planted_dump());
    DEDUPCTL_REQUIRE_SERVER(!m_topic.bootstrap.empty(), m_topic.why);
    m_args = {"scan", "-b", m_topic.bootstrap, "--topic", m_topic.topic, "--format", "json"};
  }

  TempDir m_dir;
  TestTopic m_topic;
  std::vector<std::string> m_args;
};

INSTANTIATE_TEST_SUITE_P(Sources, ShardedScan, ::testing::Values("file", "mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& source) { return source.param; });

TEST_P(ShardedScan, TheMergeOfNShardsIsTheReportOfOneProcessFieldByField) {
  auto whole_run = run_dedupctl(m_args);
  ASSERT_EQ(whole_run.exit_code, 1) << whole_run.err;
  Json whole = timeless(parse(whole_run));
  expect_plants_found(whole, GetParam() == "file");
  for (int n = 1; n <= 4; ++n) {
    auto merged_run = sharded(m_args, n, m_dir, "scan");
    EXPECT_EQ(merged_run.exit_code, 1) << merged_run.err;
    Json merged = timeless(parse(merged_run));
    expect_same_report(merged, whole, fmt::format("{} shards", n));
  }
}

TEST_P(ShardedScan, EachShardReadsOnlyItsPartitions) {
  for (int k = 0; k < 3; ++k) {
    auto args = m_args;
    args.insert(args.end(), {"--shard", fmt::format("{}/3", k), "--digest", m_dir.file("d")});
    auto result = run_dedupctl(args);
    ASSERT_TRUE(result.exit_code == 0 || result.exit_code == 1) << result.err;
    Json doc = parse(result);
    std::set<int> partitions;
    long long events = 0;
    for (const auto& p : doc.at("source").at("partitions")) {
      partitions.insert(p.at("partition").get<int>());
      events += p.at("events").get<long long>();
    }
    std::set<int> expected;
    for (int p = 0; p < k_partitions; ++p) {
      if (p % 3 == k) {
        expected.insert(p);
      }
    }
    EXPECT_EQ(partitions, expected) << "shard " << k;
    EXPECT_EQ(doc.at("summary").at("events"), events);
  }
}

// The audits compared below, over the same planted topic.
// - Redis, key template by order id (so sem-1..3, which share an order, collide across shards; a
//   log duplicate keeps its id and does not), TTL declared: records for order ids of events i with
//   i % 10 != 0 (none for the plants), "processing" for i % 50 == 5; as of a fixed --now.
// - A snapshot of keys by event id, TTL not declared (estimated from the records, absent events
//   classified at the end): records written at the event's time with a TTL of 1 h.
constexpr std::int64_t k_now = k_base_ts + 60 * 60'000;

std::string order_of(int p, int i) { return fmt::format("o-{}-{}", p, i); }

void plant_redis(const RedisServer& redis) {
  std::string mset;
  int pairs = 0;
  for (int p = 0; p < k_partitions; ++p) {
    for (int i = 0; i < k_per_partition; ++i) {
      if (i % 10 == 0) {
        continue;
      }
      mset += fmt::format(" dedup:{} {}", order_of(p, i), i % 50 == 5 ? "processing" : "done");
      if (++pairs == 200) {
        ASSERT_EQ(redis.command("MSET" + mset), "+OK\r\n");
        mset.clear();
        pairs = 0;
      }
    }
  }
  if (!mset.empty()) {
    ASSERT_EQ(redis.command("MSET" + mset), "+OK\r\n");
  }
}

std::string planted_snapshot() {
  std::string out = fmt::format("# dedupctl-snapshot v1\ttaken_at={}\tstore=redis://test\tmatch=dedup:*\n", k_now);
  for (int p = 0; p < k_partitions; ++p) {
    for (int i = 0; i < k_per_partition; ++i) {
      if (i % 10 != 0) {
        std::int64_t ts = k_base_ts + i * 1000 + p;
        out += fmt::format("dedup:e-{}-{}\t{}\tdone\n", p, i, ts + 3'600'000 - k_now);
      }
    }
  }
  return out;
}

class ShardedAudit : public ShardedScan {
protected:
  void SetUp() override {
    ShardedScan::SetUp();
    if (HasFatalFailure() || IsSkipped()) {
      return;
    }
    m_args[0] = "audit";
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    plant_redis(m_redis);
    write_file(m_dir.file("keys.tsv"), planted_snapshot());
  }
  std::vector<std::string> with(std::vector<std::string> extra) const {
    auto args = m_args;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  RedisServer m_redis;
};

INSTANTIATE_TEST_SUITE_P(Sources, ShardedAudit, ::testing::Values("file", "mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& source) { return source.param; });

TEST_P(ShardedAudit, TheMergeOfNShardsIsTheReportOfOneProcessFieldByField) {
  std::string now = std::to_string(k_now);
  const std::vector<std::vector<std::string>> audits{
      with({"--store", m_redis.uri(), "--key-template", "dedup:{json:/order_id}", "--ttl", "30m", "--retention", "7d",
            "--now", now}),
      with({"--store", "file:" + m_dir.file("keys.tsv"), "--key-template", "dedup:{event_id}", "--retention", "7d",
            "--side-effects", "OrderPlaced=internal", "--now", now})};
  for (std::size_t a = 0; a < audits.size(); ++a) {
    const auto& args = audits[a];
    bool redis = a == 0;
    auto whole_run = run_dedupctl(args);
    ASSERT_EQ(whole_run.exit_code, 1) << whole_run.err;
    Json whole = timeless(parse(whole_run));
    expect_plants_found(whole, GetParam() == "file");
    const auto& summary = whole.at("summary");
    for (const char* state : redis ? std::vector<const char*>{"covered", "expired", "missing"}
                                   : std::vector<const char*>{"expiring", "missing"}) {
      EXPECT_GT(summary.at(state).get<long long>(), 0) << state << (redis ? " against Redis" : " offline") << "\n"
                                                       << summary.dump();
    }
    if (!redis) {
      EXPECT_EQ(whole.at("placement").at("ttl_source"), "estimate");
    } else {
      EXPECT_EQ(summary.at("key_collisions"), 2) << "sem-2 and sem-3 take sem-1's order key";
      EXPECT_GT(summary.at("in_progress").get<long long>() + summary.at("orphaned").get<long long>(), 0);
    }
    for (int n = 1; n <= 4; ++n) {
      auto merged_run = sharded(args, n, m_dir, "audit");
      EXPECT_EQ(merged_run.exit_code, 1) << merged_run.err;
      expect_same_report(timeless(parse(merged_run)), whole,
                         fmt::format("{} shards {}", n, redis ? "against Redis" : "offline"));
    }
  }
}

// What cannot be put together exactly is refused, exit 2 naming the files and the problem, and no
// report is written.
class MergeRefusals : public ::testing::Test {
protected:
  void SetUp() override { write_file(m_dir.file("orders.ndjson"), planted_dump()); }
  // Shard K of N of a scan of the dump, with `extra` options; returns its digest.
  std::string shard(int k, int n, std::vector<std::string> extra = {}, const std::string& command = "scan") {
    std::string digest = m_dir.file(fmt::format("{}-{}-{}-{}.digest", command, k, n, m_count++));
    std::vector<std::string> args{
        command,    "--input", m_dir.file("orders.ndjson"), "--shard", fmt::format("{}/{}", k, n), "--digest", digest,
        "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_dedupctl(args);
    EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << result.err;
    return digest;
  }
  void expect_refused(const std::vector<std::string>& digests, const std::string& message) {
    std::vector<std::string> args{"merge", "--output", m_dir.file("merged.json"), "--format", "json"};
    args.insert(args.end(), digests.begin(), digests.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << "expected: " << message << "\nstderr: " << result.err;
    // No merged report: only the failure's document, where --output says (incomplete, exit 2, why).
    ASSERT_TRUE(std::filesystem::exists(m_dir.file("merged.json"))) << "the failure's document";
    auto doc = nlohmann::json::parse(read_file(m_dir.file("merged.json")));
    EXPECT_EQ(doc.at("complete"), false);
    EXPECT_EQ(doc.at("exit_code"), 2);
    EXPECT_NE(doc.at("error").at("message").get<std::string>().find(message), std::string::npos) << doc.dump();
    EXPECT_FALSE(doc.contains("replay")) << "a refused merge wrote a merged report";
    EXPECT_TRUE(doc.at("summary").empty()) << doc.dump();
    std::filesystem::remove(m_dir.file("merged.json"));
  }

  TempDir m_dir;
  int m_count = 0;
};

TEST_F(MergeRefusals, ShardsRunWithDifferentSettings) {
  expect_refused({shard(0, 2), shard(1, 2, {"--window", "10m"})},
                 "were run with different settings ('semantic window=5m' against 'semantic window=10m')");
  expect_refused({shard(0, 2), shard(1, 2, {"--examples", "3"})}, "'max examples=5' against 'max examples=3'");
}

TEST_F(MergeRefusals, AuditShardsWithADifferentTtlOrKeyTemplate) {
  write_file(m_dir.file("keys.tsv"), planted_snapshot());
  std::vector<std::string> audit{"--store", "file:" + m_dir.file("keys.tsv"), "--now", std::to_string(k_now)};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), audit.begin(), audit.end());
    return extra;
  };
  expect_refused({shard(0, 2, with({"--ttl", "1h"}), "audit"), shard(1, 2, with({"--ttl", "2h"}), "audit")},
                 "'ttl=1h' against 'ttl=2h'");
  expect_refused({shard(0, 2, with({"--key-template", "a:{event_id}"}), "audit"),
                  shard(1, 2, with({"--key-template", "b:{event_id}"}), "audit")},
                 "'key template=a:{event_id}' against 'key template=b:{event_id}'");
}

TEST_F(MergeRefusals, ShardsOfDifferentRanges) {
  expect_refused({shard(0, 2), shard(1, 2, {"--from", "5"})}, "read different ranges ('dump from earliest to latest");
  // Another dump (one line less) under the same name.
  std::string first = shard(0, 2);
  auto text = planted_dump();
  write_file(m_dir.file("orders.ndjson"), text.substr(0, text.rfind('\n', text.size() - 2) + 1));
  expect_refused({first, shard(1, 2)}, "read different ranges");
}

TEST_F(MergeRefusals, AShardMissingGivenTwiceOrOfAnotherRun) {
  expect_refused({shard(0, 3), shard(2, 3)}, "shard 1/3 is missing: give the digests of all 3 shards");
  std::string zero = shard(0, 2);
  expect_refused({zero, shard(1, 2), zero}, "shard 0/2 is given twice");
  expect_refused({shard(0, 2), shard(1, 3)}, "is one of 3 shards and");
  write_file(m_dir.file("keys.tsv"), planted_snapshot());
  expect_refused({shard(0, 2), shard(1, 2, {"--store", "file:" + m_dir.file("keys.tsv"), "--now", "0"}, "audit")},
                 "is a digest of dedupctl audit and");
}

TEST_F(MergeRefusals, WhatIsNotAWholeDigest) {
  write_file(m_dir.file("report.json"), "{}\n");
  expect_refused({m_dir.file("report.json")}, "is not a dedupctl digest (it does not start as one)");
  std::string whole = shard(0, 1);
  std::string bytes = read_file(whole);
  write_file(m_dir.file("cut.digest"), bytes.substr(0, bytes.size() / 2));
  expect_refused({m_dir.file("cut.digest")}, "its end is missing: it was cut short");
  expect_refused({m_dir.file("no-such.digest")}, "cannot read the digest");
  // A header that is not JSON (a damaged file whose ends are intact).
  auto at = bytes.find("{\"audit\":");
  ASSERT_NE(at, std::string::npos);
  std::string damaged = bytes;
  damaged[at] = 'X';
  write_file(m_dir.file("damaged.digest"), damaged);
  expect_refused({m_dir.file("damaged.digest")}, "its header does not parse");
}

TEST_F(MergeRefusals, BadShardOptionsAreUsageErrors) {
  for (const auto& [args, message] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--shard", "2/2", "--digest", m_dir.file("d")}, "invalid --shard '2/2': expected K/N with 0 <= K < N"},
           {{"--shard", "1", "--digest", m_dir.file("d")}, "invalid --shard '1'"},
           {{"--shard", "0/2"}, "--shard 0/2 needs --digest FILE"},
           {{"--now", "yesterday", "--digest", m_dir.file("d")}, "invalid --now 'yesterday'"}}) {
    std::vector<std::string> run{"scan", "--input", m_dir.file("orders.ndjson")};
    run.insert(run.end(), args.begin(), args.end());
    auto result = run_dedupctl(run);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_FALSE(std::filesystem::exists(m_dir.file("d")));
  }
}

// A shard that could not read its partitions makes the merge incomplete: exit 3, never a clean verdict.
TEST(MergeIncomplete, AFailedShardMakesTheMergeIncomplete) {
  auto topic = fresh_topic("mock", "orders", k_partitions, planted_dump());
  ASSERT_FALSE(topic.bootstrap.empty()) << topic.why;
  TempDir dir;
  auto run_shard = [&](int k, const std::string& bootstrap) {
    std::string digest = dir.file(fmt::format("{}.digest", k));
    return std::make_pair(run_dedupctl({"scan", "-b", bootstrap, "--topic", topic.topic, "--timeout", "2s", "--shard",
                                        fmt::format("{}/2", k), "--digest", digest, "--format", "json"}),
                          digest);
  };
  auto [ok, first] = run_shard(0, topic.bootstrap);
  EXPECT_EQ(ok.exit_code, 0) << ok.err; // partitions 0 and 2 hold no error
  auto [failed, second] = run_shard(1, fmt::format("127.0.0.1:{}", free_port()));
  EXPECT_EQ(failed.exit_code, 3) << failed.err;
  auto merged = run_dedupctl({"merge", first, second, "--format", "json"});
  EXPECT_EQ(merged.exit_code, 3) << merged.err;
  Json doc = parse(merged);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("(shard 1/2) is incomplete"), std::string::npos)
      << doc.at("error");
}

// A digest that cannot be written is exit 3 naming it: the shard's work is lost, and says so.
TEST_F(MergeRefusals, ADigestOnAFullDiskIsExit3NamingIt) {
  auto result =
      run_dedupctl({"scan", "--input", m_dir.file("orders.ndjson"), "--shard", "0/2", "--digest", "/dev/full"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("/dev/full"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("No space left on device"), std::string::npos) << result.err;
}

// A shard sorts its records in TMPDIR: one that cannot be written is named before anything is read
// (exit 2), and neither the digest nor its temporary sibling is left.
TEST_F(MergeRefusals, AShardWhoseTmpdirCannotBeWrittenIsExit2NamingIt) {
  std::string missing = m_dir.file("no-such-tmp");
  std::string digest = m_dir.file("shard.digest");
  auto result = run_dedupctl(
      {"scan", "--input", m_dir.file("orders.ndjson"), "--shard", "0/2", "--digest", digest, "--format", "json"}, {},
      {{"TMPDIR", missing}});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find(missing + " (TMPDIR)"), std::string::npos) << result.err;
  Json doc = parse(result); // the error report every exit 2 writes with --format json: no verdict
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(doc.at("exit_code"), 2);
  EXPECT_TRUE(doc.at("findings").empty());
  for (const auto& entry : std::filesystem::directory_iterator(m_dir.path())) {
    EXPECT_EQ(entry.path().filename(), "orders.ndjson") << "left behind";
  }
}

// A shard SIGKILLed mid-run leaves no digest and nothing in TMPDIR: the merge refuses it as
// missing (exit 2, naming it), and the shard run again merges exactly.
TEST_F(MergeRefusals, AShardKilledMidRunIsMissingUntilItIsRunAgain) {
  std::string dump = planted_dump();
  TempDir tmp;
  std::string first = m_dir.file("killed-0.digest");
  {
    SpawnOptions options;
    options.pipe_stdin = true;
    options.silence = true;
    options.env = {{"TMPDIR", tmp.path()}};
    Process shard({DEDUPCTL_BINARY, "scan", "--input", "-", "--shard", "0/2", "--digest", first, "--format", "json"},
                  options);
    std::istringstream lines(dump.substr(0, dump.rfind('\n', dump.size() / 2)));
    for (std::string line; std::getline(lines, line);) {
      shard.write_line(line); // half the dump, then nothing: the shard is mid-run
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ASSERT_TRUE(shard.running());
    shard.signal(SIGKILL);
    EXPECT_EQ(shard.wait(), 128 + SIGKILL);
  }
  EXPECT_FALSE(std::filesystem::exists(first));
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the sort's temporary file outlived the shard";
  std::string second = shard(1, 2);
  auto refused = run_dedupctl({"merge", first, second, "--format", "json"});
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find(first), std::string::npos) << refused.err;

  // Run again, the shard merges to what one process reports.
  auto again = run_dedupctl(
      {"scan", "--input", m_dir.file("orders.ndjson"), "--shard", "0/2", "--digest", first, "--format", "json"});
  EXPECT_TRUE(again.exit_code == 0 || again.exit_code == 1) << again.err;
  auto merged = run_dedupctl({"merge", first, second, "--format", "json"});
  auto whole = run_dedupctl({"scan", "--input", m_dir.file("orders.ndjson"), "--format", "json"});
  EXPECT_EQ(merged.exit_code, whole.exit_code) << merged.err;
  expect_same_report(timeless(parse(merged)), timeless(parse(whole)), "a killed shard run again");
}

// A password typed in --store appears nowhere: not in the shard's report, its digest, or the merge.
TEST(ShardSecrets, APasswordInTheStoreIsInNoDigestAndNoOutput) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_EQ(redis.command("CONFIG SET requirepass Sh4rdS3cret"), "+OK\r\n");
  TempDir dir;
  write_file(dir.file("orders.ndjson"), planted_dump());
  for (std::string password : {"Sh4rdS3cret", "wrong-Pa55word"}) {
    std::string store = fmt::format("redis://:{}@127.0.0.1:{}", password, redis.port());
    std::vector<std::string> digests;
    std::string everything;
    for (int k = 0; k < 2; ++k) {
      std::string digest = dir.file(fmt::format("{}-{}.digest", password.size(), k)); // named without it
      auto result = run_dedupctl({"audit", "--input", dir.file("orders.ndjson"), "--store", store, "--ttl", "1h",
                                  "--now", std::to_string(k_now), "--shard", fmt::format("{}/2", k), "--digest", digest,
                                  "--format", "json"});
      EXPECT_TRUE(result.exit_code == 1 || (password != "Sh4rdS3cret" && result.exit_code == 3)) << result.err;
      everything += result.out + result.err + read_file(digest);
      digests.push_back(digest);
    }
    auto merged = run_dedupctl({"merge", digests[0], digests[1], "--format", "json"});
    EXPECT_EQ(merged.exit_code, password == "Sh4rdS3cret" ? 1 : 3) << merged.err;
    everything += merged.out + merged.err;
    auto at = everything.find(password);
    EXPECT_EQ(at, std::string::npos) << password
                                     << " leaked: " << everything.substr(at == std::string::npos ? 0 : at - 100, 200);
  }
}

TEST(ShardedAuditOptions, SeveralShardsOfAnAuditNeedOneNow) {
  TempDir dir;
  write_file(dir.file("orders.ndjson"), planted_dump());
  auto result = run_dedupctl({"audit", "--input", dir.file("orders.ndjson"), "--store", "file:" + dir.file("none"),
                              "--shard", "1/2", "--digest", dir.file("d")});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--shard 1/2 needs --now TIME"), std::string::npos) << result.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("d")));
}

} // namespace
