// Reality checks: a dedup library writes the records as a team's consumer would (a consumer of the
// real broker, tests/support/libraries), dedupctl audits them with the library's record layout, the
// group seeks back, and the same library consumer runs again. What it applies again must be, id for
// id, what the audit said a seek would re-apply.
#include "tests/support/dynamodb_server.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/schema_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

// A runtime's consumer: how it is started, the layout and prefix its keys have, and how the key of an
// id is derived by the runtime's own JSON and hashing (to evict records as Redis would).
struct Library {
  std::string name;       // the test's
  std::string layout;     // --layout
  std::string prefix;     // Powertools names a key after the function (Python: LAMBDA_FUNCTION_NAME, test-func
                          // outside Lambda, the module and the function) or its keyPrefix (TypeScript)
  std::string key_script; // prints the hash part of an id's key
};

const Library k_python{"python", "powertools-python", "test-func.__main__.charge",
                       "import hashlib, json, sys; print(hashlib.md5(json.dumps(sys.argv[1]).encode()).hexdigest())"};
const Library k_typescript{"typescript", "powertools-typescript", "billing-charge",
                           "console.log(require('crypto').createHash('md5').update(JSON.stringify(process.argv[1]))"
                           ".digest('base64'))"};
constexpr int k_events = 40;

// The times a differential test plants, as the library writes them: an expiration an hour ahead and
// an hour back (epoch s), a lease ten minutes ahead and back (epoch ms), far from the boundary.
std::array<std::string, 4> planted_times() {
  auto now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {std::to_string(now_s + 3600), std::to_string(now_s - 3600), std::to_string((now_s + 600) * 1000),
          std::to_string((now_s - 600) * 1000)};
}

// Ids with non-ASCII characters: Powertools hashes the id as json.dumps writes it (\u00e9).
std::string id_of(int i) { return fmt::format("évt-{}-ü", i); }

// A topic of its own (one partition, a name no other test of the run has) holding k_events
// PaymentCharged events a second apart, up to now, their ids in the JSON payload (\u escapes for the
// non-ASCII characters with `ascii`).
std::string seed_topic(const std::string& bootstrap, const std::string& prefix, bool ascii) {
  static int seeded = 0; // each test a topic of its own on the shared broker
  std::string topic = fmt::format("{}-{}-{}", prefix, ::testing::UnitTest::GetInstance()->random_seed(), ++seeded);
  create_topic(bootstrap, topic, 1, {});
  TestProducer producer(bootstrap, 30'000);
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                 .count();
  for (int i = 0; i < k_events; ++i) {
    OutgoingRecord record;
    record.topic = topic;
    record.partition = 0;
    record.payload = Json{{"event_id", id_of(i)}, {"type", "PaymentCharged"}}.dump(-1, ' ', ascii);
    record.timestamp_ms = now - (k_events - i) * 1000;
    producer.send(record);
  }
  std::string error;
  EXPECT_EQ(producer.flush(error), 0) << error;
  return topic;
}

class Powertools : public ::testing::TestWithParam<Library> {
protected:
  void SetUp() override {
    KafkaBroker& broker = shared_kafka_broker();
    DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
    std::string why;
    if (GetParam().name == "python") {
      m_runtime = registry_python(why);
      m_consumer = {m_runtime, std::string(DEDUPCTL_SOURCE_DIR) + "/tests/support/libraries/powertools_consumer.py"};
      m_key_runtime = {m_runtime, "-c"};
    } else {
      const char* libs = std::getenv("DEDUPCTL_NODE_LIBS");
      if (!libs || !std::filesystem::exists(std::string(libs) + "/node_modules")) {
        why = "no Node.js libraries: run tests/support/libraries/setup and set DEDUPCTL_NODE_LIBS (scripts/test does)";
      } else {
        m_runtime = find_program("node");
        m_consumer = {m_runtime, std::string(libs) + "/powertools_consumer.mjs"};
        m_key_runtime = {m_runtime, "-e"};
      }
    }
    DEDUPCTL_REQUIRE_SERVER(!m_runtime.empty(), why);
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    m_bootstrap = broker.bootstrap();
    m_topic = seed_topic(m_bootstrap, "powertools-" + GetParam().name, false);
  }

  // The library's consumer, as a team runs it; its handler appends each id it applies to `applied`.
  void consume(const std::string& applied, std::vector<std::string> extra, int expect_exit = 0) {
    consume_from(m_topic, m_group, applied, std::move(extra), expect_exit);
  }
  void consume_from(const std::string& topic, const std::string& group, const std::string& applied,
                    std::vector<std::string> extra, int expect_exit = 0) {
    std::vector<std::string> argv = m_consumer;
    argv.insert(argv.end(), {"--bootstrap", m_bootstrap, "--topic", topic, "--group", group, "--redis-port",
                             std::to_string(m_redis.port()), "--applied", applied});
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.insert(argv.end(), m_store_flags.begin(), m_store_flags.end());
    auto result = run_command(argv, "", std::chrono::seconds(120), m_env);
    ASSERT_EQ(result.exit_code, expect_exit) << fmt::format("{}", fmt::join(argv, " ")) << "\n" << result.err;
  }

  std::vector<std::string> placement_flags() const {
    return {"--layout", GetParam().layout, "--key-prefix", GetParam().prefix, "--id", "json:/event_id"};
  }

  Json audit(const std::string& store, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args{"audit",  "-b",        m_bootstrap, "--topic", m_topic,       "--group", m_group,
                                  "--seek", "earliest",  "--store",   store,     "--retention", "7d",      "--examples",
                                  "1000",   "--fail-on", "none",      "-o",      "json"};
    auto flags = placement_flags();
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_dedupctl(args, "", m_env);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return Json::parse(result.out, nullptr, false);
  }

  // The ids the audit says a seek over [seek, committed) re-applies.
  static std::set<std::string> reapplied(const Json& report) {
    std::set<std::string> out;
    for (const auto& finding : report.at("findings")) {
      if (finding.at("id") == "replay-risk") {
        for (const auto& example : finding.at("examples")) {
          out.insert(example.at("event_id").get<std::string>());
        }
      }
    }
    return out;
  }

  // The events' records planted (values[i] for id_of(i)): the audit of `store` against what the library
  // does when called once for each event (the consumer's --judge), value by value: the ids a seek
  // re-applies are those it applied; in progress as many as it held (a claim, or an exception at
  // every delivery); covered as many as it skipped with its saved response.
  void expect_judged_as_library(const std::string& store, const std::vector<std::string>& values) {
    commit_offsets(m_bootstrap, m_group, m_topic, {{0, k_events}});
    Json report = audit(store);
    ASSERT_TRUE(report.is_object());
    std::set<std::string> predicted = reapplied(report);
    const auto& summary = report.at("summary");

    std::string ids = m_dir.file("ids");
    std::string listed;
    for (int i = 0; i < k_events; ++i) {
      listed += id_of(i) + "\n";
    }
    write_file(ids, listed);
    std::vector<std::string> argv = m_consumer;
    argv.insert(argv.end(), {"--bootstrap", m_bootstrap, "--topic", m_topic, "--group", m_group, "--redis-port",
                             std::to_string(m_redis.port()), "--applied", m_dir.file("applied"), "--judge", ids});
    argv.insert(argv.end(), m_store_flags.begin(), m_store_flags.end());
    auto judged = run_command(argv, "", std::chrono::seconds(120), m_env);
    ASSERT_EQ(judged.exit_code, 0) << judged.err;
    std::set<std::string> applied;
    int skipped = 0, held = 0;
    std::istringstream lines(judged.out);
    std::string table;
    for (std::string line; std::getline(lines, line);) {
      auto tab = line.find('\t');
      ASSERT_NE(tab, std::string::npos) << line;
      std::string id = line.substr(0, tab), outcome = line.substr(tab + 1);
      int n = std::stoi(id.substr(id.find('-') + 1));
      table += fmt::format("{:>3} {:<40} {}\n", n, n < static_cast<int>(values.size()) ? values[n] : "(none)", outcome);
      if (outcome == "applied") {
        applied.insert(id);
      } else if (outcome == "skipped") {
        ++skipped;
      } else {
        ++held; // in progress, or an exception at every delivery
      }
    }
    EXPECT_EQ(predicted, applied) << "audit: " << fmt::format("{}", fmt::join(predicted, " ")) << "\nlibrary:\n"
                                  << table;
    EXPECT_EQ(summary.at("in_progress").get<int>(), held) << summary.dump() << "\n" << table;
    EXPECT_EQ(summary.at("covered").get<int>() + summary.at("expiring").get<int>(), skipped) << summary.dump() << "\n"
                                                                                             << table;
  }

  // The key the library gives an id, derived by the runtime's own JSON and hashing.
  std::string key_of(const std::string& id) const {
    std::vector<std::string> argv = m_key_runtime;
    argv.insert(argv.end(), {GetParam().key_script, id});
    auto result = run_command(argv);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return GetParam().prefix + "#" + result.out.substr(0, result.out.find('\n'));
  }

  std::string m_runtime;
  std::vector<std::string> m_consumer;    // argv that starts the consumer
  std::vector<std::string> m_key_runtime; // argv that runs key_script
  std::string m_bootstrap;
  std::string m_topic;
  std::string m_group = "billing";
  RedisServer m_redis;
  TempDir m_dir;
  std::map<std::string, std::string> m_env; // the consumers' and dedupctl's environment besides ours
  std::vector<std::string> m_store_flags;   // where the consumers keep their records (Redis when empty)

  // The failures the library makes itself, recorded by its consumer: an idempotency window that
  // lapsed (offsets 0-4, expires after 2 s), a handler killed mid-event (20) after an at-most-once
  // commit (5-19; its claim's in_progress_expiration passes), then 21-30; and the records of 8, 9
  // and 10 removed by `remove` (an eviction, a cleanup). Returns once the window and the lease passed.
  void make_failures(const std::function<void(const std::string& key)>& remove) {
    std::string first = m_dir.file("applied-before");
    consume(first, {"--expires", "2", "--max", "5"});
    consume(first, {"--commit-first", "--crash-on", id_of(20), "--lease-ms", "1000"}, 9);
    consume(first, {"--max", "10"});
    ASSERT_EQ(lines_of_file(first).size(), 5u + 15u + 10u);
    for (int i : {8, 9, 10}) {
      remove(key_of(id_of(i)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2500)); // the 2 s window and the 1 s lease pass
  }

  // The seek to 0, then the library again: what it applies below the committed offset (31) must be
  // what the audit predicted, and that the failures make_failures made.
  void expect_seek_reapplies(const std::set<std::string>& predicted, const std::string& removed) {
    commit_offsets(m_bootstrap, m_group, m_topic, {{0, 0}});
    std::string second = m_dir.file("applied-after");
    consume(second, {});
    std::set<std::string> applied_again;
    for (const auto& id : lines_of_file(second)) {
      int n = std::stoi(id.substr(id.find('-') + 1));
      if (n < 31) {
        applied_again.insert(id);
      }
    }
    EXPECT_EQ(predicted, applied_again) << "audit: " << fmt::format("{}", fmt::join(predicted, " "))
                                        << "\nlibrary: " << fmt::format("{}", fmt::join(applied_again, " "));
    std::set<std::string> expected;
    for (int i : {0, 1, 2, 3, 4, 8, 9, 10, 20}) {
      expected.insert(id_of(i));
    }
    EXPECT_EQ(applied_again, expected) << "the lapsed window, the " << removed << " and the orphaned claim";
  }

  // replay --via `via` after make_failures: it publishes exactly the events the library would apply
  // again and those never consumed; the library's consumer then skips every one of them, read from
  // the replay's sink and from the topic after a seek. Returns the replay's arguments.
  std::vector<std::string> expect_replay_skipped(const std::string& via) {
    std::string sink = m_topic + "-replayed";
    create_topic(m_bootstrap, sink, 1, {});
    std::string decisions = m_dir.file("decisions.ndjson");
    std::vector<std::string> args{"replay",      "-b",      m_bootstrap, "--topic", m_topic,         "--via",
                                  via,           "--ttl",   "1h",        "--sink",  "kafka:" + sink, "--execute",
                                  "--decisions", decisions, "-o",        "json"};
    auto flags = placement_flags();
    args.insert(args.end(), flags.begin(), flags.end());
    auto replayed = run_dedupctl(args, "", m_env);
    EXPECT_EQ(replayed.exit_code, 0) << replayed.err << replayed.out;
    EXPECT_EQ(Json::parse(replayed.out, nullptr, false).at("placement").at("layout"), GetParam().layout);
    std::set<std::string> published, expected;
    for (const auto& line : lines_of_file(decisions)) {
      Json decision = Json::parse(line);
      if (decision.at("decision") == "replayed") {
        published.insert(decision.at("event_id").get<std::string>());
      }
    }
    for (int i : {0, 1, 2, 3, 4, 8, 9, 10, 20}) {
      expected.insert(id_of(i));
    }
    for (int i = 31; i < k_events; ++i) {
      expected.insert(id_of(i));
    }
    EXPECT_EQ(published, expected) << "replayed: " << fmt::format("{}", fmt::join(published, " "));

    std::string from_sink = m_dir.file("applied-from-sink");
    consume_from(sink, "billing-replayed", from_sink, {});
    EXPECT_TRUE(lines_of_file(from_sink).empty()) << fmt::format("{}", fmt::join(lines_of_file(from_sink), " "));
    commit_offsets(m_bootstrap, m_group, m_topic, {{0, 0}});
    std::string again = m_dir.file("applied-again");
    consume(again, {});
    EXPECT_TRUE(lines_of_file(again).empty()) << fmt::format("{}", fmt::join(lines_of_file(again), " "));
    return args;
  }
};

INSTANTIATE_TEST_SUITE_P(Runtimes, Powertools, ::testing::Values(k_python, k_typescript),
                         [](const ::testing::TestParamInfo<Library>& library) { return library.param.name; });

} // namespace

// Records the library wrote (Powertools for Python 3.37 and for TypeScript 2.35), with the failures it
// makes itself: an idempotency window that lapsed (expires after 2 s), a handler killed mid-event
// after an at-most-once commit (an INPROGRESS claim whose in_progress_expiration passes), and records
// evicted from Redis. The audit with the library's layout says which events a seek re-applies; after
// the seek the library's consumer applies exactly those (and, above the committed offset, the events
// it had not reached).
TEST_P(Powertools, ASeekReappliesWhatTheAuditSaid) {
  // Evicted: three records of consumed events go.
  make_failures([&](const std::string& key) { EXPECT_EQ(m_redis.command("DEL " + key), ":1\r\n") << key; });

  // discover finds the layout and the prefix from the topic and the store alone.
  auto discovered = run_dedupctl({"discover", "-b", m_bootstrap, "--topic", m_topic, "--store", m_redis.uri(), "--id",
                                  "json:/event_id", "-o", "json"});
  ASSERT_EQ(discovered.exit_code, 0) << discovered.err;
  Json candidates = Json::parse(discovered.out, nullptr, false).at("candidates");
  ASSERT_FALSE(candidates.empty()) << discovered.out;
  EXPECT_EQ(candidates[0].at("layout"), GetParam().layout) << discovered.out;
  EXPECT_EQ(candidates[0].at("key_prefix"), GetParam().prefix);
  EXPECT_NE(candidates[0].at("command").get<std::string>().find("--layout " + GetParam().layout + " --key-prefix"),
            std::string::npos);

  Json report = audit(m_redis.uri());
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report.at("placement").at("layout"), GetParam().layout);
  const auto& summary = report.at("summary");
  EXPECT_EQ(summary.at("orphaned"), 1) << summary.dump();
  EXPECT_EQ(summary.at("pending"), k_events - 31) << "above the committed offset";
  std::set<std::string> predicted = reapplied(report);
  EXPECT_EQ(report.at("replay").at("would_reapply"), static_cast<long long>(predicted.size()));

  // The same audit over a snapshot of the records (the layout kept in its header).
  std::string snapshot = m_dir.file("records.snapshot");
  auto taken =
      run_dedupctl({"snapshot", "--store", m_redis.uri(), "--layout", GetParam().layout, "--output", snapshot});
  ASSERT_EQ(taken.exit_code, 0) << taken.err;
  Json offline = audit("file:" + snapshot);
  ASSERT_TRUE(offline.is_object());
  EXPECT_EQ(reapplied(offline), predicted) << "the snapshot keeps the layout's fields";

  // trace shows the claim as the library wrote it and says what the library will do with it.
  std::vector<std::string> args{"trace",   "-b",        m_bootstrap, "--topic",     m_topic,
                                "--group", m_group,     "--store",   m_redis.uri(), "--event-id",
                                id_of(20), "--fail-on", "none",      "-o",          "json"};
  auto flags = placement_flags();
  args.insert(args.end(), flags.begin(), flags.end());
  auto traced = run_dedupctl(args);
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  Json trace = Json::parse(traced.out, nullptr, false).at("traces").at(0);
  EXPECT_EQ(trace.at("record").at("fields").at("status"), "INPROGRESS") << trace.dump();
  EXPECT_TRUE(trace.at("record").at("fields").contains("in_progress_expiration")) << trace.dump();
  EXPECT_EQ(trace.at("verdict").at("id"), "claim-orphaned") << trace.dump();
  EXPECT_NE(trace.at("verdict").at("text").get<std::string>().find("applies the event again"), std::string::npos);

  // The seek, then the library again.
  expect_seek_reapplies(predicted, "evicted records");
}

namespace {

// Powertools with its default store, a DynamoDB table (moto's, every request's signature checked):
// the same consumer through DynamoDBPersistenceLayer.
class PowertoolsDynamo : public Powertools {
protected:
  void SetUp() override {
    Powertools::SetUp();
    if (HasFatalFailure() || IsSkipped()) {
      return;
    }
    DEDUPCTL_REQUIRE_SERVER(m_dynamo.available(), m_dynamo.why_unavailable());
    m_dynamo.create_table(m_table);
    m_env = m_dynamo.env();
    m_store_flags = {"--dynamodb", m_dynamo.endpoint(), "--table", m_table};
  }
  void delete_item(const std::string& key) {
    m_dynamo.admin({"delete-item", m_dynamo.endpoint(), DynamoServer::k_region, m_table, key});
  }

  DynamoServer m_dynamo{true};
  std::string m_table = "IdempotencyTable";
};

INSTANTIATE_TEST_SUITE_P(Runtimes, PowertoolsDynamo, ::testing::Values(k_python, k_typescript),
                         [](const ::testing::TestParamInfo<Library>& library) { return library.param.name; });

} // namespace

// Records Powertools for Python 3.37 and for TypeScript 2.35 wrote to their DynamoDB table, with the failures it makes
// itself: a lapsed idempotency window (its items past `expiration`, still in the table: DynamoDB's TTL deletes lazily),
// a handler killed mid-event after an at-most-once commit, and items a cleanup deleted. The audit of the live table,
// and of `aws dynamodb scan --output json` of it, says which events a seek re-applies; after the seek the library
// applies exactly those.
TEST_P(PowertoolsDynamo, ASeekReappliesWhatTheAuditOfTheTableSaid) {
  make_failures([&](const std::string& key) { delete_item(key); });
  std::string store = m_dynamo.uri(m_table);
  Json report = audit(store);
  ASSERT_TRUE(report.is_object());
  EXPECT_EQ(report.at("placement").at("kind"), "dynamodb");
  const auto& summary = report.at("summary");
  EXPECT_EQ(summary.at("orphaned"), 1) << summary.dump();
  EXPECT_EQ(summary.at("expired"), 5) << summary.dump();
  EXPECT_EQ(summary.at("missing"), 3) << summary.dump();
  EXPECT_EQ(summary.at("pending"), k_events - 31) << "above the committed offset";
  std::set<std::string> predicted = reapplied(report);

  std::string scan = m_dir.file("scan.json");
  write_file(scan, m_dynamo.admin({"scan-json", m_dynamo.endpoint(), DynamoServer::k_region, m_table}));
  Json offline = audit("file:" + scan);
  ASSERT_TRUE(offline.is_object());
  EXPECT_EQ(reapplied(offline), predicted) << "the scan gives the live table's verdict";

  expect_seek_reapplies(predicted, "deleted items");
}

// The differential test of record values over the library's DynamoDB table: each item planted with
// attributes of the types DynamoDB holds (N, S, NULL, none), then audited and judged by the library
// itself (its conditional PutItem first, then the item it gets back), value by value. BOOL is left
// out: moto compares it with a number in a condition, where DynamoDB does not.
TEST_P(PowertoolsDynamo, EveryItemIsJudgedAsTheLibraryJudgesIt) {
  auto [future, past, future_ms, past_ms] = planted_times();
  auto n = [](const std::string& v) { return R"({"N": ")" + v + "\"}"; };
  auto str = [](const std::string& v) { return R"({"S": ")" + v + "\"}"; };
  auto item = [&](const std::string& status, const std::string& expiration, const std::string& lease = "") {
    std::string out;
    if (!status.empty()) {
      out += R"("status": )" + status;
    }
    if (!expiration.empty()) {
      out += std::string(out.empty() ? "" : ", ") + R"("expiration": )" + expiration;
    }
    if (!lease.empty()) {
      out += R"(, "in_progress_expiration": )" + lease;
    }
    return out;
  };
  const std::string done = str("COMPLETED");
  const std::string claim = str("INPROGRESS");
  std::vector<std::string> items{
      item(done, n(future)),
      item(done, n(past)),
      item(done, n("0")),
      item(done, n("-5")),
      item(done, n("1000000000000000000000000000000")),
      item(done, n("9223372036854775807")),
      item(done, R"({"NULL": true})"),
      item(done, str(future)),
      item(done, str(past)),
      item(done, ""),
      item(str("EXPIRED"), n(future)),
      item(str("EXPIRED"), n(past)),
      item("", n(future)),
      item(str("completed"), n(future)),
      item(n("1"), n(future)),
      item(claim, n(future), n(future_ms)),
      item(claim, n(future), n(past_ms)),
      item(claim, n(future)),
      item(claim, n(future), n("0")),
      item(claim, n(future), str(future_ms)),
      item(claim, n(future), str(past_ms)),
      item(claim, n(past), n(future_ms)),
      item(done, n(future)) + R"(, "data": {"S": "{\"charged\": 1}"})",
  };
  for (std::size_t i = 0; i < items.size(); ++i) {
    std::string key = key_of(id_of(static_cast<int>(i)));
    std::string attributes = items[i].empty() ? "" : ", " + items[i];
    m_dynamo.admin({"put-item", m_dynamo.endpoint(), DynamoServer::k_region, m_table,
                    R"({"id": {"S": )" + Json(key).dump() + "}" + attributes + "}"});
  }
  expect_judged_as_library(m_dynamo.uri(m_table), items);
}

// replay --via dynamodb:// claims as Powertools does (its conditional PutItem) and completes with the
// library's record: it publishes exactly the events the library would apply again, and the library's
// consumer then skips every one of them, from the replay's sink and from the topic after a seek.
TEST_P(PowertoolsDynamo, AReplayThroughTheTableIsSkippedByTheLibrary) {
  make_failures([&](const std::string& key) { delete_item(key); });
  auto args = expect_replay_skipped(m_dynamo.uri(m_table));
  // Run again, the replay finds every record its first run completed: nothing more is published.
  auto again = run_dedupctl(args, "", m_env);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Json::parse(again.out).at("replay").at("replayed"), 0) << again.out;
}

// replay --via through the library's layout writes the library's own records: it publishes exactly
// the events the library would apply again (the lapsed window, the evicted records, the orphaned
// claim it takes over under KEY:lock, the events never consumed), and the library's consumer then
// skips every one of them, read from the replay's sink and from the original topic after a seek.
TEST_P(Powertools, AReplayThroughTheLibrarysRecordsIsSkippedByTheLibrary) {
  make_failures([&](const std::string& key) { EXPECT_EQ(m_redis.command("DEL " + key), ":1\r\n") << key; });
  expect_replay_skipped(m_redis.uri());
}

// A differential test of record values: each of the topic's events gets a record planted in Redis
// under the key the library derives, holding one value of the table below (what the library writes,
// and what a hand, a bug or a truncation leaves: not JSON, no status, a status it does not know,
// numbers at and past the edges of an int64 and a double, numbers written as text). dedupctl audits
// them; then the library itself is called once for each event (powertools_consumer --judge) and says
// what it did. The events the audit says a seek re-applies are exactly those the library applied;
// those it holds in progress (a claim, or a record the library fails on) and those it calls
// covered are as many as the library skipped with an exception and with its saved response.
// Values json.loads reads and JSON.parse does not (NaN, Infinity) are left out: no layer writes them
// outside a string, and the tool reads them as JSON does (docs/libraries.md).
TEST_P(Powertools, EveryRecordValueIsJudgedAsTheLibraryJudgesIt) {
  auto [future, past, future_ms, past_ms] = planted_times();
  auto record = [&](const std::string& status, const std::string& expiration, const std::string& lease = "") {
    std::string out = "{" + (status.empty() ? "" : "\"status\": " + status);
    if (!expiration.empty()) {
      out += std::string(out.size() > 1 ? ", " : "") + "\"expiration\": " + expiration;
    }
    if (!lease.empty()) {
      out += ", \"in_progress_expiration\": " + lease;
    }
    return out + "}";
  };
  const std::string done = "\"COMPLETED\"";
  const std::string claim = "\"INPROGRESS\"";
  std::vector<std::string> values{
      record(done, future),
      record(done, past),
      record(done, future).substr(0, 30), // cut short
      "done",                             // not JSON
      "\"done\"",                         // JSON, not an object
      "[1, 2]",
      "5",
      "null",
      "",
      record("", future), // no status
      record("\"EXPIRED\"", future),
      record("\"completed\"", future), // a status it does not know
      record("1", future),
      record(done, future) + " x",           // trailing content
      "\xEF\xBB\xBF" + record(done, future), // a byte-order mark
      "  " + record(done, future) + "\n",
      record(claim + ", \"status\": " + done, future), // a repeated name: the last one
      record(done, "1e30"),
      record(done, "9223372036854775807"),
      record(done, "9223372036854775808"),
      record(done, "123456789012345678901234567890"),
      record(done, "1e300"),
      record(done, "0"),
      record(done, "-5"),
      record(done, "null"),
      record(done, "true"),
      record(done, "false"),
      record(done, "\"" + future + "\""),
      record(done, "\"" + past + "\""),
      record(done, "\"\""),
      record(done, past + ".5"),
      record(claim, future, "1e300"),
      record(claim, future, future_ms),
      record(claim, future, past_ms),
      record(claim, future), // no lease
      record(claim, future, "0"),
      record(claim, future, "\"" + future_ms + "\""),
      record(claim, future, "\"" + past_ms + "\""),
      record(claim, past, future_ms), // expired under its lease
      record(done, future).insert(1, "\"data\": \"{\\\"nested\\\": [1, {\\\"a\\\": \\\"}\\\"}]}\", "),
  };
  ASSERT_LE(values.size(), static_cast<std::size_t>(k_events));
  for (std::size_t i = 0; i < values.size(); ++i) {
    std::string key = key_of(id_of(static_cast<int>(i)));
    std::string resp =
        fmt::format("*3\r\n$3\r\nSET\r\n${}\r\n{}\r\n${}\r\n{}", key.size(), key, values[i].size(), values[i]);
    ASSERT_EQ(m_redis.command(resp), "+OK\r\n") << values[i];
  }
  expect_judged_as_library(m_redis.uri(), values);
}

// The consumer's effects beside the library's records (audit --effects): Powertools for Python's
// handler charges by INCR of charged:<id>, in a step of its own, and fails the way effects fail: an
// effect write lost although the library completed the record (lost), a handler killed after its
// effect with its claim left INPROGRESS, records evicted after their effect (unguarded). After the
// seek the library charges again exactly the events the audit called already applied in the window,
// and the lost event stays uncharged.
class PowertoolsEffects : public Powertools {};

INSTANTIATE_TEST_SUITE_P(Runtimes, PowertoolsEffects, ::testing::Values(k_python),
                         [](const ::testing::TestParamInfo<Library>& library) { return library.param.name; });

TEST_P(PowertoolsEffects, ASeekChargesTwiceExactlyWhatTheAuditSaidWasAppliedAndUnguarded) {
  std::string applied = m_dir.file("applied");
  std::vector<std::string> charging{"--effects-key", "charged:"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), charging.begin(), charging.end());
    return extra;
  };
  consume(applied, with({"--max", "10"})); // offsets 0-9
  consume(applied,
          with({"--commit-first", "--lose-effect", id_of(12), "--crash-after-effect", id_of(15), "--lease-ms", "1000"}),
          9); // 10-14, dies in 15 after its effect; committed 16
  for (int i : {3, 4}) {
    EXPECT_EQ(m_redis.command("DEL " + key_of(id_of(i))), ":1\r\n") << id_of(i);
  }
  // The claim's 1 s lease passes, and the killed consumer's session (6 s) ends: the group can seek.
  std::this_thread::sleep_for(std::chrono::milliseconds(7000));
  auto charges = [&](int i) {
    std::string reply = m_redis.command("GET charged:" + id_of(i));
    return reply == "$-1\r\n" ? 0 : std::stoi(reply.substr(reply.find("\r\n") + 2));
  };
  ASSERT_EQ(charges(12), 0);
  ASSERT_EQ(charges(15), 1);

  Json report = audit(m_redis.uri(), {"--effects", m_redis.uri(), "--effects-key-template", "charged:{event_id}"});
  ASSERT_TRUE(report.is_object());
  auto examples = [&](const std::string& id) {
    std::set<std::string> out;
    for (const auto& finding : report.at("findings")) {
      if (finding.at("id") == id) {
        for (const auto& example : finding.at("examples")) {
          if (example.at("offset").get<long long>() < 16) { // the window: [earliest, committed)
            out.insert(example.at("event_id").get<std::string>());
          }
        }
      }
    }
    return out;
  };
  std::set<std::string> lost = examples("lost-effect");
  std::set<std::string> unguarded = examples("unguarded-effect");
  EXPECT_EQ(report.at("summary").at("effects").at("lost"), static_cast<long long>(lost.size()));
  EXPECT_EQ(report.at("replay").at("would_reapply_applied"), static_cast<long long>(unguarded.size()))
      << "every unguarded event of the window is re-applied, and nothing else applied is: " << report.at("replay");
  EXPECT_EQ(report.at("replay").at("would_reapply_unapplied"), 0);

  // The seek, then the library again: what it charges twice, and what stays uncharged.
  commit_offsets(m_bootstrap, m_group, m_topic, {{0, 0}});
  consume(m_dir.file("applied-after"), charging);
  std::set<std::string> twice, never;
  for (int i = 0; i < 16; ++i) {
    int n = charges(i);
    if (n == 2) {
      twice.insert(id_of(i));
    } else if (n == 0) {
      never.insert(id_of(i));
    }
  }
  EXPECT_EQ(unguarded, twice) << "audit: " << fmt::format("{}", fmt::join(unguarded, " "))
                              << "\nlibrary: " << fmt::format("{}", fmt::join(twice, " "));
  EXPECT_EQ(lost, never) << "audit: " << fmt::format("{}", fmt::join(lost, " "))
                         << "\nlibrary: " << fmt::format("{}", fmt::join(never, " "));
  EXPECT_EQ(twice, (std::set<std::string>{id_of(3), id_of(4), id_of(15)}));
  EXPECT_EQ(never, (std::set<std::string>{id_of(12)}));

  // replay --repair-lost through the library's records: 12's COMPLETED record is released and 12
  // published to the library's own topic; the library, reading on, charges it once and nothing else.
  std::map<int, int> before;
  for (int i = 0; i < k_events; ++i) {
    before[i] = charges(i);
  }
  std::vector<std::string> args{"replay",
                                "-b",
                                m_bootstrap,
                                "--topic",
                                m_topic,
                                "--group",
                                m_group,
                                "--to",
                                "committed",
                                "--via",
                                m_redis.uri(),
                                "--repair-lost",
                                "--effects",
                                m_redis.uri(),
                                "--effects-key-template",
                                "charged:{event_id}",
                                "--execute",
                                "--sink",
                                "kafka:" + m_topic,
                                "--checkpoint",
                                m_dir.file("repair.cp"),
                                "--decisions",
                                m_dir.file("repair.ndjson"),
                                "-o",
                                "json"};
  auto flags = placement_flags();
  args.insert(args.end(), flags.begin(), flags.end());
  auto repaired = run_dedupctl(args);
  ASSERT_EQ(repaired.exit_code, 0) << repaired.err << repaired.out;
  std::set<std::string> published;
  for (const auto& line : lines_of_file(m_dir.file("repair.ndjson"))) {
    Json decision = Json::parse(line);
    if (decision.at("decision") == "replayed") {
      published.insert(decision.at("event_id").get<std::string>());
    }
  }
  EXPECT_EQ(published, lost);
  consume(m_dir.file("applied-repaired"), charging);
  for (int i = 0; i < k_events; ++i) {
    EXPECT_EQ(charges(i), i == 12 ? 1 : before[i]) << id_of(i);
  }
}

// A hand-written consumer (tests/support/libraries/effects_consumer.py) that claims in Redis (SET NX
// EX: its claim is its record), inserts its effect row in PostgreSQL in a step of its own, then
// completes the record, killed at the planted points: between claim and effect (12: lost), after the
// effect before the completion (15), and records evicted after both (3, 4, 20: unguarded). The same
// with its effect a record it produces to an output topic (--effects kafka:TOPIC), flushed, its id in
// the header event_id; and with its record a row of an inbox table, inserted on its own before the
// effect (inbox).
class EffectsConsumer : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    KafkaBroker& broker = shared_kafka_broker();
    DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
    std::string why;
    m_python = registry_python(why);
    DEDUPCTL_REQUIRE_SERVER(!m_python.empty(), why);
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    ASSERT_EQ(m_pg.psql("CREATE TABLE charges (event_id text NOT NULL);"
                        "CREATE TABLE processed_events (event_id text PRIMARY KEY, processed_at timestamptz NOT NULL)")
                  .exit_code,
              0);
    m_bootstrap = broker.bootstrap();
    m_topic = seed_topic(m_bootstrap, "effects-consumer", false);
    if (GetParam() == "kafka") {
      m_out = m_topic + "-charges";
      create_topic(m_bootstrap, m_out, 2, {});
      // A record naming 12 stamped a day before the range: the output topic is read from the range's
      // earliest event (less 5 minutes), so it is never seen and 12 stays lost.
      TestProducer producer(m_bootstrap, 30'000);
      OutgoingRecord stale;
      stale.topic = m_out;
      stale.partition = 0;
      stale.payload = "{}";
      stale.headers = {{"event_id", id_of(12)}};
      stale.timestamp_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count() -
          24 * 3600 * 1000LL;
      producer.send(stale);
      std::string error;
      ASSERT_EQ(producer.flush(error), 0) << error;
    }
  }

  void consume(std::vector<std::string> extra, int expect_exit = 0) {
    std::vector<std::string> argv{
        m_python,       std::string(DEDUPCTL_SOURCE_DIR) + "/tests/support/libraries/effects_consumer.py",
        "--bootstrap",  m_bootstrap,
        "--topic",      m_topic,
        "--group",      "billing",
        "--redis-port", std::to_string(m_redis.port())};
    if (GetParam() == "inbox") {
      argv.insert(argv.end(), {"--pg", m_pg.conninfo(), "--inbox"});
    } else if (m_out.empty()) {
      argv.insert(argv.end(), {"--pg", m_pg.conninfo()});
    } else {
      argv.insert(argv.end(), {"--effects-topic", m_out, "--applied", m_dir.file("produced")});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto result = run_command(argv, "", std::chrono::seconds(120));
    ASSERT_EQ(result.exit_code, expect_exit) << fmt::format("{}", fmt::join(argv, " ")) << "\n" << result.err;
  }

  // Offsets 0-24 consumed with the planted failures; committed 25.
  void plant() {
    consume({"--max", "10"});                        // 0-9
    consume({"--crash-after-claim", id_of(12)}, 9);  // 10, 11; dies in 12
    consume({"--crash-after-effect", id_of(15)}, 9); // 12 skipped; 13, 14; dies in 15
    consume({"--max", "10"});                        // 15 skipped; 16-24
    for (int i : {3, 4, 20}) {
      ASSERT_EQ(record_exists(i), 1) << id_of(i);
      if (GetParam() == "inbox") { // a cleanup job's DELETE
        ASSERT_EQ(m_pg.psql(fmt::format("DELETE FROM processed_events WHERE event_id = '{}'", id_of(i))).exit_code, 0);
      } else {
        ASSERT_EQ(m_redis.command("DEL dedup:billing:" + id_of(i)), ":1\r\n") << id_of(i);
      }
    }
  }

  std::vector<std::string> flags() const {
    std::vector<std::string> out{"--id", "json:/event_id"};
    if (GetParam() == "inbox") {
      out.insert(out.end(), {"--store", m_pg.conninfo(), "--inbox-table", "processed_events", "--inbox-consumer-column",
                             "", "--inbox-retention", "7d"});
    } else {
      out.insert(out.end(), {"--store", m_redis.uri(), "--key-template", "dedup:billing:{event_id}"});
    }
    if (m_out.empty()) {
      out.insert(out.end(), {"--effects", m_pg.conninfo(), "--effects-table", "charges"});
    } else {
      out.insert(out.end(), {"--effects", "kafka:" + m_out});
    }
    return out;
  }

  Json audit() {
    std::vector<std::string> args{"audit",  "-b",        m_bootstrap,   "--topic", m_topic, "--group", "billing",
                                  "--seek", "earliest",  "--retention", "7d",      "--ttl", "1h",      "--examples",
                                  "1000",   "--fail-on", "none",        "-o",      "json"};
    auto more = flags();
    args.insert(args.end(), more.begin(), more.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return Json::parse(result.out, nullptr, false);
  }

  // Whether event i's record exists: its Redis key, or its inbox row (1 or 0).
  int record_exists(int i) {
    if (GetParam() == "inbox") {
      auto result = m_pg.psql(fmt::format("SELECT count(*) FROM processed_events WHERE event_id = '{}'", id_of(i)));
      return std::stoi(result.out);
    }
    return m_redis.command("EXISTS dedup:billing:" + id_of(i)) == ":1\r\n" ? 1 : 0;
  }

  // How many effect rows (or output records) each event has.
  std::map<std::string, int> rows() {
    std::map<std::string, int> out;
    if (!m_out.empty()) {
      for (const auto& id : lines_of_file(m_dir.file("produced"))) {
        ++out[id];
      }
      // The consumer's list is the topic's content: as many records, the same repeats.
      auto scan = run_dedupctl({"scan", "-b", m_bootstrap, "--topic", m_out, "--id", "header:event_id", "-o", "json",
                                "-q", "--fail-on", "none"});
      EXPECT_EQ(scan.exit_code, 0) << scan.err;
      EXPECT_EQ(Json::parse(scan.out).at("summary").at("events"),
                static_cast<long long>(lines_of_file(m_dir.file("produced")).size()) + 1)
          << "and the stale record";
      return out;
    }
    auto result = m_pg.psql("SELECT event_id, count(*) FROM charges GROUP BY event_id");
    std::istringstream in(result.out);
    for (std::string line; std::getline(in, line);) {
      if (auto bar = line.find('|'); bar != std::string::npos) {
        out[line.substr(0, bar)] = std::stoi(line.substr(bar + 1));
      }
    }
    return out;
  }

  // The event ids of a finding's examples in the window [earliest, committed 25).
  static std::set<std::string> examples(const Json& report, const std::string& id) {
    std::set<std::string> out;
    for (const auto& finding : report.at("findings")) {
      if (finding.at("id") == id) {
        for (const auto& example : finding.at("examples")) {
          if (example.at("offset").get<long long>() < 25) {
            out.insert(example.at("event_id").get<std::string>());
          }
        }
      }
    }
    return out;
  }

  std::string m_python;
  RedisServer m_redis;
  PostgresServer m_pg;
  std::string m_bootstrap;
  std::string m_topic;
  std::string m_out; // the output topic, when the effects are records
  TempDir m_dir;
};

INSTANTIATE_TEST_SUITE_P(Effects, EffectsConsumer, ::testing::Values("postgres", "kafka", "inbox"),
                         [](const ::testing::TestParamInfo<std::string>& kind) { return kind.param; });

// The reality check: after the seek the same consumer inserts a second row for exactly the events the
// audit called already applied (would_reapply_applied), and the events still without a row are
// exactly its lost ones.
TEST_P(EffectsConsumer, ASeekDoublesExactlyTheAppliedAndLeavesExactlyTheLost) {
  plant();
  Json report = audit();
  ASSERT_TRUE(report.is_object());
  std::set<std::string> lost = examples(report, "lost-effect");
  std::set<std::string> unguarded = examples(report, "unguarded-effect");
  EXPECT_EQ(report.at("summary").at("effects").at("lost"), static_cast<long long>(lost.size())) << report.dump();
  EXPECT_EQ(report.at("replay").at("would_reapply_applied"), static_cast<long long>(unguarded.size()))
      << report.at("replay");
  // trace says the same of the lost event.
  std::vector<std::string> args{"trace", "-b",         m_bootstrap, "--topic",   m_topic, "--group", "billing", "--ttl",
                                "1h",    "--event-id", id_of(12),   "--fail-on", "none",  "-o",      "json"};
  auto more = flags();
  args.insert(args.end(), more.begin(), more.end());
  auto traced = run_dedupctl(args);
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  EXPECT_EQ(Json::parse(traced.out).at("traces").at(0).at("verdict").at("id"), "effect-lost") << traced.out;

  commit_offsets(m_bootstrap, "billing", m_topic, {{0, 0}});
  consume({});
  auto counts = rows();
  std::set<std::string> doubled, never;
  for (int i = 0; i < 25; ++i) {
    int n = counts.count(id_of(i)) ? counts[id_of(i)] : 0;
    if (n == 2) {
      doubled.insert(id_of(i));
    } else if (n == 0) {
      never.insert(id_of(i));
    }
  }
  EXPECT_EQ(doubled, unguarded) << "consumer: " << fmt::format("{}", fmt::join(doubled, " "))
                                << "\naudit: " << fmt::format("{}", fmt::join(unguarded, " "));
  EXPECT_EQ(never, lost) << "consumer: " << fmt::format("{}", fmt::join(never, " "))
                         << "\naudit: " << fmt::format("{}", fmt::join(lost, " "));
  EXPECT_EQ(doubled, (std::set<std::string>{id_of(3), id_of(4), id_of(20)}));
  EXPECT_EQ(never, (std::set<std::string>{id_of(12)}));
}

// replay --repair-lost: its plan names exactly the audit's lost events; run, it releases their stale
// records and publishes them to the consumer's own topic, and the consumer, reading on, applies them:
// every event then has exactly one effect row. A second repair finds nothing lost.
TEST_P(EffectsConsumer, ARepairLeavesEveryEventWithExactlyOneEffectRow) {
  plant();
  Json report = audit();
  ASSERT_TRUE(report.is_object());
  std::set<std::string> lost = examples(report, "lost-effect");
  ASSERT_EQ(lost, (std::set<std::string>{id_of(12)}));

  auto repair = [&](bool execute, const std::string& decisions) {
    std::vector<std::string> args{"replay",      "-b",      m_bootstrap, "--topic",   m_topic,
                                  "--group",     "billing", "--to",      "committed", "--repair-lost",
                                  "--decisions", decisions, "-o",        "json"};
    auto more = flags();
    *std::find(more.begin(), more.end(), "--store") = "--via";
    if (auto retention = std::find(more.begin(), more.end(), "--inbox-retention"); retention != more.end()) {
      more.erase(retention, retention + 2); // the audit's, for the coverage of rows; a replay has none
    }
    args.insert(args.end(), more.begin(), more.end());
    if (execute) {
      args.insert(args.end(), {"--execute", "--sink", "kafka:" + m_topic, "--checkpoint", decisions + ".cp"});
    }
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 0) << result.err << result.out;
    std::set<std::string> published;
    for (const auto& line : lines_of_file(decisions)) {
      Json decision = Json::parse(line);
      if (decision.at("decision") == (execute ? "replayed" : "would-replay")) {
        published.insert(decision.at("event_id").get<std::string>());
      }
    }
    return published;
  };
  EXPECT_EQ(repair(false, m_dir.file("plan.ndjson")), lost) << "the plan";
  EXPECT_EQ(record_exists(12), 1) << "a plan releases nothing";
  EXPECT_EQ(repair(true, m_dir.file("run.ndjson")), lost) << "the run";
  EXPECT_EQ(record_exists(12), 0);

  consume({}); // 25-39 and the repaired 12
  auto counts = rows();
  for (int i = 0; i < k_events; ++i) {
    EXPECT_EQ(counts[id_of(i)], 1) << id_of(i);
  }
  EXPECT_TRUE(repair(true, m_dir.file("again.ndjson")).empty()) << "nothing is lost any more";
}

namespace {

// A Java library run as a consumer (tests/support/libraries/java), the layout dedupctl reads its
// records with, and where they live.
struct JavaLibrary {
  std::string name;               // DedupConsumer's --library
  std::string layout;             // --layout
  bool redis = false;             // else PostgreSQL
  std::vector<std::string> flags; // what else the audit needs (the repository, the consumer)
  std::string discovered;         // the layout discover names (camel-string's keys are plain keys)
  std::string libs = "libs";      // the classpath's jars under DEDUPCTL_JAVA_LIBS
};

const JavaLibrary k_spring_redis{"spring-redis", "spring-hash", true, {}, "spring-hash"};
const JavaLibrary k_spring_jdbc{"spring-jdbc", "spring-jdbc", false, {}, "spring-jdbc"};
const JavaLibrary k_camel_jdbc{"camel-jdbc", "camel-jdbc", false, {"--consumer", "billing"}, "camel-jdbc"};
const JavaLibrary k_camel_set{"camel-set", "camel-set",       true, {"--collection", "billing"},
                              "camel-set", "camel-redis-libs"};
const JavaLibrary k_camel_string{"camel-string", "camel-string",    true, {"--key-prefix", "billing"},
                                 "camel-string", "camel-redis-libs"};

class JavaLibraries : public ::testing::TestWithParam<JavaLibrary> {
protected:
  void SetUp() override {
    KafkaBroker& broker = shared_kafka_broker();
    DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
    const char* libs = std::getenv("DEDUPCTL_JAVA_LIBS");
    DEDUPCTL_REQUIRE_SERVER(libs && std::filesystem::exists(std::string(libs) + "/classes/DedupConsumer.class"),
                            "no Java dedup libraries: run tests/support/libraries/java/fetch and set "
                            "DEDUPCTL_JAVA_LIBS (scripts/test does)");
    m_classpath = fmt::format("{0}/classes:{0}/{1}/*", libs, GetParam().libs);
    if (GetParam().redis) {
      m_redis.emplace();
      DEDUPCTL_REQUIRE_SERVER(m_redis->available(), m_redis->why_unavailable());
      m_store = m_redis->uri();
    } else {
      m_pg.emplace();
      DEDUPCTL_REQUIRE_SERVER(m_pg->available(), m_pg->why_unavailable());
      // JDBC connects over TCP, where the server asks for a password.
      std::string conninfo = m_pg->conninfo();
      std::string user = conninfo.substr(conninfo.find("user=") + 5);
      user = user.substr(0, user.find(' '));
      ASSERT_EQ(m_pg->psql(fmt::format("ALTER USER \"{}\" PASSWORD 'java-test'", user)).exit_code, 0);
      m_jdbc = fmt::format("jdbc:postgresql://127.0.0.1:{}/postgres?user={}&password=java-test", m_pg->port(), user);
      m_store = conninfo;
    }
    m_bootstrap = broker.bootstrap();
    m_topic = seed_topic(m_bootstrap, "java-" + GetParam().name, true);
  }

  void consume(const std::string& applied, std::vector<std::string> extra) {
    std::vector<std::string> argv{
        find_program("java"), "-cp",       m_classpath,  "DedupConsumer", "--library", GetParam().name,
        "--bootstrap",        m_bootstrap, "--topic",    m_topic,         "--group",   "billing",
        "--applied",          applied,     "--consumer", "billing"};
    if (m_redis) {
      argv.insert(argv.end(), {"--redis-port", std::to_string(m_redis->port())});
    } else {
      argv.insert(argv.end(), {"--jdbc", m_jdbc});
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto result = run_command(argv, "", std::chrono::seconds(120));
    ASSERT_EQ(result.exit_code, 0) << fmt::format("{}", fmt::join(argv, " ")) << "\n" << result.err;
  }

  // The records of `ids` gone, as an eviction or a cleanup job takes them: removed through the
  // library (IdempotentRepository.remove, MetadataStore.remove).
  void lose(const std::vector<int>& ids) {
    std::string list;
    for (int i : ids) {
      list += (list.empty() ? "" : ",") + id_of(i);
    }
    consume(m_dir.file("applied-none"), {"--forget", list});
  }

  std::string m_classpath;
  std::optional<RedisServer> m_redis;
  std::optional<PostgresServer> m_pg;
  std::string m_jdbc;
  std::string m_store;
  std::string m_bootstrap;
  std::string m_topic;
  TempDir m_dir;
};

INSTANTIATE_TEST_SUITE_P(Libraries, JavaLibraries,
                         ::testing::Values(k_spring_redis, k_spring_jdbc, k_camel_jdbc, k_camel_set, k_camel_string),
                         [](const ::testing::TestParamInfo<JavaLibrary>& library) {
                           std::string name = library.param.name;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

} // namespace

// Spring Integration's idempotent receiver (MetadataStoreSelector over its Redis and JDBC metadata
// stores) and Camel's repositories (JDBC, a Redis set, Redis string keys) write the records, as a team's consumer of
// the real broker does; some are lost (an eviction, a cleanup job); the audit with the library's layout says which
// events a seek re-applies, and after the seek the library's consumer applies exactly those (and the events above the
// committed offset, which it had not reached). discover finds the layout.
TEST_P(JavaLibraries, ASeekReappliesWhatTheAuditSaid) {
  std::string first = m_dir.file("applied-before");
  consume(first, {"--max", "25"});
  ASSERT_EQ(lines_of_file(first).size(), 25u);
  lose({3, 7, 8});

  auto discovered = run_dedupctl(
      {"discover", "-b", m_bootstrap, "--topic", m_topic, "--store", m_store, "--id", "json:/event_id", "-o", "json"});
  ASSERT_EQ(discovered.exit_code, 0) << discovered.err;
  Json candidates = Json::parse(discovered.out).at("candidates");
  ASSERT_FALSE(candidates.empty()) << discovered.out;
  EXPECT_EQ(candidates[0].at("layout"), GetParam().discovered) << discovered.out;

  std::vector<std::string> args{"audit",
                                "-b",
                                m_bootstrap,
                                "--topic",
                                m_topic,
                                "--group",
                                "billing",
                                "--seek",
                                "earliest",
                                "--store",
                                m_store,
                                "--retention",
                                "7d",
                                "--layout",
                                GetParam().layout,
                                "--id",
                                "json:/event_id",
                                "--examples",
                                "1000",
                                "--fail-on",
                                "none",
                                "-o",
                                "json"};
  args.insert(args.end(), GetParam().flags.begin(), GetParam().flags.end());
  auto audited = run_dedupctl(args);
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  Json report = Json::parse(audited.out);
  EXPECT_EQ(report.at("placement").at("layout"), GetParam().layout);
  std::set<std::string> predicted;
  for (const auto& finding : report.at("findings")) {
    if (finding.at("id") == "replay-risk") {
      for (const auto& example : finding.at("examples")) {
        predicted.insert(example.at("event_id").get<std::string>());
      }
    }
  }
  EXPECT_EQ(report.at("summary").at("pending"), k_events - 25) << report.at("summary").dump();

  commit_offsets(m_bootstrap, "billing", m_topic, {{0, 0}});
  std::string second = m_dir.file("applied-after");
  consume(second, {});
  std::set<std::string> applied_again;
  int above = 0;
  for (const auto& id : lines_of_file(second)) {
    int n = std::stoi(id.substr(id.find('-') + 1));
    if (n < 25) {
      applied_again.insert(id);
    } else {
      ++above;
    }
  }
  EXPECT_EQ(above, k_events - 25) << "the events it had not reached";
  EXPECT_EQ(predicted, applied_again) << "audit: " << fmt::format("{}", fmt::join(predicted, " "))
                                      << "\nlibrary: " << fmt::format("{}", fmt::join(applied_again, " "));
  EXPECT_EQ(applied_again, (std::set<std::string>{id_of(3), id_of(7), id_of(8)})) << "the records lost";
}

namespace {

// The replay's reality check where a Java library's records can be written by a replay: a field of
// Spring's hash (a claim, then the time), a row of Spring's JDBC metadata store (in the batch's
// transaction).
class JavaLibraryReplay : public JavaLibraries {};

INSTANTIATE_TEST_SUITE_P(Libraries, JavaLibraryReplay, ::testing::Values(k_spring_redis, k_spring_jdbc),
                         [](const ::testing::TestParamInfo<JavaLibrary>& library) {
                           return library.param.redis ? std::string("spring_redis") : std::string("spring_jdbc");
                         });

} // namespace

// replay --via through spring-hash or spring-jdbc writes the record Spring's selector writes (HSETNX
// of a claim, then the time; a row in REGION DEFAULT with the time as text): it publishes exactly
// the events Spring would apply again (the lost records, the events never consumed), and Spring's
// consumer then skips every one of them, read from the sink and from the topic after a seek.
TEST_P(JavaLibraryReplay, AReplayThroughTheLibrarysRecordsIsSkippedByTheLibrary) {
  consume(m_dir.file("applied-before"), {"--max", "25"});
  lose({3, 7, 8});
  std::string sink = m_topic + "-replayed";
  create_topic(m_bootstrap, sink, 1, {});
  std::string decisions = m_dir.file("decisions.ndjson");
  auto replayed = run_dedupctl({"replay", "-b", m_bootstrap, "--topic", m_topic, "--via", m_store, "--layout",
                                GetParam().layout, "--id", "json:/event_id", "--sink", "kafka:" + sink, "--execute",
                                "--decisions", decisions, "-o", "json"});
  ASSERT_EQ(replayed.exit_code, 0) << replayed.err << replayed.out;
  std::set<std::string> published, expected{id_of(3), id_of(7), id_of(8)};
  for (int i = 25; i < k_events; ++i) {
    expected.insert(id_of(i));
  }
  for (const auto& line : lines_of_file(decisions)) {
    Json decision = Json::parse(line);
    if (decision.at("decision") == "replayed") {
      published.insert(decision.at("event_id").get<std::string>());
    }
  }
  EXPECT_EQ(published, expected) << "replayed: " << fmt::format("{}", fmt::join(published, " "));
  std::string from_sink = m_dir.file("applied-from-sink");
  consume(from_sink, {"--topic", sink, "--group", "billing-replayed"});
  EXPECT_TRUE(lines_of_file(from_sink).empty()) << fmt::format("{}", fmt::join(lines_of_file(from_sink), " "));
  commit_offsets(m_bootstrap, "billing", m_topic, {{0, 0}});
  std::string again = m_dir.file("applied-again");
  consume(again, {});
  EXPECT_TRUE(lines_of_file(again).empty()) << fmt::format("{}", fmt::join(lines_of_file(again), " "));
}
