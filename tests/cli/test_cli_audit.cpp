// dedupctl audit and snapshot end to end: a real redis-server and the mock cluster, planted data,
// exact counts for every coverage state and finding, and every way the store can fail.
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <thread>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

// Snapshot lines for the records above (remaining TTLs as of the snapshot's time).
std::string snapshot(long long taken_at) {
  return fmt::format("# dedupctl-snapshot v1\ttaken_at={}\tstore=redis://test\tmatch=dedup:pay:*\n", taken_at) +
         fmt::format("dedup:pay:e-2\t{}\tdone\n", 30 * k_minute) + "dedup:pay:e-3\t-\tdone\n" +
         fmt::format("dedup:pay:e-4\t{}\tprocessing\n", k_minute) +
         fmt::format("dedup:pay:e-6\t{}\tdone\n", 8 * 24 * k_hour) +
         fmt::format("dedup:pay:e-8\t{}\tprocessing:run-1\n", k_minute);
}

} // namespace

// The planted events on either broker: librdkafka's mock cluster (a broker of its own per test), or
// the real Apache Kafka broker of the process (a topic of its own per test). The /kafka instances
// run in the real-kafka tier.
class AuditRedis : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    m_now = wall_ms();
    m_cluster = fresh_topic(GetParam(), "pay", 1, planted(m_now, m_now - 30 * k_minute), "billing", {{0, 8}});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
    m_bootstrap = m_cluster.bootstrap;
    m_topic = m_cluster.topic;
    plant_records(m_redis);
  }

  // audit_args over this test's topic.
  std::vector<std::string> audit(const std::string& store, std::vector<std::string> extra = {},
                                 const std::string& format = "json") const {
    return audit_args(m_bootstrap, store, std::move(extra), format, m_topic);
  }

  TestTopic m_cluster;
  std::string m_bootstrap;
  std::string m_topic;
  RedisServer m_redis;
  long long m_now = 0;
};

INSTANTIATE_TEST_SUITE_P(Brokers, AuditRedis, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(AuditRedis, EveryCoverageStateAndFindingIsCountedExactly) {
  auto result = run_dedupctl(audit(m_redis.uri()));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), true);
  expect_planted(doc);
  EXPECT_EQ(doc.at("placement").at("store"), m_redis.uri());
}

// A group that committed nothing (here: misspelt) is refused, exit 2 naming it, as
// kafka-consumer-groups refuses to shift offsets it does not have; never a window of the whole log.
TEST_P(AuditRedis, ASeekOnAGroupWithoutCommittedOffsetsIsRefused) {
  for (std::string seek : {"2", "-3", "committed"}) {
    auto args = audit(m_redis.uri());
    *(std::find(args.begin(), args.end(), "billing")) = "biling";
    *(std::find(args.begin(), args.end(), "--seek") + 1) = seek;
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << seek << ": " << result.err;
    EXPECT_NE(result.err.find("group 'biling' has no committed offset on " + m_topic + "[0]"), std::string::npos)
        << result.err;
    auto doc = parse(result);
    EXPECT_EQ(doc.at("complete"), false);
    EXPECT_TRUE(doc.at("findings").empty());
  }
  auto counted = audit(m_redis.uri());
  *(std::find(counted.begin(), counted.end(), "--seek") + 1) = "-6";
  auto result = run_dedupctl(counted);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_EQ(parse(result).at("source").at("partitions")[0].at("seek"), 2) << "committed 8 minus 6";
}

// The mock cluster cannot look a time up (it answers -1): a --seek by time is found while reading,
// the first event at or after it (offset 5, 10 minutes old), not the log start.
// A seek by time is exact on all three sources: the mock (which cannot look a time up), the real
// broker (ListOffsets), and a kcat dump of the same topic with the group's offsets as
// kafka-consumer-groups --export writes them (--committed): the same seek, the same window, the same
// numbers. Offsets and counts from the committed offset too.
TEST_P(AuditRedis, ASeekByTimeIsExactOnTheBrokerAndOnAKcatDumpWithTheGroupsOffsets) {
  std::string kcat = find_program("kcat");
  DEDUPCTL_REQUIRE_SERVER(!kcat.empty(), "kcat is not installed (apt-get install kcat)");
  auto dump = run_command({kcat, "-C", "-J", "-e", "-q", "-b", m_bootstrap, "-t", m_topic});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  TempDir dir;
  write_file(dir.file("dump.json"), dump.out);
  write_file(dir.file("committed.csv"), m_topic + ",0,8\n");
  auto on_dump = [&](std::vector<std::string> args) {
    auto b = std::find(args.begin(), args.end(), "-b");
    args.erase(b, b + 4); // -b B --topic T
    args.insert(args.end(), {"--input", dir.file("dump.json"), "--committed", dir.file("committed.csv")});
    return args;
  };
  for (const std::string seek : {"-15m", "5", "-3", "earliest", "committed", "latest", "@2020-01-01T00:00:00Z",
                                 "@2030-01-01T00:00:00Z"}) { // before the first event, after the last
    SCOPED_TRACE("--seek " + seek);
    auto args = audit(m_redis.uri());
    *(std::find(args.begin(), args.end(), "--seek") + 1) = seek;
    auto broker = parse(run_dedupctl(args));
    auto file = parse(run_dedupctl(on_dump(args)));
    ASSERT_TRUE(broker.contains("replay") && file.contains("replay")) << broker.dump() << "\n" << file.dump();
    EXPECT_EQ(file.at("source").at("kind"), "file");
    EXPECT_EQ(file.at("source").at("partitions")[0].at("seek"), broker.at("source").at("partitions")[0].at("seek"));
    EXPECT_EQ(file.at("source").at("partitions")[0].at("committed"), 8);
    EXPECT_EQ(file.at("summary"), broker.at("summary"));
    EXPECT_EQ(file.at("replay").at("events"), broker.at("replay").at("events"));
    EXPECT_EQ(file.at("replay").at("would_reapply"), broker.at("replay").at("would_reapply"));
    if (seek == "-15m") {
      EXPECT_EQ(broker.at("source").at("partitions")[0].at("seek"), 5);
      EXPECT_EQ(broker.at("replay").at("events"), 3) << "offsets 5..7";
    }
  }
  // Without the offsets, or without an offset for a partition the dump holds: exit 2, saying how.
  auto args = audit(m_redis.uri());
  auto no_offsets = on_dump(args);
  no_offsets.erase(std::find(no_offsets.begin(), no_offsets.end(), "--committed"),
                   std::find(no_offsets.begin(), no_offsets.end(), "--committed") + 2);
  auto refused = run_dedupctl(no_offsets);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("give them with --committed FILE"), std::string::npos) << refused.err;
  write_file(dir.file("committed.csv"), "other-topic,0,8\n");
  auto lacking = run_dedupctl(on_dump(args));
  EXPECT_EQ(lacking.exit_code, 2) << lacking.err;
  EXPECT_NE(lacking.err.find("has no offset of group 'billing' for " + m_topic + "[0]"), std::string::npos)
      << lacking.err;
  auto lacking_doc = parse(lacking); // -o json: the usage error as a document, without a verdict
  EXPECT_EQ(lacking_doc.at("complete"), false);
  EXPECT_TRUE(lacking_doc.at("summary").empty()) << lacking.out;
}

// -v says where the audit's time went, stage by stage, on stderr; the report is unchanged.
TEST_P(AuditRedis, VerboseSaysWhereTheTimeWentStageByStage) {
  auto args = audit(m_redis.uri());
  args.push_back("-v");
  auto result = run_dedupctl(args);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  std::smatch m;
  std::regex stages(R"(audit stages: read (\d+\.\d\d) s, identify (\d+\.\d\d) s, render keys \d+\.\d\d s, wait for )"
                    R"(lookups \d+\.\d\d s, classify \d+\.\d\d s; lookups \d+\.\d\d s on their own thread)");
  EXPECT_TRUE(std::regex_search(result.err, m, stages)) << result.err;
  expect_planted(parse(result));
  auto quiet = run_dedupctl(audit(m_redis.uri()));
  EXPECT_EQ(quiet.err.find("audit stages"), std::string::npos) << "only with -v";
}

TEST_P(AuditRedis, TheTextReportShowsCoverageAndTheReplayWindow) {
  auto args = audit(m_redis.uri(), {}, "text");
  auto result = run_dedupctl(args);
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_NE(result.out.find(m_topic + "[0]" + std::string(11 - (m_topic.size() + 3), ' ') +
                            "2        1         1        2        1        1            1         1"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("REPLAY WINDOW [seek, committed)"), std::string::npos);
  EXPECT_NE(result.out.find("safe from " + m_topic + "[0]@8"), std::string::npos) << result.out;
  auto markdown = run_dedupctl(audit(m_redis.uri(), {}, "markdown"));
  EXPECT_NE(markdown.out.find("## Replay window `[seek, committed)`"), std::string::npos) << markdown.out;
}

TEST_P(AuditRedis, WithoutTtlTheEstimateComesFromTheRecords) {
  auto args = audit(m_redis.uri());
  args.erase(std::find(args.begin(), args.end(), "--ttl"), std::find(args.begin(), args.end(), "--ttl") + 2);
  auto doc = parse(run_dedupctl(args));
  const auto& placement = doc.at("placement");
  EXPECT_EQ(placement.at("ttl_source"), "estimate");
  // max(pttl) comes from e-6 (8 days left); min(pttl + age) from e-2 (30 min left, 30 min old):
  // these records were not written with one TTL, and the report shows both bounds.
  EXPECT_GE(placement.at("ttl_estimate_ms").at("low").get<long long>(), 8 * 24 * k_hour - k_minute);
  EXPECT_LE(placement.at("ttl_estimate_ms").at("high").get<long long>(), k_hour + k_minute);
  EXPECT_GE(placement.at("ttl_estimate_ms").at("high").get<long long>(), k_hour - k_minute);
  EXPECT_EQ(placement.at("ttl_ms"), placement.at("ttl_estimate_ms").at("high")); // classified with the upper bound
  auto text = run_dedupctl([&] {
    auto a = audit(m_redis.uri(), {}, "text");
    a.erase(std::find(a.begin(), a.end(), "--ttl"), std::find(a.begin(), a.end(), "--ttl") + 2);
    return a;
  }());
  EXPECT_NE(text.out.find("records disagree"), std::string::npos) << text.out;
}

// Every ttl_source a Redis audit can report, in JSON (report-v1's name) and in text (where it came
// from), and the ttl-shorter-than-retention title naming the same source.
TEST_P(AuditRedis, TheTtlSourceIsReportedTheSameWayInJsonTextAndTheTitle) {
  auto without_ttl = [&](const std::string& format, const std::string& store) {
    auto a = audit(store, {}, format);
    a.erase(std::find(a.begin(), a.end(), "--ttl"), std::find(a.begin(), a.end(), "--ttl") + 2);
    return a;
  };
  auto title_of = [](const Json& doc, const std::string& id) -> std::string {
    for (const auto& f : doc.at("findings")) {
      if (f.at("id") == id) {
        return f.at("title");
      }
    }
    return "";
  };
  auto flag = parse(run_dedupctl(audit(m_redis.uri())));
  EXPECT_EQ(flag.at("placement").at("ttl_source"), "flag");
  EXPECT_EQ(title_of(flag, "ttl-shorter-than-retention"),
            "the TTL (1h, flag) is shorter than the topic's retention (7d)");
  auto flag_text = run_dedupctl(audit(m_redis.uri(), {}, "text"));
  EXPECT_NE(flag_text.out.find("  ttl 1h (flag, records say"), std::string::npos) << flag_text.out;

  auto estimate = parse(run_dedupctl(without_ttl("json", m_redis.uri())));
  EXPECT_EQ(estimate.at("placement").at("ttl_source"), "estimate");
  EXPECT_NE(title_of(estimate, "ttl-shorter-than-retention").find(", estimated from the records) is shorter"),
            std::string::npos)
      << title_of(estimate, "ttl-shorter-than-retention");
  auto estimate_text = run_dedupctl(without_ttl("text", m_redis.uri()));
  EXPECT_NE(estimate_text.out.find("(estimated from the records, records say"), std::string::npos) << estimate_text.out;

  // No record carries a TTL: nothing to estimate from.
  ASSERT_EQ(m_redis.command("FLUSHALL"), "+OK\r\n");
  auto unknown = run_dedupctl(without_ttl("json", m_redis.uri()));
  auto unknown_doc = parse(unknown);
  EXPECT_EQ(unknown_doc.at("placement").at("ttl_source"), "unknown");
  EXPECT_TRUE(unknown_doc.at("placement").at("ttl_ms").is_null());
  EXPECT_EQ(finding_counts(unknown_doc).count("ttl-unknown"), 1u);
  auto unknown_text = run_dedupctl(without_ttl("text", m_redis.uri()));
  EXPECT_NE(unknown_text.out.find("  ttl unknown (unknown)"), std::string::npos) << unknown_text.out;
  auto unknown_markdown = run_dedupctl(without_ttl("markdown", m_redis.uri()));
  EXPECT_NE(unknown_markdown.out.find("TTL unknown (unknown), retention 7d (flag)"), std::string::npos)
      << unknown_markdown.out;
}

TEST_P(AuditRedis, ASnapshotGivesTheSameVerdictsAsTheLiveStore) {
  TempDir dir;
  auto snap =
      run_dedupctl({"snapshot", "--store", m_redis.uri(), "--match", "dedup:pay:*", "--output", dir.file("keys.tsv")});
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  std::string text = read_file(dir.file("keys.tsv"));
  EXPECT_EQ(text.rfind("# dedupctl-snapshot v1\ttaken_at=", 0), 0u) << text;
  EXPECT_EQ(text.find("unrelated:key"), std::string::npos) << "--match is honoured";
  EXPECT_NE(text.find("dedup:pay:e-3\t-\tdone"), std::string::npos) << text;
  auto live = parse(run_dedupctl(audit(m_redis.uri())));
  auto offline = parse(run_dedupctl(audit("file:" + dir.file("keys.tsv"))));
  EXPECT_EQ(offline.at("placement").at("kind"), "file");
  EXPECT_EQ(offline.at("summary"), live.at("summary"));
  EXPECT_EQ(finding_counts(offline), finding_counts(live));
}

TEST_P(AuditRedis, RedisKilledMidAuditIsExit3AndIncomplete) {
  // Pause Redis so the audit's first lookup waits on it, then kill the server under it.
  ASSERT_EQ(m_redis.command("CLIENT PAUSE 5000"), "+OK\r\n");
  SpawnOptions options;
  options.pipe_stdout = true;
  std::vector<std::string> argv{DEDUPCTL_BINARY};
  auto args = audit(m_redis.uri(), {"-q"});
  argv.insert(argv.end(), args.begin(), args.end());
  Process audit(argv, options);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  m_redis.kill();
  std::string out;
  while (auto line = audit.read_line(std::chrono::seconds(20))) {
    out += *line + "\n";
  }
  EXPECT_EQ(audit.wait(), 3);
  auto doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(doc.at("exit_code"), 3);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("Redis at 127.0.0.1"), std::string::npos);
}

TEST_P(AuditRedis, AClientPauseLongerThanTheTimeoutIsExit3) {
  ASSERT_EQ(m_redis.command("CLIENT PAUSE 4000"), "+OK\r\n");
  auto started = std::chrono::steady_clock::now();
  auto result = run_dedupctl(audit(m_redis.uri(), {"--timeout", "1s"}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(4));
  EXPECT_NE(result.err.find("timed out after 1000 ms"), std::string::npos) << result.err;
  EXPECT_EQ(parse(result).at("complete"), false);
}

TEST_P(AuditRedis, AWrongPasswordIsExit3AndThePasswordIsNeverPrinted) {
  ASSERT_EQ(m_redis.command("CONFIG SET requirepass s3cret-pw"), "+OK\r\n");
  std::string uri = fmt::format("redis://:wrong-pw-123@127.0.0.1:{}", m_redis.port());
  auto wrong = run_dedupctl(audit(uri));
  EXPECT_EQ(wrong.exit_code, 3) << wrong.err;
  EXPECT_NE(wrong.err.find("refused the credentials"), std::string::npos) << wrong.err;
  EXPECT_EQ(wrong.err.find("wrong-pw-123"), std::string::npos) << wrong.err;
  EXPECT_EQ(wrong.out.find("wrong-pw-123"), std::string::npos) << wrong.out;
  auto right = run_dedupctl(audit(fmt::format("redis://:s3cret-pw@127.0.0.1:{}", m_redis.port())));
  EXPECT_EQ(right.exit_code, 1) << right.err;
  EXPECT_EQ(right.out.find("s3cret-pw"), std::string::npos);
  EXPECT_NE(right.out.find("redis://:***@127.0.0.1"), std::string::npos);
  expect_planted(parse(right));
}

TEST(AuditRedisDown, AnUnreachableStoreIsExit3) {
  MockBroker broker({"pay:1"});
  auto result = run_dedupctl({"audit", "-b", broker.bootstrap(), "--topic", "pay", "--store",
                              fmt::format("redis://127.0.0.1:{}", free_port()), "-o", "json"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("connection refused"), std::string::npos) << result.err;
  EXPECT_EQ(parse(result).at("complete"), false);
}

TEST(AuditSnapshot, BoundariesAreExactAgainstASnapshotsTime) {
  // A snapshot fixes now, so the edges can be checked to the millisecond end to end.
  const long long taken_at = 1'795'161'600'000LL; // 2026-11-20T08:00:00Z
  MockBroker broker({"pay:1"});
  broker.seed("pay", planted(taken_at, taken_at - k_hour)); // event 1 exactly at ts + TTL == now
  broker.commit("billing", "pay", "0=8");
  TempDir dir;
  write_file(dir.file("keys.tsv"), snapshot(taken_at));
  auto doc = parse(run_dedupctl(audit_args(broker.bootstrap(), "file:" + dir.file("keys.tsv"))));
  expect_planted(doc); // event 1 at the edge is missing, not expired
  EXPECT_EQ(doc.at("generated_at"), "2026-11-20T08:00:00.000Z");
  MockBroker past_edge({"pay:1"});
  past_edge.seed("pay", planted(taken_at, taken_at - k_hour - 1)); // one ms past the TTL: expired
  past_edge.commit("billing", "pay", "0=8");
  auto doc2 = parse(run_dedupctl(audit_args(past_edge.bootstrap(), "file:" + dir.file("keys.tsv"))));
  EXPECT_EQ(doc2.at("summary").at("expired"), 2);
  EXPECT_EQ(doc2.at("summary").at("missing"), 1);
}

// The snapshot loads while the log is read: a bad line found then still ends the audit as bad
// input (exit 2, the file and line named), with no verdict written: with -o json, --output holds
// the failure's document alone (incomplete, the error); with text, nothing.
TEST(AuditSnapshot, ABadLineFoundWhileReadingIsExit2AndNoReport) {
  const long long taken_at = 1'795'161'600'000LL;
  MockBroker broker({"pay:1"});
  broker.seed("pay", planted(taken_at, taken_at - k_hour));
  broker.commit("billing", "pay", "0=8");
  TempDir dir;
  std::string text = snapshot(taken_at);
  for (int i = 0; i < 50'000; ++i) {
    text += fmt::format("dedup:pay:bulk-{}\t{}\tdone\n", i, k_minute);
  }
  text += "dedup:pay:bad\t-7\tdone\n"; // line 1 + 5 + 50,000 + 1
  write_file(dir.file("keys.tsv"), text);
  auto args = audit_args(broker.bootstrap(), "file:" + dir.file("keys.tsv"));
  args.insert(args.end(), {"--output", dir.file("report.json")});
  auto run = run_dedupctl(args);
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("keys.tsv:50007:"), std::string::npos) << run.err;
  ASSERT_TRUE(std::filesystem::exists(dir.file("report.json")));
  auto failed = Json::parse(read_file(dir.file("report.json")));
  EXPECT_EQ(failed.at("complete"), false);
  EXPECT_EQ(failed.at("exit_code"), 2);
  EXPECT_NE(failed.at("error").at("message").get<std::string>().find("keys.tsv:50007:"), std::string::npos);
  EXPECT_TRUE(failed.at("summary").empty()) << "no verdict: " << failed.dump();
  std::filesystem::remove(dir.file("report.json"));
  // The same file where nothing is looked up: a broker that does not answer, an empty dump; and
  // trace.
  std::vector<std::vector<std::string>> others{
      {"audit", "-b", fmt::format("127.0.0.1:{}", free_port()), "--topic", "pay", "--timeout", "1s"},
      {"audit", "--input", dir.file("empty.json")},
      {"trace", "--input", dir.file("empty.json"), "--event-id", "e-1"}};
  write_file(dir.file("empty.json"), "");
  for (auto other : others) {
    other.insert(other.end(),
                 {"--store", "file:" + dir.file("keys.tsv"), "--ttl", "1h", "--output", dir.file("report.json")});
    auto bad = run_dedupctl(other);
    EXPECT_EQ(bad.exit_code, 2) << other[0] << " " << other[1] << ": " << bad.err;
    EXPECT_NE(bad.err.find("keys.tsv:50007:"), std::string::npos) << bad.err;
    EXPECT_FALSE(std::filesystem::exists(dir.file("report.json")));
  }
}

TEST(AuditUsage, BadPlacementFlagsAreExit2) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases{
      {{"audit", "--input", "-", "--store", "redis://h:1", "--key-template", "dedup:{order_id}"},
       "unknown placeholder {order_id}"},
      {{"audit", "--input", "-", "--store", "mongodb://h"}, "invalid --store"},
      {{"audit", "--input", "-", "--store", "redis://h:1", "--ttl", "forever"}, "invalid --ttl 'forever'"},
      {{"audit", "--input", "-", "--store", "redis://h:1", "--side-effects", "Charge=scary"}, "invalid --side-effects"},
      {{"audit", "--input", "-", "--store", "redis://h:1", "--seek", "-5"}, "--seek needs --group"},
      {{"audit", "--input", "-"}, "--store is required"},
      {{"audit", "--input", "-", "--store", "file:/no/such/snapshot"}, "cannot read snapshot /no/such/snapshot"},
  };
  for (const auto& c : cases) {
    auto result = run_dedupctl(c.args);
    EXPECT_EQ(result.exit_code, 2) << c.message << "\n" << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << result.err;
  }
}

TEST_P(AuditRedis, TheDatabaseInTheUriIsSelected) {
  for (const char* key : {"dedup:pay:e-2", "dedup:pay:e-3", "dedup:pay:e-4", "dedup:pay:e-6", "dedup:pay:e-8"}) {
    ASSERT_EQ(m_redis.command(fmt::format("MOVE {} 3", key)), ":1\r\n"); // MOVE keeps the TTL
  }
  expect_planted(parse(run_dedupctl(audit(m_redis.uri() + "/3"))));
  auto db0 = parse(run_dedupctl(audit(m_redis.uri() + "/0")));
  EXPECT_EQ(db0.at("summary").at("covered"), 0);
}

// Records keyed as Powertools for AWS Lambda (Python) keys them, FUNCTION#md5(json.dumps(id)) (the
// digests below computed with Python's json and hashlib): a template with filters finds every one,
// and the verdicts are the planted ones, exactly; the plain template finds none.
TEST_P(AuditRedis, AFilteredTemplateFindsRecordsKeyedByADigestOfTheId) {
  const std::map<std::string, std::string> digests{{"e-2", "a262c3562d9513d5ba36c1aa63a8bf77"},
                                                   {"e-3", "380aafcfbbe6536e9aea7ed420476c87"},
                                                   {"e-4", "dba08d8ddd9cd013ea0357d8a9e58c95"},
                                                   {"e-6", "550a24c462755958873dbabb995f4f7b"},
                                                   {"e-8", "4bac24825e8eadfdd598abfd899804af"}};
  for (const auto& [id, md5] : digests) {
    // RENAME keeps the key's TTL.
    ASSERT_EQ(m_redis.command(fmt::format("RENAME dedup:pay:{} test-func.charge#{}", id, md5)), "+OK\r\n");
  }
  const std::string tmpl = "test-func.charge#{event_id|json-ascii|md5}";
  auto args = audit(m_redis.uri());
  auto flag = std::find(args.begin(), args.end(), "--key-template");
  ASSERT_NE(flag, args.end());
  *(flag + 1) = tmpl;
  auto result = run_dedupctl(args);
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = parse(result);
  expect_planted(doc);
  EXPECT_EQ(doc.at("placement").at("key_template"), tmpl);
  auto plain = parse(run_dedupctl(audit(m_redis.uri())));
  EXPECT_EQ(plain.at("summary").at("covered"), 0);
}

// --committed is read only where it counts: without --seek, or with a topic (whose group offsets
// the broker has), it is said to be unused; a file that cannot be read is exit 2 naming it.
TEST(AuditCommitted, UnusedIsSaidAndAnUnreadableFileIsAUsageError) {
  TempDir dir;
  write_file(dir.file("dump.json"), "");
  write_file(dir.file("committed.csv"), "pay,0,1\n");
  std::vector<std::string> base{"audit", "--store", "file:" + dir.file("none.tsv"), "--ttl", "1h", "-o", "json"};
  write_file(dir.file("none.tsv"), "# dedupctl-snapshot v1\ttaken_at=1795000000000\tstore=redis://x\tmatch=*\n");
  auto with = [&](std::vector<std::string> extra) {
    auto args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args);
  };
  auto no_seek = with({"--input", dir.file("dump.json"), "--committed", dir.file("committed.csv")});
  EXPECT_EQ(no_seek.exit_code, 0) << no_seek.err;
  EXPECT_NE(no_seek.err.find("--committed " + dir.file("committed.csv") + " is only read for a --seek: not used"),
            std::string::npos)
      << no_seek.err;
  auto topic = with({"-b", fmt::format("127.0.0.1:{}", free_port()), "--topic", "pay", "--timeout", "1s", "--committed",
                     dir.file("committed.csv")});
  EXPECT_EQ(topic.exit_code, 3) << topic.err;
  EXPECT_NE(topic.err.find("is for a kcat dump: the group's offsets are read from the broker"), std::string::npos)
      << topic.err;
  auto unreadable = with(
      {"--input", dir.file("dump.json"), "--group", "billing", "--seek", "-1", "--committed", dir.file("missing.csv")});
  EXPECT_EQ(unreadable.exit_code, 2) << unreadable.err;
  EXPECT_NE(unreadable.err.find(dir.file("missing.csv")), std::string::npos) << unreadable.err;
}

namespace {

// A command in the Redis protocol, so that binary arguments (Java-serialized names) go as they are;
// redis_command adds the last CRLF.
std::string resp(const std::vector<std::string>& args) {
  std::string out = fmt::format("*{}\r\n", args.size());
  for (const auto& arg : args) {
    out += fmt::format("${}\r\n{}\r\n", arg.size(), arg);
  }
  return out.substr(0, out.size() - 2);
}

// A short ASCII String as Java's ObjectOutputStream writes it (RedisTemplate's default serializer).
std::string java(const std::string& text) {
  return std::string("\xac\xed\x00\x05\x74\x00", 6) + static_cast<char>(text.size()) + text;
}

} // namespace

// Records under one key, written as Spring Integration's RedisMetadataStore (HSETNX MetaData id ms),
// Camel's SpringRedisIdempotentRepository (SADD, name and members Java-serialized) and a sorted set
// of expiries write them: the audit looks the ids up in the collection (no key per id exists) and
// finds e-2, e-3 and e-6, as the planted plain records do.
TEST_P(AuditRedis, OneKeyLayoutsFindTheirRecordsInTheCollection) {
  auto run = [&](std::vector<std::string> layout) {
    auto args = audit(m_redis.uri(), layout);
    auto flag = std::find(args.begin(), args.end(), "--key-template");
    args.erase(flag, flag + 2); // the layout's own derivation
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 1) << result.err;
    return parse(result);
  };
  std::string ms = std::to_string(m_now - k_minute);
  ASSERT_EQ(m_redis.command(resp({"HSET", "dedup-meta", "e-2", ms, "e-3", ms, "e-6", ms})), ":3\r\n");
  Json spring = run({"--layout", "spring-hash", "--collection", "dedup-meta"});
  EXPECT_EQ(spring.at("summary").at("covered"), 3) << spring.at("summary").dump();
  EXPECT_EQ(spring.at("summary").at("no_expiry"), 3) << "Spring's metadata store never expires an entry";
  EXPECT_EQ(spring.at("placement").at("layout"), "spring-hash");
  EXPECT_EQ(spring.at("placement").at("collection"), "dedup-meta");
  bool growth = false;
  for (const auto& f : spring.at("findings")) {
    growth = growth || (f.at("id") == "no-expiry" &&
                        f.at("title").get<std::string>().find("members of dedup-meta") != std::string::npos);
  }
  EXPECT_TRUE(growth) << spring.at("findings").dump();

  ASSERT_EQ(m_redis.command(resp({"SADD", java("orders"), java("e-2"), java("e-3"), java("e-6"), "e-7"})), ":4\r\n");
  Json camel = run({"--layout", "camel-set", "--collection", "orders"});
  EXPECT_EQ(camel.at("summary").at("covered"), 3) << "e-7 as plain text is not Camel's member";

  std::string soon = std::to_string((m_now + 30 * k_minute) / 1000);
  std::string later = std::to_string((m_now + 8 * 24 * k_hour) / 1000);
  std::string gone = std::to_string((m_now - k_minute) / 1000);
  ASSERT_EQ(m_redis.command(resp({"ZADD", "seen", soon, "e-2", later, "e-6", gone, "e-7"})), ":3\r\n");
  Json zset = run({"--layout", "zset", "--collection", "seen"});
  EXPECT_EQ(zset.at("summary").at("expiring"), 1) << zset.at("summary").dump();
  EXPECT_EQ(zset.at("summary").at("covered"), 1);
  EXPECT_EQ(zset.at("summary").at("expired"), 3) << "e-0 and e-4 lapsed as the TTL says, e-7's score passed";

  // discover finds all three from the topic and the store, never told of them.
  auto discovered =
      run_dedupctl({"discover", "-b", m_bootstrap, "--topic", m_topic, "--store", m_redis.uri(), "-o", "json"});
  ASSERT_EQ(discovered.exit_code, 0) << discovered.err;
  std::set<std::string> found;
  Json doc = Json::parse(discovered.out);
  for (const auto& c : doc.at("candidates")) {
    found.insert(fmt::format("{} {} {}", c.at("layout").get<std::string>(),
                             c.at("collection").is_null() ? "-" : c.at("collection").get<std::string>(),
                             c.at("found").get<int>()));
  }
  EXPECT_EQ(found,
            (std::set<std::string>{"spring-hash dedup-meta 3", "camel-set orders 3", "zset seen 3", "plain - 5"}))
      << discovered.out;

  auto wrong = run_dedupctl(audit(m_redis.uri(), {"--layout", "spring-hash", "--collection", "seen"}));
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("another type"), std::string::npos) << wrong.err;
  auto unknown = run_dedupctl(audit(m_redis.uri(), {"--layout", "powertools"}));
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.err.find("powertools-python"), std::string::npos) << unknown.err;
}

// snapshot --layout of a one-key layout reads the collection's members (HSCAN, ZSCAN) and names the
// layout in its header; the offline audit of the file gives the live audit's verdicts. A Powertools
// snapshot keeps the fields its rules read, not `data`, and leaves the KEY:lock keys out.
TEST_P(AuditRedis, LayoutSnapshotsAuditTheSameOfflineAndKeepOnlyRecords) {
  TempDir dir;
  auto offline_equals_live = [&](std::vector<std::string> layout, const std::string& file) {
    std::vector<std::string> snapshot{"snapshot", "--store", m_redis.uri(), "--output", dir.file(file)};
    for (std::size_t i = 0; i + 1 < layout.size(); i += 2) {
      if (layout[i] != "--key-prefix" && layout[i] != "--key-template") {
        snapshot.insert(snapshot.end(), {layout[i], layout[i + 1]});
      }
    }
    auto taken = run_dedupctl(snapshot);
    EXPECT_EQ(taken.exit_code, 0) << taken.err;
    auto live_args = audit(m_redis.uri(), layout);
    auto offline_args = audit("file:" + dir.file(file), layout);
    for (auto* args : {&live_args, &offline_args}) { // the planted template, not the layout's
      args->erase(std::find(args->begin(), args->end(), "--key-template"),
                  std::find(args->begin(), args->end(), "--key-template") + 2);
    }
    Json live = parse(run_dedupctl(live_args));
    Json offline = parse(run_dedupctl(offline_args));
    EXPECT_EQ(offline.at("summary"), live.at("summary")) << file;
    EXPECT_EQ(offline.at("placement").at("layout"), live.at("placement").at("layout"));
    return read_file(dir.file(file));
  };
  std::string ms = std::to_string(m_now - k_minute);
  ASSERT_EQ(m_redis.command(fmt::format("HSET dedup-meta e-2 {0} e-3 {0} e-6 {0}", ms)), ":3\r\n");
  std::string hash = offline_equals_live({"--layout", "spring-hash", "--collection", "dedup-meta"}, "hash.tsv");
  EXPECT_NE(hash.find("\tlayout=spring-hash"), std::string::npos) << hash;
  EXPECT_NE(hash.find("\ne-6\t-\t" + ms + "\n"), std::string::npos) << hash;
  ASSERT_EQ(m_redis.command(
                fmt::format("ZADD seen {} e-2 {} e-6", (m_now + 30 * k_minute) / 1000, (m_now - k_minute) / 1000)),
            ":2\r\n");
  offline_equals_live({"--layout", "zset", "--collection", "seen"}, "zset.tsv");

  // Powertools-shaped records as CachePersistenceLayer writes them, and the lock it takes on an orphan.
  for (const char* id : {"e-2", "e-3", "e-6"}) {
    std::string value = fmt::format(R"({{"data": "{{\"receipt\": \"{}\"}}", "status": "COMPLETED", "expiration": {}}})",
                                    std::string(300, 'r'), m_now / 1000 + 3600);
    std::string key = std::string("fn#") + id;
    ASSERT_EQ(m_redis.command(resp({"SET", key, value, "EX", "3600"})), "+OK\r\n");
    ASSERT_EQ(m_redis.command(resp({"SET", key + ":lock", "True", "EX", "10"})), "+OK\r\n");
  }
  std::string records =
      offline_equals_live({"--layout", "powertools-python", "--key-template", "fn#{event_id}"}, "json.tsv");
  EXPECT_EQ(records.find(":lock"), std::string::npos) << records;
  EXPECT_EQ(records.find("receipt"), std::string::npos) << "the handler's response is not kept";
  EXPECT_NE(records.find("{\"status\":\"COMPLETED\",\"expiration\":"), std::string::npos) << records;
}

// The text report names the layout and the collection beside the key; discover with nothing to find
// is exit 1 and says what it tried.
TEST_P(AuditRedis, TheTextReportNamesTheLayoutAndDiscoverSaysWhatItTried) {
  ASSERT_EQ(m_redis.command("HSET dedup-meta e-2 1"), ":1\r\n");
  auto args = audit(m_redis.uri(), {"--layout", "spring-hash", "--collection", "dedup-meta"}, "text");
  auto flag = std::find(args.begin(), args.end(), "--key-template");
  args.erase(flag, flag + 2);
  auto text = run_dedupctl(args);
  EXPECT_NE(text.out.find("key {event_id}  layout spring-hash  collection dedup-meta"), std::string::npos) << text.out;
  auto nothing = run_dedupctl(
      {"discover", "-b", m_bootstrap, "--topic", m_topic, "--store", m_redis.uri(), "--id", "header:type"});
  EXPECT_EQ(nothing.exit_code, 1) << nothing.err;
  EXPECT_NE(nothing.err.find("no layout finds the records of the 2 sampled ids"), std::string::npos) << nothing.err;
  EXPECT_NE(nothing.err.find("--layout spring-hash --collection dedup-meta: 0 of 2"), std::string::npos) << nothing.err;
}
