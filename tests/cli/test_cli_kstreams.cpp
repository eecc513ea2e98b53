// dedupctl audit --store kstreams://APP/STORE end to end: a Kafka Streams dedup store read from its
// changelog topic on either broker, what a seek over it forwards again, its retention read from the
// changelog's config (the real broker; the mock cluster cannot describe configs), and every way the
// store can be given wrong (exit 2) or be out of reach (exit 3, an incomplete report).
#include "tests/cli/report_json.hpp"
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>

using namespace dedupctl::testing;

namespace {

// The input, minutes after a base six hours back (one partition): a b a c d c e, an event without an
// id, then f and c past the committed offset 8.
struct Input {
  const char* id;
  long long minute;
};
const std::vector<Input> k_inputs{{"a", 0},   {"b", 10},  {"a", 12}, {"c", 100}, {"d", 170},
                                  {"c", 190}, {"e", 200}, {"", 200}, {"f", 201}, {"c", 202}};
// The puts the application made for the first eight (a duplicate inside the window put again): its
// changelog. Stream time 200; a store of an hour returns window starts from minute 140 on.
const std::vector<Input> k_puts{{"a", 0}, {"b", 10}, {"a", 12}, {"c", 100}, {"d", 170}, {"c", 190}, {"e", 200}};

std::string inputs(long long base) {
  std::string out;
  for (std::size_t i = 0; i < k_inputs.size(); ++i) {
    out += envelope(static_cast<long long>(i), base + k_inputs[i].minute * k_minute, k_inputs[i].id, "PaymentCharged");
  }
  return out;
}

void produce(const std::string& bootstrap, const std::string& topic, const std::vector<OutgoingRecord>& records) {
  TestProducer producer(bootstrap, 30'000);
  for (auto record : records) {
    record.topic = topic;
    record.partition = 0;
    producer.send(record);
  }
  std::string error;
  ASSERT_EQ(producer.flush(error), 0) << error;
}

std::vector<OutgoingRecord> puts(long long base) {
  std::vector<OutgoingRecord> out;
  for (const auto& p : k_puts) {
    OutgoingRecord r;
    long long start = base + p.minute * k_minute;
    r.key = window_store_key(p.id, start);
    r.payload = std::string(8, '\x01'); // the Long the processor stores
    r.timestamp_ms = start;
    out.push_back(r);
  }
  return out;
}

std::vector<std::string> reapplied(const nlohmann::json& doc) {
  std::vector<std::string> out;
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == "replay-risk") {
      for (const auto& e : f.at("examples")) {
        std::string id = e.at("event_id").is_null() ? "" : e.at("event_id").get<std::string>();
        out.push_back(fmt::format("{}@{}", id, e.at("offset").get<long long>()));
      }
    }
  }
  return out;
}

std::string setting(const nlohmann::json& doc, const std::string& name) {
  const auto& settings = doc.at("settings");
  return settings.contains(name) ? settings.at(name).get<std::string>() : "";
}

} // namespace

class KstreamsStore : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    m_base = wall_ms() - 6 * k_hour;
    m_cluster = fresh_topic(GetParam(), "orders", 1, inputs(m_base), "", {});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
    m_app = "kapp-" + m_cluster.topic; // the shared broker's topics are the test's own: so is the application
    commit_offsets(m_cluster.bootstrap, m_app, m_cluster.topic, {{0, 8}});
    m_changelog = m_app + "-dedup-store-changelog";
    if (m_cluster.mock) {
      add_topic(m_cluster, m_changelog, 1);
    } else { // as Kafka Streams creates a window store's changelog: the store's hour and the additional day
      create_topic(m_cluster.bootstrap, m_changelog, 1,
                   {{"cleanup.policy", "compact,delete"}, {"retention.ms", std::to_string(25 * k_hour)}});
    }
  }

  std::vector<std::string> args(std::vector<std::string> extra, const std::string& store = "dedup-store") const {
    std::vector<std::string> out{"audit",
                                 "-b",
                                 m_cluster.bootstrap,
                                 "--topic",
                                 m_cluster.topic,
                                 "--group",
                                 m_app,
                                 "--store",
                                 fmt::format("kstreams://{}/{}", m_app, store),
                                 "--layout-option",
                                 "lookup-window=10m",
                                 "--retention",
                                 "7d",
                                 "--fail-on",
                                 "none",
                                 "--examples",
                                 "20"};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  long long m_base = 0;
  TestTopic m_cluster;
  std::string m_app, m_changelog;
};

INSTANTIATE_TEST_SUITE_P(Brokers, KstreamsStore, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

// A seek to 0 over the store: what it no longer holds (older than the hour behind its stream time) is
// forwarded again, c at minute 100 too (its newer record lies outside the lookup window), and the event
// without an id; what it holds is dropped; f and c past the committed offset are first deliveries.
TEST_P(KstreamsStore, ASeekBeyondTheStoresRetentionNamesWhatTheApplicationForwardsAgain) {
  produce(m_cluster.bootstrap, m_changelog, puts(m_base));
  auto result = run_dedupctl(args({"--seek", "0", "--ttl", "1h", "-o", "json"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = parse(result);
  const auto& summary = doc.at("summary");
  EXPECT_EQ(summary.at("expired"), 4);
  EXPECT_EQ(summary.at("covered"), 3);
  EXPECT_EQ(summary.at("no_id"), 1);
  EXPECT_EQ(summary.at("pending"), 2);
  EXPECT_EQ(summary.at("missing"), 0);
  EXPECT_EQ(summary.at("expiring"), 0) << "a window record lapses by design: covered, never expiring";
  EXPECT_EQ(doc.at("replay").at("would_reapply"), 5);
  EXPECT_EQ(doc.at("replay").at("would_skip"), 3);
  EXPECT_EQ(doc.at("replay").at("safe_from").at(0).at("offset"), 8);
  EXPECT_EQ(reapplied(doc), (std::vector<std::string>{"a@0", "b@1", "a@2", "c@3", "@7"}));
  const auto& placement = doc.at("placement");
  EXPECT_EQ(placement.at("kind"), "kstreams");
  EXPECT_EQ(placement.at("layout"), "kstreams-window");
  EXPECT_EQ(placement.at("ttl_ms"), k_hour);
  EXPECT_EQ(placement.at("ttl_source"), "flag");
  EXPECT_NE(setting(doc, "store state").find("restored"), std::string::npos) << doc.at("settings").dump();
  EXPECT_NE(setting(doc, "changelog").find(m_changelog + " (1 partitions, read_committed)"), std::string::npos);
  EXPECT_EQ(setting(doc, "lookup"), "fetch(id, t - 5m, t + 5m), t the record's timestamp");
}

// The text a person reads says what the verdicts assume, and names the gap.
TEST_P(KstreamsStore, TheTextSaysTheVerdictsAssumeARestore) {
  produce(m_cluster.bootstrap, m_changelog, puts(m_base));
  auto result = run_dedupctl(args({"--seek", "0", "--ttl", "1h"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("restored: the verdicts assume an instance that restores the store from its changelog"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("the window store no longer returns their records"), std::string::npos) << result.out;
}

// A seek inside what the store holds forwards nothing again but the event without an id.
TEST_P(KstreamsStore, ASeekInsideTheStoresRetentionIsSafe) {
  produce(m_cluster.bootstrap, m_changelog, puts(m_base));
  auto result = run_dedupctl(args({"--seek", "4", "--ttl", "1h", "-o", "json"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(reapplied(parse(result)), (std::vector<std::string>{"@7"}));
}

// A changelog whose keys are no window keys (a key-value store's, or truncated) is exit 2 naming the
// record, and nothing on stdout.
TEST_P(KstreamsStore, AChangelogRecordThatIsNoWindowKeyIsAUsageErrorNamingIt) {
  auto records = puts(m_base);
  records[2].key = "a"; // one byte: no window suffix
  produce(m_cluster.bootstrap, m_changelog, records);
  auto result = run_dedupctl(args({"--seek", "0", "--ttl", "1h"}));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_NE(
      result.err.find(fmt::format("{} partition 0 offset 2: a key of 1 bytes is no window store key", m_changelog)),
      std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("--layout kstreams-kv"), std::string::npos) << result.err;
}

// A store whose changelog does not exist is exit 2, naming the topic and how to name another.
TEST_P(KstreamsStore, AStoreWithoutItsChangelogIsAUsageError) {
  auto result = run_dedupctl(args({"--ttl", "1h"}, "other-store"));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find(m_app + "-other-store-changelog"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("--layout-option changelog-topic=TOPIC"), std::string::npos) << result.err;
}

// A named topology's changelog is named with changelog-topic; a key-value store's fold is its ids.
TEST_P(KstreamsStore, AKeyValueStoresChangelogIsItsIds) {
  std::vector<OutgoingRecord> records;
  for (const char* id : {"a", "b", "c", "d"}) {
    OutgoingRecord r;
    r.key = id;
    r.payload = "1";
    r.timestamp_ms = m_base;
    records.push_back(r);
  }
  records.push_back(OutgoingRecord{{}, {}, std::string("b"), std::nullopt, {}, m_base}); // b deleted
  produce(m_cluster.bootstrap, m_changelog, records);
  auto result = run_dedupctl({"audit",
                              "-b",
                              m_cluster.bootstrap,
                              "--topic",
                              m_cluster.topic,
                              "--group",
                              m_app,
                              "--store",
                              "kstreams://ignored/named",
                              "--layout",
                              "kstreams-kv",
                              "--layout-option",
                              "changelog-topic=" + m_changelog,
                              "--retention",
                              "7d",
                              "--fail-on",
                              "none",
                              "--seek",
                              "0",
                              "--examples",
                              "20",
                              "-o",
                              "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(reapplied(doc), (std::vector<std::string>{"b@1", "e@6", "@7"}));
  EXPECT_EQ(doc.at("placement").at("layout"), "kstreams-kv");
  EXPECT_EQ(doc.at("summary").at("covered"), 6)
      << "a a c d c, and c past the committed offset (held, as any store counts it)";
  EXPECT_EQ(doc.at("summary").at("pending"), 1) << "f";
}

// Without --ttl the store's retention is the changelog's retention.ms less the additional day, said as
// an estimate; the mock cluster cannot describe configs, so there it is exit 2 asking for --ttl.
TEST_P(KstreamsStore, WithoutTtlTheRetentionIsReadFromTheChangelog) {
  produce(m_cluster.bootstrap, m_changelog, puts(m_base));
  // The mock cluster never answers DescribeConfigs: its wait is the --timeout.
  auto result = run_dedupctl(args({"--seek", "0", "-o", "json", "--timeout", m_cluster.mock ? "2s" : "10s"}));
  if (m_cluster.mock) {
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("give --ttl, the window store's retention"), std::string::npos) << result.err;
    return;
  }
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("placement").at("ttl_ms"), k_hour);
  EXPECT_EQ(doc.at("placement").at("ttl_source"), "estimate");
  EXPECT_NE(setting(doc, "store retention").find("windowstore.changelog.additional.retention.ms at its default, 1d"),
            std::string::npos)
      << doc.at("settings").dump();
  EXPECT_EQ(reapplied(doc), (std::vector<std::string>{"a@0", "b@1", "a@2", "c@3", "@7"}));
}

// Every wrong way to give the store is exit 2 before anything is contacted (a closed port).
TEST(KstreamsUsage, AWrongStoreIsAUsageErrorBeforeAnythingIsContacted) {
  struct Case {
    std::vector<std::string> args;
    const char* said;
  };
  const std::vector<Case> cases{
      {{"--store", "kstreams://app/store"}, "--layout kstreams-window needs --layout-option lookup-window=DURATION"},
      {{"--store", "kstreams://app"}, "no store: give kstreams://APPLICATION_ID/STORE"},
      {{"--store", "kstreams://app/store", "--layout", "redis-bloom", "--layout-option", "x=y"},
       "only the json layouts take options"},
      {{"--store", "kstreams://app/store", "--layout", "powertools-python"}, "not kstreams"},
      {{"--store", "redis://127.0.0.1:1", "--layout", "kstreams-window"}, "is a Kafka Streams store"},
      {{"--store", "kstreams://app/store", "--layout-option", "lookup-window=10m", "--ttl", "none"},
       "a window store's retention is a duration"},
      {{"--store", "kstreams://app/store", "--layout", "kstreams-kv", "--ttl", "1h"}, "drop --ttl"},
      {{"--store", "kstreams://app/store", "--layout-option", "lookup-window=10m", "--layout-option", "time=wall"},
       "time=record|stream"},
      {{"--store", "kstreams://app/store", "--layout-option", "lookup-window=10m", "--store", "redis://127.0.0.1:1"},
       "in a chain of tiers"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args{"audit", "-b", "127.0.0.1:1", "--topic", "orders", "--timeout", "2s"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << c.said << "\n" << result.err;
    EXPECT_NE(result.err.find(c.said), std::string::npos) << result.err;
    EXPECT_EQ(result.out, "");
  }
}

// trace cannot read the store yet: it refuses it rather than find no record of any id.
TEST(KstreamsUsage, TraceRefusesTheStoreAndNamesTheAudit) {
  auto result = run_dedupctl({"trace", "-b", "127.0.0.1:1", "--topic", "orders", "--event-id", "a", "--store",
                              "kstreams://app/store", "--layout-option", "lookup-window=10m", "--timeout", "2s"});
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--store kstreams://app/store: trace does not read a Kafka Streams store yet; dedupctl "
                            "audit --store kstreams://app/store --seek"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(result.out, "");
}

// A cluster that cannot be reached is exit 3 with an incomplete report, never a verdict.
TEST(KstreamsUsage, AnUnreachableClusterIsAnIncompleteReport) {
  auto result = run_dedupctl({"audit", "-b", "127.0.0.1:1", "--topic", "orders", "--store", "kstreams://app/store",
                              "--layout-option", "lookup-window=10m", "--ttl", "1h", "--timeout", "2s", "-o", "json"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), false);
}

// check: a window store's retention against the topic's and the declared seeks, and a stream-time lookup,
// each at its line of the declarations (nothing contacted without --live).
TEST(KstreamsCheck, TheStoresRetentionIsCheckedAgainstTheTopicAndTheSeeks) {
  TempDir dir;
  std::string file = dir.file("dedup.toml");
  write_file(file, R"([[consumer]]
name = "orders-dedup"
topic = "orders"
placement = "kstreams"
store = "kstreams://orders-dedup/eventId-store"
ttl = "1h"
retention = "7d"
lookup_time = "stream"
seeks = ["30m", "6h"]
)");
  auto result = run_dedupctl({"check", file, "-o", "json"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = parse(result);
  std::map<std::string, long long> lines;
  for (const auto& f : doc.at("findings")) {
    lines[f.at("id").get<std::string>()] = f.at("location").at("line").get<long long>();
  }
  EXPECT_EQ(lines["ttl-shorter-than-retention"], 6);
  EXPECT_EQ(lines["seek-beyond-store-retention"], 9);
  EXPECT_EQ(lines["stream-time-lookup"], 8);
}
