// The Kafka facts behind a verdict, checked against a real Apache Kafka broker (KRaft, one node)
// rather than librdkafka's mock cluster, which cannot answer DescribeConfigs or timestamp lookups:
// retention from the topic's configs, exact time seeks, a real consumer group's offsets (and a live
// member dedupctl must never disturb), parity with kafka-consumer-groups --reset-offsets --dry-run,
// a log start moved by kafka-delete-records, and a broker that stops mid-run.
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <csignal>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

constexpr std::int64_t k_minute = 60'000;
constexpr std::int64_t k_hour = 60 * k_minute;
// 2026-11-20T00:00:00Z: every record's CreateTime counts from here, a minute apart.
constexpr std::int64_t k_t0 = 1'795'132'800'000LL;

// kafka-storage format reads a cluster id that starts with '-' as an option: one broker start in 64
// failed that way in CI.
TEST(KraftClusterId, IsBase64UrlOf16BytesAndNeverStartsWithADash) {
  for (int i = 0; i < 20'000; ++i) {
    std::string id = kraft_cluster_id();
    ASSERT_EQ(id.size(), 22U) << id;
    ASSERT_NE(id.front(), '-') << id;
    ASSERT_EQ(id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos)
        << id;
  }
}

class RealKafka : public ::testing::Test {
protected:
  void SetUp() override {
    KafkaBroker& broker = shared_kafka_broker();
    DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
    m_bootstrap = broker.bootstrap();
  }

  void TearDown() override {
    if (HasFailure() && shared_kafka_broker().available()) {
      std::string log = shared_kafka_broker().log();
      std::cerr << "--- broker log (last 4000 bytes) ---\n" << log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
    }
  }

  // A topic of its own for each test, with `per_partition` records on each partition: event ids
  // "e-P-I", CreateTime t0 + I minutes.
  std::string topic_with(const std::string& name, int partitions, int per_partition,
                         const std::vector<std::pair<std::string, std::string>>& configs = {}, long long t0 = k_t0) {
    std::string topic = fmt::format("{}-{}", name, ::testing::UnitTest::GetInstance()->random_seed() + m_next++);
    create_topic(m_bootstrap, topic, partitions, configs);
    TestProducer producer(m_bootstrap, 30'000);
    for (int p = 0; p < partitions; ++p) {
      for (int i = 0; i < per_partition; ++i) {
        OutgoingRecord record;
        record.topic = topic;
        record.partition = p;
        record.key = fmt::format("k-{}", i);
        record.payload = fmt::format(R"({{"event_id":"e-{}-{}","type":"OrderPlaced","n":{}}})", p, i, i);
        record.headers = {{"event_id", fmt::format("e-{}-{}", p, i)}, {"type", std::string("OrderPlaced")}};
        record.timestamp_ms = t0 + i * k_minute;
        producer.send(record);
      }
    }
    std::string error;
    EXPECT_EQ(producer.flush(error), 0) << error;
    return topic;
  }

  Json scan(const std::vector<std::string>& extra, int expect_exit = -1) {
    std::vector<std::string> args{"scan", "-b", m_bootstrap, "-o", "json", "--fail-on", "none"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_dedupctl(args);
    if (expect_exit >= 0) {
      EXPECT_EQ(result.exit_code, expect_exit) << result.err;
    }
    try {
      return Json::parse(result.out);
    } catch (const std::exception&) {
      ADD_FAILURE() << "not JSON: " << result.out << "\n" << result.err;
      return Json::object();
    }
  }

  // dedupctl audit over a topic and group against a throwaway Redis: the JSON report.
  Json audit(const std::string& topic, const std::vector<std::string>& extra, int expect_exit = 1) {
    if (!m_redis) {
      m_redis = std::make_unique<RedisServer>();
    }
    std::vector<std::string> args{
        "audit",          "-b",           m_bootstrap, "--topic", topic, "--store", m_redis->uri(),
        "--key-template", "d:{event_id}", "--ttl",     "1h",      "-o",  "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, expect_exit) << fmt::format("{}", fmt::join(args, " ")) << "\n" << result.err;
    try {
      return Json::parse(result.out);
    } catch (const std::exception&) {
      ADD_FAILURE() << "not JSON: " << result.out << "\n" << result.err;
      return Json::object();
    }
  }

  // Per partition, a field of the report's source.partitions.
  static std::map<int, long long> per_partition(const Json& doc, const std::string& field) {
    std::map<int, long long> out;
    for (const auto& p : doc.at("source").at("partitions")) {
      out[p.at("partition").get<int>()] = p.at(field).is_null() ? -1 : p.at(field).get<long long>();
    }
    return out;
  }

  std::string m_bootstrap;
  std::unique_ptr<RedisServer> m_redis;
  int m_next = 0;
};

} // namespace

// retention.ms (+ segment.ms), -1 and the cleanup policies, read with DescribeConfigs: no
// --retention flag needed.
TEST_F(RealKafka, RetentionComesFromTheTopicsConfigs) {
  struct Case {
    std::vector<std::pair<std::string, std::string>> configs;
    std::optional<long long> retention_ms; // nullopt: infinite
  };
  long long recent = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch() - std::chrono::minutes(10))
                         .count();
  for (const auto& c :
       std::vector<Case>{{{{"retention.ms", "3600000"}, {"segment.ms", "600000"}}, 3'600'000 + 600'000},
                         {{{"retention.ms", "-1"}}, std::nullopt},
                         {{{"cleanup.policy", "compact"}}, std::nullopt},
                         {{{"cleanup.policy", "compact,delete"}, {"retention.ms", "7200000"}, {"segment.ms", "60000"}},
                          7'200'000 + 60'000}}) {
    // Records of the last minutes: older than the retention, the broker (checking every second)
    // may delete them while the audit reads, which the audit rightly reports as exit 3.
    std::string topic = topic_with("retention", 1, 3, c.configs, recent);
    Json doc = audit(topic, {});
    const auto& placement = doc.at("placement");
    EXPECT_EQ(placement.at("retention_source"), "broker") << topic;
    if (c.retention_ms) {
      EXPECT_EQ(placement.at("retention_ms"), *c.retention_ms) << topic;
    } else {
      EXPECT_TRUE(placement.at("retention_ms").is_null()) << topic;
      EXPECT_EQ(placement.at("retention_infinite"), true) << topic;
    }
    bool compacted = c.configs.front().second.find("compact") != std::string::npos;
    EXPECT_EQ(placement.at("retention_compacted"), compacted) << topic;
    if (compacted) {
      std::string advice;
      for (const auto& finding : doc.at("findings")) {
        if (finding.at("id") == "ttl-shorter-than-retention") {
          advice = finding.at("advice");
        }
      }
      EXPECT_NE(advice.find("The topic is compacted"), std::string::npos) << doc.dump(2);
    }

    // check --live reads the same configs for a declared consumer.
    TempDir dir;
    write_file(dir.file("d.toml"),
               fmt::format("[[consumer]]\nname = \"billing\"\ntopic = \"{}\"\nplacement = \"redis\"\n"
                           "store = \"{}\"\nkey_template = \"d:{{event_id}}\"\nttl = \"1h\"\n",
                           topic, m_redis->uri()));
    auto check = run_dedupctl({"check", "--live", "-b", m_bootstrap, dir.file("d.toml"), "-o", "json"});
    Json checked = Json::parse(check.out);
    EXPECT_EQ(checked.at("complete"), true) << check.err;
    bool ttl_finding = false;
    for (const auto& finding : checked.at("findings")) {
      ttl_finding = ttl_finding || finding.at("id") == "ttl-shorter-than-retention";
    }
    EXPECT_TRUE(ttl_finding) << "a 1h TTL is below every retention here: " << checked.dump(2);
  }
}

// A watch of several topics asks their configs in one DescribeConfigs and serves each topic's own
// retention.
TEST_F(RealKafka, WatchServesEachTopicsOwnRetention) {
  long long recent = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch() - std::chrono::minutes(10))
                         .count();
  std::string hour = topic_with("ret-hour", 1, 2, {{"retention.ms", "3600000"}, {"segment.ms", "60000"}}, recent);
  std::string forever = topic_with("ret-forever", 1, 2, {{"retention.ms", "-1"}}, recent);
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  TempDir dir;
  int port = free_port();
  SpawnOptions options;
  options.stderr_file = dir.file("err");
  options.silence = true;
  Process watch({DEDUPCTL_BINARY, "watch", "-b", m_bootstrap, "--topic", hour, "--topic", forever, "--store",
                 redis.uri(), "--key-template", "d:{event_id}", "--ttl", "1h", "--listen",
                 fmt::format("127.0.0.1:{}", port), "--interval", "200ms"},
                options);
  auto metrics = poll_http(port, "/metrics", [](const HttpAnswer& a) {
    return a.body.find("dedupctl_up{system=\"kafka\"} 1") != std::string::npos;
  });
  ASSERT_TRUE(metrics && metrics->body.find("dedupctl_up{system=\"kafka\"} 1") != std::string::npos)
      << read_file(dir.file("err"));
  EXPECT_NE(
      metrics->body.find(fmt::format("dedupctl_retention_seconds{{topic=\"{}\",source=\"broker\"}} 3660\n", hour)),
      std::string::npos)
      << metrics->body;
  EXPECT_NE(
      metrics->body.find(fmt::format("dedupctl_retention_seconds{{topic=\"{}\",source=\"broker\"}} +Inf\n", forever)),
      std::string::npos)
      << metrics->body;
  EXPECT_EQ(read_file(dir.file("err")).find("retention of"), std::string::npos) << read_file(dir.file("err"));
  watch.signal(SIGTERM);
  EXPECT_EQ(watch.wait(), 0);
}

// The tests' records carry CreateTimes fixed in the past (k_t0, 2026-11-20). A topic that sets no
// retention.ms keeps them however long ago that is: with Kafka's 7-day default the broker, checking
// every second, deleted them from 2026-11-27 on, in the middle of whichever test read them.
TEST_F(RealKafka, RecordsOfLongAgoStayInATopicThatSetsNoRetention) {
  std::string topic = topic_with("old", 1, 3);
  std::this_thread::sleep_for(std::chrono::seconds(3)); // three of the broker's retention checks
  Json doc = scan({"--topic", topic}, 0);
  EXPECT_EQ(doc.at("summary").at("events"), 3);
  EXPECT_EQ(per_partition(doc, "log_start"), (std::map<int, long long>{{0, 0}}));
}

// ListOffsets by time: @TIME and -DURATION give the first offset at or after the time; a time
// after the last event gives the log end.
TEST_F(RealKafka, TimeSeeksAreExactOffsets) {
  std::string topic = topic_with("times", 2, 10);
  Json from_time = scan({"--topic", topic, "--from", "@2026-11-20T00:03:30Z"}, 0);
  EXPECT_EQ(per_partition(from_time, "from"), (std::map<int, long long>{{0, 4}, {1, 4}}));
  EXPECT_EQ(from_time.at("summary").at("events"), 12);
  Json to_time = scan({"--topic", topic, "--from", "@2026-11-20T00:02:00Z", "--to", "@2026-11-20T00:05:00Z"}, 0);
  EXPECT_EQ(per_partition(to_time, "from"), (std::map<int, long long>{{0, 2}, {1, 2}}));
  EXPECT_EQ(per_partition(to_time, "to"), (std::map<int, long long>{{0, 5}, {1, 5}}));
  Json after = scan({"--topic", topic, "--from", "@2030-01-01T00:00:00Z"}, 0);
  EXPECT_EQ(per_partition(after, "from"), (std::map<int, long long>{{0, 10}, {1, 10}}));
  EXPECT_EQ(after.at("summary").at("events"), 0);
}

// A group a real consumer committed (subscribe, consume, commit): --seek -N counts back from it. A
// group that committed nothing is refused. A live member is never disturbed: dedupctl does not
// join the group, so the member sees no rebalance.
TEST_F(RealKafka, GroupsAreReadWithoutJoiningThem) {
  std::string topic = topic_with("groups", 1, 10);
  std::string group = "billing-" + topic;
  GroupMember member(m_bootstrap, group, topic, 10);
  Json doc = audit(topic, {"--group", group, "--seek", "-4"});
  EXPECT_EQ(per_partition(doc, "committed"), (std::map<int, long long>{{0, 10}}));
  EXPECT_EQ(per_partition(doc, "seek"), (std::map<int, long long>{{0, 6}}));
  EXPECT_EQ(doc.at("replay").at("events"), 4);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  EXPECT_EQ(member.rebalances(), 0) << "dedupctl must never join the group";
  auto described = shared_kafka_broker().tool(
      k_consumer_groups, {"--bootstrap-server", m_bootstrap, "--describe", "--group", group, "--members"});
  EXPECT_EQ(described.exit_code, 0) << described.err;
  EXPECT_EQ(std::count(described.out.begin(), described.out.end(), '\n'), 3) << "one member:\n" << described.out;
  member.leave();

  Json nothing = audit(topic, {"--group", "nobody-" + topic, "--seek", "-4"}, 2);
  EXPECT_EQ(nothing.at("complete"), false);
}

// A share group (KIP-932) commits no offsets, and librdkafka neither lists nor describes it: named as
// --group for a seek it used to read as a group that committed nothing ("usually misspelt"). It is
// refused, exit 2, named as a share group with what gives the coverage instead, while it has a
// member that received and acknowledged every record. A consumer-protocol group (KIP-848) and a
// classic group, each committed by Kafka's own console consumer, plan the same seek as before.
TEST_F(RealKafka, AShareGroupIsNamedAndRefusedWhileGroupsOfBothConsumerProtocolsPlanSeeks) {
  std::string topic = topic_with("share", 1, 10);
  const auto& broker = shared_kafka_broker();
  std::string queue = "queue-" + topic;
  auto configured =
      broker.tool(k_configs, {"--bootstrap-server", m_bootstrap, "--alter", "--entity-type", "groups", "--entity-name",
                              queue, "--add-config", "share.auto.offset.reset=earliest"});
  ASSERT_EQ(configured.exit_code, 0) << configured.err;
  auto member = broker.spawn_tool(k_console_share_consumer,
                                  {"--bootstrap-server", m_bootstrap, "--topic", topic, "--group", queue});
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(member->read_line(std::chrono::seconds(90))) << "the share consumer received " << i << " of 10";
  }
  auto described =
      broker.tool(k_share_groups, {"--bootstrap-server", m_bootstrap, "--describe", "--group", queue, "--members"});
  ASSERT_EQ(described.exit_code, 0) << described.err;
  EXPECT_NE(described.out.find(topic + ":0"), std::string::npos) << "a member holding the partition:\n"
                                                                 << described.out;
  for (std::string seek : {"-4", "earliest", "committed"}) {
    Json refused = audit(topic, {"--group", queue, "--seek", seek}, 2);
    EXPECT_EQ(refused.value("complete", true), false);
    auto result = run_dedupctl({"audit", "-b", m_bootstrap, "--topic", topic, "--group", queue, "--seek", seek,
                                "--store", m_redis->uri(), "--key-template", "d:{event_id}", "--ttl", "1h"});
    EXPECT_EQ(result.exit_code, 2) << result.err;
    for (const std::string& said : {"group '" + queue + "' is a share group (KIP-932), not a consumer group",
                                    std::string("group.share.delivery.count.limit"),
                                    std::string("without --group: --from OFFSET|@TIME --to latest")}) {
      EXPECT_NE(result.err.find(said), std::string::npos) << seek << ": " << result.err;
    }
    EXPECT_EQ(result.err.find("misspelt"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("Check the group name"), std::string::npos) << result.err;
  }
  // The coverage the message points to: the range it would re-deliver, without --group.
  Json range = audit(topic, {"--from", "earliest", "--to", "latest"});
  EXPECT_EQ(range.at("source").at("partitions")[0].at("events"), 10);

  for (std::string protocol : {"consumer", "classic"}) {
    std::string group = protocol + "-" + topic;
    auto consumed = broker.tool(k_console_consumer, {"--bootstrap-server", m_bootstrap, "--topic", topic, "--group",
                                                     group, "--from-beginning", "--max-messages", "10",
                                                     "--consumer-property", "group.protocol=" + protocol});
    ASSERT_EQ(consumed.exit_code, 0) << consumed.err;
    Json doc = audit(topic, {"--group", group, "--seek", "-4"});
    EXPECT_EQ(per_partition(doc, "committed"), (std::map<int, long long>{{0, 10}})) << protocol;
    EXPECT_EQ(per_partition(doc, "seek"), (std::map<int, long long>{{0, 6}})) << protocol;
    EXPECT_EQ(doc.at("replay").at("events"), 4) << protocol;
  }
  // A group that does not exist is still the misspelt name it most likely is.
  auto misspelt = run_dedupctl({"audit", "-b", m_bootstrap, "--topic", topic, "--group", "qeue-" + topic, "--seek",
                                "-4", "--store", m_redis->uri(), "--key-template", "d:{event_id}", "--ttl", "1h"});
  EXPECT_EQ(misspelt.exit_code, 2);
  EXPECT_NE(misspelt.err.find("Check the group name"), std::string::npos) << misspelt.err;
}

// kafka-consumer-groups --reset-offsets --dry-run and dedupctl audit --seek, spelled each their
// own way, plan the same offset on every partition; so does an audit of a kcat dump of the topic
// given the group's offsets as kafka-consumer-groups --export writes them (--committed).
TEST_F(RealKafka, SeeksAgreeWithKafkaConsumerGroupsResetOffsets) {
  std::string topic = topic_with("parity", 3, 20);
  std::string group = "parity-" + topic;
  commit_offsets(m_bootstrap, group, topic, {{0, 15}, {1, 12}, {2, 20}});
  std::string kcat = find_program("kcat");
  ASSERT_FALSE(kcat.empty()) << "kcat is installed by scripts/install-deps";
  TempDir dir;
  auto dump = run_command({kcat, "-C", "-J", "-e", "-q", "-b", m_bootstrap, "-t", topic});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  write_file(dir.file("dump.json"), dump.out);
  auto exported = shared_kafka_broker().tool(k_consumer_groups,
                                             {"--bootstrap-server", m_bootstrap, "--group", group, "--topic", topic,
                                              "--reset-offsets", "--to-current", "--dry-run", "--export"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  write_file(dir.file("committed.csv"), exported.out);
  struct Spelling {
    std::vector<std::string> theirs;
    std::string ours;
  };
  for (const auto& s :
       std::vector<Spelling>{{{"--to-earliest"}, "earliest"},
                             {{"--to-latest"}, "latest"},
                             {{"--to-offset", "7"}, "7"},
                             {{"--shift-by", "-5"}, "-5"},
                             {{"--to-datetime", "2026-11-20T00:09:30.000"}, "@2026-11-20T00:09:30Z"},
                             {{"--by-duration", "P3650D"}, "-3650d"},
                             // Their spellings, typed as an operator would.
                             {{"--by-duration", "P3650D"}, "P3650D"},
                             {{"--to-datetime", "2026-11-20T00:09:30.000"}, "2026-11-20T00:09:30.000Z"}}) {
    std::vector<std::string> args{"--bootstrap-server", m_bootstrap, "--group", group, "--topic", topic,
                                  "--reset-offsets",    "--dry-run"};
    args.insert(args.end(), s.theirs.begin(), s.theirs.end());
    auto planned = shared_kafka_broker().tool(k_consumer_groups, args);
    ASSERT_EQ(planned.exit_code, 0) << planned.err;
    // GROUP TOPIC PARTITION NEW-OFFSET
    std::map<int, long long> theirs;
    std::istringstream lines(planned.out);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string g, t;
      int partition = 0;
      long long offset = 0;
      if (fields >> g >> t >> partition >> offset && t == topic) {
        theirs[partition] = offset;
      }
    }
    ASSERT_EQ(theirs.size(), 3u) << planned.out;
    Json ours = audit(topic, {"--group", group, "--seek", s.ours});
    EXPECT_EQ(per_partition(ours, "seek"), theirs) << s.theirs[0] << " vs --seek " << s.ours;
    auto from_dump = run_dedupctl({"audit", "--input", dir.file("dump.json"), "--committed", dir.file("committed.csv"),
                                   "--group", group, "--seek", s.ours, "--store", m_redis->uri(), "--key-template",
                                   "d:{event_id}", "--ttl", "1h", "-o", "json"});
    ASSERT_EQ(from_dump.exit_code, 1) << from_dump.err;
    Json dumped = Json::parse(from_dump.out);
    EXPECT_EQ(per_partition(dumped, "seek"), theirs) << s.theirs[0] << " vs --seek " << s.ours << " on the dump";
    EXPECT_EQ(dumped.at("replay").at("events"), ours.at("replay").at("events"));
  }
}

// kafka-delete-records moves the log start: a range from offset 0 is clamped to it and says so,
// and the counts cover exactly what is left.
TEST_F(RealKafka, AMovedLogStartIsClampedAndCountedExactly) {
  std::string topic = topic_with("deleted", 1, 10);
  TempDir dir;
  write_file(dir.file("delete.json"),
             fmt::format(R"({{"partitions":[{{"topic":"{}","partition":0,"offset":6}}],"version":1}})", topic));
  auto deleted = shared_kafka_broker().tool(
      k_delete_records, {"--bootstrap-server", m_bootstrap, "--offset-json-file", dir.file("delete.json")});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.out << deleted.err;
  Json doc = scan({"--topic", topic, "--from", "0"});
  EXPECT_EQ(per_partition(doc, "log_start"), (std::map<int, long long>{{0, 6}}));
  EXPECT_EQ(doc.at("summary").at("events"), 4);
  bool clamped = false;
  for (const auto& finding : doc.at("findings")) {
    clamped = clamped || finding.at("id") == "range-clamped";
  }
  EXPECT_TRUE(clamped) << doc.dump(2);
}

// The broker stops while dedupctl waits on it: exit 3 and complete:false within --timeout, never a
// verdict; started again, the same command succeeds.
TEST(RealKafkaFaults, AStoppedBrokerIsExit3AndTheSameRunSucceedsOnceItIsBack) {
  KafkaBroker broker;
  DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
  create_topic(broker.bootstrap(), "faults", 1);
  {
    TestProducer producer(broker.bootstrap(), 30'000);
    for (int i = 0; i < 50; ++i) {
      producer.send({"faults", 0, std::nullopt, fmt::format(R"({{"event_id":"f-{}"}})", i), {}, k_t0 + i});
    }
    std::string error;
    ASSERT_EQ(producer.flush(error), 0) << error;
  }
  std::vector<std::string> args{"scan", "-b", broker.bootstrap(), "--topic", "faults", "--timeout", "5s", "-o", "json"};
  ASSERT_EQ(run_dedupctl(args).exit_code, 0);
  broker.stop();
  auto started = std::chrono::steady_clock::now();
  auto down = run_dedupctl(args);
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(down.exit_code, 3) << down.err;
  EXPECT_EQ(Json::parse(down.out).at("complete"), false);
  EXPECT_LT(took, std::chrono::seconds(30)) << "bounded by --timeout";
  ASSERT_TRUE(broker.start()) << broker.log();
  auto back = run_dedupctl(args);
  EXPECT_EQ(back.exit_code, 0) << back.err;
  EXPECT_EQ(Json::parse(back.out).at("summary").at("events"), 50);
}

// A transactional producer's aborted records never reached a read_committed consumer: scan,
// audit and replay read read_committed by default (say so), --read-uncommitted shows them for
// forensics. Control markers are never events, and a range that ends on one ends without waiting.
TEST_F(RealKafka, AbortedTransactionsAreNotEventsUnlessAskedFor) {
  std::string topic = fmt::format("txn-{}", ::testing::UnitTest::GetInstance()->random_seed());
  create_topic(m_bootstrap, topic, 1);
  auto batch = [&](const std::string& prefix, int n) {
    std::vector<OutgoingRecord> records;
    for (int i = 0; i < n; ++i) {
      std::string id = fmt::format("{}-{}", prefix, i);
      records.push_back(
          {topic, 0, std::nullopt, fmt::format(R"({{"event_id":"{}"}})", id), {{"event_id", id}}, k_t0 + i});
    }
    return records;
  };
  produce_transaction(m_bootstrap, "tx-" + topic, batch("a", 5), true);
  produce_transaction(m_bootstrap, "tx-" + topic, batch("a", 3), false); // a retry that was aborted
  produce_transaction(m_bootstrap, "tx-" + topic, batch("b", 2), true);  // ends on a commit marker
  auto started = std::chrono::steady_clock::now();
  Json committed = scan({"--topic", topic}, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20)) << "no wait for the marker";
  EXPECT_EQ(committed.at("summary").at("events"), 7);
  EXPECT_EQ(committed.at("summary").at("log_duplicates"), 0) << "the aborted retry is not a duplicate";
  EXPECT_EQ(committed.at("source").at("isolation"), "read_committed");
  Json everything = scan({"--topic", topic, "--read-uncommitted"}, 0);
  EXPECT_EQ(everything.at("summary").at("events"), 10);
  EXPECT_EQ(everything.at("summary").at("log_duplicates"), 3);
  EXPECT_EQ(everything.at("source").at("isolation"), "read_uncommitted");
  // A -X isolation.level of the user's wins, as every -X does.
  Json by_property = scan({"--topic", topic, "-X", "isolation.level=read_uncommitted"}, 0);
  EXPECT_EQ(by_property.at("summary").at("events"), 10);
  EXPECT_EQ(by_property.at("source").at("isolation"), "read_uncommitted");
}

// A compacted topic has offsets missing inside the range: the counts are exactly the records
// left (kcat reads the same), and the range ends without waiting for offsets that will never come.
TEST_F(RealKafka, ACompactedTopicsGapsAreCountedExactly) {
  std::string topic = fmt::format("compacted-{}", ::testing::UnitTest::GetInstance()->random_seed());
  create_topic(m_bootstrap, topic, 1,
               {{"cleanup.policy", "compact"},
                {"segment.ms", "100"},
                {"min.cleanable.dirty.ratio", "0.01"},
                {"delete.retention.ms", "100"},
                {"min.compaction.lag.ms", "0"}});
  auto send = [&](int from, int to) {
    TestProducer producer(m_bootstrap, 30'000);
    for (int i = from; i < to; ++i) {
      std::string id = fmt::format("c-{}", i);
      producer.send({topic,
                     0,
                     fmt::format("key-{}", i % 5),
                     fmt::format(R"({{"event_id":"{}"}})", id),
                     {{"event_id", id}},
                     k_t0 + i * k_minute}); // segment.ms compares CreateTimes
    }
    std::string error;
    EXPECT_EQ(producer.flush(error), 0) << error;
  };
  send(0, 40);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  send(40, 41); // 40 minutes of CreateTime later: rolls the segment, so the cleaner may compact the first
  std::string kcat = find_program("kcat");
  ASSERT_FALSE(kcat.empty()) << "kcat is installed by scripts/install-deps";
  long long left = 41;
  for (int attempt = 0; attempt < 60 && left == 41; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto read = run_command({kcat, "-C", "-b", m_bootstrap, "-t", topic, "-e", "-q", "-f", "%o\n"});
    left = std::count(read.out.begin(), read.out.end(), '\n');
  }
  ASSERT_LT(left, 41) << "the log cleaner did not compact within 30 s:\n"
                      << shared_kafka_broker().log().substr(0, 2000);
  auto started = std::chrono::steady_clock::now();
  Json doc = scan({"--topic", topic}, -1);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(20));
  // kcat again: the cleaner may have run once more between the two reads.
  auto read = run_command({kcat, "-C", "-b", m_bootstrap, "-t", topic, "-e", "-q", "-f", "%o\n"});
  long long now_left = std::count(read.out.begin(), read.out.end(), '\n');
  long long events = doc.at("summary").at("events").get<long long>();
  EXPECT_TRUE(events == left || events == now_left) << events << " events; kcat read " << left << " then " << now_left;
  EXPECT_EQ(doc.at("summary").at("log_duplicates"), 0);
  EXPECT_EQ(per_partition(doc, "to"), (std::map<int, long long>{{0, 41}}));
}

// A replay through Redis into a topic on the real broker: twice (the second publishes nothing),
// then killed mid-run and rerun from its checkpoint; the sink holds every event exactly once.
TEST_F(RealKafka, AReplayIntoATopicPublishesEveryEventOnceEvenWhenKilled) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  std::string source = topic_with("replay-src", 2, 100);
  std::string sink = fmt::format("replay-sink-{}", m_next++);
  create_topic(m_bootstrap, sink, 2);
  TempDir dir;
  auto replay = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"replay", "-b",        m_bootstrap,      "--topic",          source,
                                  "--via",  redis.uri(), "--key-template", "dedup:{event_id}", "--ttl",
                                  "1d",     "--execute", "--sink",         "kafka:" + sink,    "-o",
                                  "json",   "-q"};
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  auto sink_summary = [&] { return scan({"--topic", sink}, 0).at("summary"); };

  auto first = run_dedupctl(replay({}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(Json::parse(first.out).at("summary").at("replayed"), 200);
  auto second = run_dedupctl(replay({}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(Json::parse(second.out).at("summary").at("replayed"), 0);
  EXPECT_EQ(sink_summary().at("events"), 200);

  // Through fresh keys into a fresh sink: SIGKILL once a batch has settled, then the rerun.
  redis.command("FLUSHALL");
  std::string killed_sink = sink + "-k";
  create_topic(m_bootstrap, killed_sink, 2);
  sink = killed_sink;
  std::string checkpoint = dir.file("ck.json");
  std::vector<std::string> argv{DEDUPCTL_BINARY};
  for (const auto& a : replay({"--batch", "20", "--max-rate", "200", "--checkpoint", checkpoint})) {
    argv.push_back(a);
  }
  {
    SpawnOptions options;
    options.silence = true;
    Process run(argv, options);
    for (int i = 0; i < 100 && read_file(checkpoint).empty(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    run.signal(SIGKILL);
    run.wait();
  }
  EXPECT_LT(sink_summary().at("events").get<long long>(), 200) << "killed before the end";
  auto rerun = run_dedupctl(replay({"--checkpoint", checkpoint}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  auto summary = sink_summary();
  EXPECT_EQ(summary.at("events"), 200) << "each event once, no more, no fewer";
  EXPECT_EQ(summary.at("log_duplicates"), 0);
}
