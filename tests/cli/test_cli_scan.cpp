// The built binary end to end: exit codes, messages, report-v1 JSON, on a seeded mock cluster and
// on kcat dumps.
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
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include <sys/stat.h>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

const std::string k_orders = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/orders.ndjson";

// Checks a document against the parts of docs/report-v1.md every report carries.
void expect_report_v1(const Json& doc, const std::string& command) {
  static const std::regex k_time(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)");
  static const std::set<std::string> k_ids{"ttl-shorter-than-retention",
                                           "ttl-margin-thin",
                                           "no-expiry",
                                           "ttl-gap",
                                           "expiring-before-retention",
                                           "missing-record",
                                           "orphaned-claim",
                                           "key-collision",
                                           "id-reuse",
                                           "log-duplicate",
                                           "semantic-duplicate",
                                           "missing-event-id",
                                           "replay-risk",
                                           "range-clamped",
                                           "key-template-lacks-event-id",
                                           "key-template-uses-offset",
                                           "namespace-shared",
                                           "memory-placement-for-external-effects",
                                           "inbox-without-unique-constraint",
                                           "eviction-policy-unsafe",
                                           "persistence-off"};
  ASSERT_TRUE(doc.is_object());
  EXPECT_EQ(doc.at("schema"), "dedupctl.report/v1");
  EXPECT_EQ(doc.at("command"), command);
  EXPECT_TRUE(std::regex_match(doc.at("generated_at").get<std::string>(), k_time));
  EXPECT_TRUE(doc.at("complete").is_boolean());
  EXPECT_TRUE(doc.at("exit_code").is_number_integer());
  for (const auto& [name, value] : doc.at("summary").items()) {
    EXPECT_TRUE(value.is_number_integer()) << name;
  }
  for (const auto& finding : doc.at("findings")) {
    EXPECT_TRUE(k_ids.count(finding.at("id").get<std::string>())) << finding.at("id");
    std::string severity = finding.at("severity");
    EXPECT_TRUE(severity == "error" || severity == "warning" || severity == "info");
    EXPECT_TRUE(finding.at("title").is_string());
    EXPECT_TRUE(finding.at("count").is_number_integer());
    EXPECT_TRUE(finding.at("partitions").is_array());
    EXPECT_TRUE(finding.at("advice").is_string());
    for (const auto& example : finding.at("examples")) {
      EXPECT_TRUE(example.at("partition").is_number_integer());
      EXPECT_TRUE(example.at("offset").is_number_integer());
      EXPECT_TRUE(example.at("timestamp").is_null() ||
                  std::regex_match(example.at("timestamp").get<std::string>(), k_time));
      EXPECT_TRUE(example.at("event_id").is_null() || example.at("event_id").is_string());
    }
  }
  if (doc.contains("source")) {
    for (const auto& p : doc.at("source").at("partitions")) {
      EXPECT_LE(p.at("from").get<long long>(), p.at("to").get<long long>());
      EXPECT_TRUE(p.at("events").is_number_integer());
    }
  }
}

std::map<std::string, long long> counts(const Json& doc) {
  std::map<std::string, long long> out;
  for (const auto& finding : doc.at("findings")) {
    out[finding.at("id")] = finding.at("count");
  }
  return out;
}

// The numbers planted in examples/orders.ndjson (see examples/make_orders.py).
void expect_planted_numbers(const Json& doc) {
  EXPECT_EQ(doc.at("summary").at("events"), 306);
  EXPECT_EQ(doc.at("summary").at("no_id"), 5);
  EXPECT_EQ(doc.at("summary").at("log_duplicates"), 3);
  EXPECT_EQ(doc.at("summary").at("id_reuse"), 2);
  EXPECT_EQ(doc.at("summary").at("semantic_duplicates"), 2);
  auto c = counts(doc);
  EXPECT_EQ(c, (std::map<std::string, long long>{
                   {"id-reuse", 2}, {"missing-event-id", 5}, {"semantic-duplicate", 2}, {"log-duplicate", 3}}));
}

// examples/orders.ndjson in topic "orders" (4 partitions), on librdkafka's mock cluster or on the
// real Apache Kafka broker of the process (the /kafka instances run in the real-kafka tier).
class SeededTopic : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    std::string why;
    m_bootstrap = seeded_cluster(
        GetParam(), {"orders:4"},
        [](const std::string& bootstrap) {
          auto seeded = run_command({DEDUPCTL_SEEDER, "-b", bootstrap, "--topic", "orders", "--input", k_orders});
          ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
        },
        why);
    DEDUPCTL_REQUIRE_SERVER(!m_bootstrap.empty(), why);
  }
  const std::string& bootstrap() const { return m_bootstrap; }

  std::string m_bootstrap;
};

INSTANTIATE_TEST_SUITE_P(Brokers, SeededTopic, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

} // namespace

TEST_P(SeededTopic, ScanReportsThePlantedProblemsExactlyAndExits1) {
  auto result = run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "--format", "json"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = parse(result);
  expect_report_v1(doc, "scan");
  EXPECT_EQ(doc.at("complete"), true);
  EXPECT_EQ(doc.at("exit_code"), 1);
  expect_planted_numbers(doc);
  const auto& partitions = doc.at("source").at("partitions");
  ASSERT_EQ(partitions.size(), 4u);
  long long sum = 0;
  for (const auto& p : partitions) {
    EXPECT_EQ(p.at("log_start"), 0);
    EXPECT_EQ(p.at("from"), 0);
    EXPECT_EQ(p.at("to"), p.at("log_end"));
    EXPECT_EQ(p.at("events"), p.at("log_end"));
    sum += p.at("events").get<long long>();
  }
  EXPECT_EQ(sum, 306);
  // Resolved ranges go to stderr as topic[partition] from..to.
  EXPECT_NE(result.err.find("orders[0] 0..79 (log 0..79)"), std::string::npos) << result.err;
}

// Without --group the range is resolved by a handle in no consumer group, which asks for no group
// coordinator: a coordinator connection still being made when that handle was destroyed held the
// run for up to a second, now and then (tests/bench/scan/run on the real broker: 1.0 s runs and
// 2.1 s runs). The reader's handle is in a group of its own (librdkafka assigns only in one), long
// enough for its coordinator to be up when it goes. With --group the resolver needs the group's.
TEST_P(SeededTopic, WithoutAGroupTheRangeIsResolvedWithoutAGroupCoordinator) {
  // The resolver's handle is the first destroyed: its log is what comes before that.
  auto resolver_log = [](const std::string& err) { return err.substr(0, err.find("Terminating instance")); };
  auto plain =
      run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "--format", "json", "-vv", "-X", "debug=protocol"});
  EXPECT_EQ(plain.exit_code, 1) << plain.err;
  ASSERT_NE(resolver_log(plain.err).find("Sent ListOffsetsRequest"), std::string::npos)
      << "the resolver's protocol log is not where it was: " << plain.err.substr(0, 4000);
  EXPECT_EQ(resolver_log(plain.err).find("FindCoordinator"), std::string::npos) << resolver_log(plain.err);
  auto grouped = run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "--group", "billing", "--format", "json",
                               "-vv", "-X", "debug=protocol"});
  EXPECT_NE(resolver_log(grouped.err).find("Sent FindCoordinatorRequest"), std::string::npos)
      << "the check above cannot tell: " << grouped.err.substr(0, 4000);
}

// No handle pushes client metrics to the user's brokers (KIP-714; librdkafka's enable.metrics.push
// is on by default): a command-line tool's metrics are nobody's, and destroying a handle that pushes
// waits up to a second for its last push (rd_kafka_telemetry_await_termination), which a
// GroupCoordinator reconnecting at close made a 1 s stall in one run of ten. -X turns it back on.
TEST_P(SeededTopic, NoHandlePushesClientMetricsUnlessAskedTo) {
  auto plain = run_dedupctl(
      {"scan", "-b", bootstrap(), "--topic", "orders", "--format", "json", "-vv", "-X", "debug=telemetry,generic"});
  EXPECT_EQ(plain.exit_code, 1) << plain.err;
  ASSERT_NE(plain.err.find("Terminating instance"), std::string::npos) << "the debug log is not where it was";
  EXPECT_EQ(plain.err.find("Awaiting termination of telemetry"), std::string::npos) << plain.err.substr(0, 4000);
  auto asked = run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "--format", "json", "-vv", "-X",
                             "debug=telemetry,generic", "-X", "enable.metrics.push=true"});
  EXPECT_NE(asked.err.find("Awaiting termination of telemetry"), std::string::npos) << "the check above cannot tell";
}

TEST_P(SeededTopic, AKcatDumpOfTheTopicGivesTheSameNumbers) {
  std::string kcat = find_program("kcat");
  DEDUPCTL_REQUIRE_SERVER(!kcat.empty(), "kcat is not installed (apt-get install kcat)");
  auto dump = run_command({kcat, "-C", "-J", "-e", "-q", "-b", bootstrap(), "-t", "orders"});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  auto from_dump = run_dedupctl({"scan", "--input", "-", "--format", "json"}, dump.out);
  EXPECT_EQ(from_dump.exit_code, 1) << from_dump.err;
  auto doc = parse(from_dump);
  expect_report_v1(doc, "scan");
  EXPECT_EQ(doc.at("source").at("kind"), "file");
  expect_planted_numbers(doc);
}

TEST_P(SeededTopic, FailOnDecidesTheExitCodeWhateverTheFormat) {
  for (const std::string format : {"text", "json", "markdown"}) {
    auto none = run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "-o", format, "--fail-on", "none"});
    EXPECT_EQ(none.exit_code, 0) << format;
    auto error = run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "-o", format});
    EXPECT_EQ(error.exit_code, 1) << format;
  }
}

TEST_P(SeededTopic, RangeSpecsNarrowTheScan) {
  auto result = run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders:1,3", "--from", "-10", "-o", "json"});
  auto doc = parse(result);
  ASSERT_EQ(doc.at("source").at("partitions").size(), 2u);
  EXPECT_EQ(doc.at("summary").at("events"), 20);
  EXPECT_EQ(doc.at("source").at("partitions")[0].at("partition"), 1);
  EXPECT_EQ(doc.at("source").at("partitions")[0].at("from"), 65);
  // @TIME on the mock (which answers time lookups with -1): the reader skips older events. The
  // bundled data holds 68 events at or after 2026-11-21T19:00:00Z (the seeder kept the file's times).
  auto recent =
      run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "--from", "@2026-11-21T19:00:00Z", "-o", "json"});
  EXPECT_EQ(parse(recent).at("summary").at("events"), 68) << recent.err;
  auto from_file = run_dedupctl({"scan", "--input", k_orders, "--from", "@2026-11-21T20:00:00+01:00", "-o", "json"});
  EXPECT_EQ(parse(from_file).at("summary").at("events"), 68);
  auto until =
      run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "--to", "@2026-11-21T19:00:00Z", "-o", "json"});
  EXPECT_EQ(parse(until).at("summary").at("events"), 306 - 68);
}

TEST_P(SeededTopic, OutputFileIsWrittenWhole) {
  TempDir dir;
  auto result =
      run_dedupctl({"scan", "-b", bootstrap(), "--topic", "orders", "-o", "json", "--output", dir.file("report.json")});
  EXPECT_EQ(result.exit_code, 1);
  EXPECT_TRUE(result.out.empty());
  auto doc = Json::parse(read_file(dir.file("report.json")));
  expect_planted_numbers(doc);
  auto bad = run_dedupctl({"scan", "--input", k_orders, "--output", "/nonexistent/dir/r.json"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("cannot write --output /nonexistent/dir/r.json"), std::string::npos) << bad.err;
}

TEST(CliScan, UnreachableBrokersExit3WithinTheTimeoutAndNoCleanVerdict) {
  std::string broker = fmt::format("127.0.0.1:{}", free_port());
  auto started = std::chrono::steady_clock::now();
  auto json = run_dedupctl({"scan", "-b", broker, "--topic", "orders", "--timeout", "2s", "-o", "json"});
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));
  EXPECT_EQ(json.exit_code, 3);
  auto doc = parse(json);
  expect_report_v1(doc, "scan");
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(doc.at("exit_code"), 3);
  EXPECT_NE(json.err.find("cannot reach Kafka at " + broker), std::string::npos) << json.err;
  auto text = run_dedupctl({"scan", "-b", broker, "--topic", "orders", "--timeout", "1s"});
  EXPECT_EQ(text.exit_code, 3);
  EXPECT_EQ(text.out.find("clean"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("INCOMPLETE"), std::string::npos) << text.out;
}

TEST(CliScan, BadInputIsExit2NamingIt) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  std::vector<Case> cases{
      {{"scan", "--input", k_orders, "--from", "soon"}, "invalid --from 'soon'"},
      {{"scan", "--input", k_orders, "--to", "@yesterday"}, "invalid --to '@yesterday'"},
      {{"scan", "--input", k_orders, "--id", "body:/id"}, "invalid --id spec 'body:/id'"},
      {{"scan", "--input", k_orders, "--window", "5 minutes"}, "invalid --window '5 minutes'"},
      {{"scan", "--input", k_orders, "--fail-on", "fatal"}, "invalid --fail-on 'fatal'"},
      {{"scan", "--input", k_orders, "-o", "yaml"}, "invalid --format 'yaml'"},
      {{"scan", "--input", k_orders, "--from", "-100"}, "--from '-100' needs a broker"},
      {{"scan", "--input", "/no/such/file"}, "cannot read --input /no/such/file"},
      {{"scan", "--input", k_orders, "--topic", "orders"}, "--input and --topic exclude each other"},
      {{"scan", "--topic", "orders", "-b", "127.0.0.1:1", "--from", "committed"}, "'committed' needs --group"},
      {{"scan", "--topic", "orders:x", "-b", "127.0.0.1:1"}, "invalid --topic 'orders:x'"},
      {{"scan", "--topic", "orders", "-b", "127.0.0.1:1", "-X", "no.such.property=1"}, "invalid -X no.such.property: "},
      {{"scan"}, "no events to read"},
      {{"scan", "--no-such-flag"}, "--no-such-flag"},
      {{"frobnicate"}, "unknown command 'frobnicate' (commands: scan, audit, check, "},
  };
  for (const auto& c : cases) {
    auto result = run_dedupctl(c.args);
    EXPECT_EQ(result.exit_code, 2) << c.message << "\n" << result.err;
    EXPECT_NE(result.err.find(c.message), std::string::npos) << result.err;
    EXPECT_EQ(result.err.rfind("dedupctl: error: ", 0), 0u) << result.err;
  }
}

TEST(CliScan, UsageErrorsStillGiveAJsonDocumentWithJsonFormat) {
  auto result = run_dedupctl({"scan", "--input", k_orders, "--from", "soon", "-o", "json"});
  EXPECT_EQ(result.exit_code, 2);
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(doc.at("exit_code"), 2);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("--from"), std::string::npos);
}

TEST(CliScan, MalformedInputLinesStopWithFileAndLineOrAreCountedWithSkipInvalid) {
  TempDir dir;
  std::string lines = read_file(k_orders);
  auto second = lines.find('\n', lines.find('\n') + 1) + 1;
  lines.insert(second, "{\"partition\": 0, \"offset\": \n"); // line 3
  write_file(dir.file("dump.ndjson"), lines);
  auto strict = run_dedupctl({"scan", "--input", dir.file("dump.ndjson")});
  EXPECT_EQ(strict.exit_code, 2);
  EXPECT_NE(strict.err.find(dir.file("dump.ndjson") + ":3: not JSON"), std::string::npos) << strict.err;
  EXPECT_TRUE(strict.out.empty()) << "nothing half-written";
  auto lenient = run_dedupctl({"scan", "--input", dir.file("dump.ndjson"), "--skip-invalid", "-o", "json"});
  EXPECT_EQ(lenient.exit_code, 1);
  auto doc = parse(lenient);
  EXPECT_EQ(doc.at("source").at("invalid_lines"), 1);
  expect_planted_numbers(doc);
}

// Scan and audit keep old semantic keys in TMPDIR only to save memory: one that cannot be written
// gives the same verdicts, and -v says the keys stay in memory.
TEST(CliScan, ATmpdirThatCannotBeWrittenChangesNoVerdict) {
  TempDir dir;
  std::string missing = dir.file("no-such-tmp");
  write_file(dir.file("keys.tsv"), "# dedupctl-snapshot v1\ttaken_at=1795000000000\tstore=redis://x\tmatch=*\n");
  for (std::string command : {"scan", "audit"}) {
    std::vector<std::string> args{command, "--input", k_orders, "-o", "json"};
    if (command == "audit") {
      args.insert(args.end(), {"--store", "file:" + dir.file("keys.tsv"), "--ttl", "1d", "--now", "1795000000000"});
    }
    auto with = run_dedupctl(args, {}, {{"TMPDIR", dir.path()}});
    args.push_back("-v");
    auto without = run_dedupctl(args, {}, {{"TMPDIR", missing}});
    EXPECT_EQ(without.exit_code, with.exit_code) << command << ": " << without.err;
    EXPECT_NE(without.err.find("the semantic rule keeps every key in memory: cannot create the semantic rule's "
                               "temporary file in " +
                               missing + " (TMPDIR)"),
              std::string::npos)
        << command << ": " << without.err;
    Json a = parse(with);
    Json b = parse(without);
    for (Json* doc : {&a, &b}) {
      doc->erase("generated_at");
      doc->erase("settings");
    }
    EXPECT_EQ(a, b) << command;
    EXPECT_FALSE(a.at("findings").empty()) << command;
  }
}

// Past about a million semantic keys the old ones go to TMPDIR, and past about a million ids, the
// ids. A retry sent long after under a new id, with the time of the event it repeats, finds its
// key there, and an early event sent again or an early id reused finds its id: the report is that
// of a run that keeps everything in memory (TMPDIR missing), and -v says how many moved and were found.
TEST(CliScan, SemanticKeysAndIdsMovedToTmpdirAreFoundByEventsThatFarBack) {
  TempDir dir;
  constexpr int k_events = 1'200'000;
  constexpr int k_late = 1000;
  constexpr int k_resent = 500;
  constexpr int k_reused = 200;
  {
    std::ofstream out(dir.file("dump.ndjson"));
    auto line = [&](long long offset, long long ts, const std::string& id, long long order) {
      out << R"({"topic":"t","partition":0,"offset":)" << offset << R"(,"ts":)" << ts
          << R"(,"key":null,"payload":"{\"event_id\":\")" << id << R"(\",\"order\":\"o)" << order << R"(\"}"})" << '\n';
    };
    const long long base = 1'700'000'000'000;
    for (int i = 0; i < k_events; ++i) {
      line(i, base + i, "e" + std::to_string(i), i); // an event a millisecond, each its own intent
    }
    for (int j = 0; j < k_late; ++j) { // the retries: a second after the event they repeat
      line(k_events + j, base + j * 100 + 1000, "late" + std::to_string(j), j * 100);
    }
    for (int j = 0; j < k_resent; ++j) { // early events sent again as they were, ids long archived
      line(k_events + k_late + j, base + j * 1000, "e" + std::to_string(j * 1000), j * 1000);
    }
    for (int j = 0; j < k_reused; ++j) { // early ids given to other events
      line(k_events + k_late + k_resent + j, base + k_events + j, "e" + std::to_string(j * 1000 + 1), -1 - j);
    }
  }
  TempDir tmp;
  std::vector<std::string> args{"scan", "--input", dir.file("dump.ndjson"), "-o", "json", "--fail-on", "none", "-v"};
  auto archived = run_dedupctl(args, {}, {{"TMPDIR", tmp.path()}});
  auto in_memory = run_dedupctl(args, {}, {{"TMPDIR", dir.file("missing")}});
  ASSERT_EQ(archived.exit_code, 0) << archived.err;
  ASSERT_EQ(in_memory.exit_code, 0) << in_memory.err;
  std::smatch moved;
  std::string err = archived.err;
  ASSERT_TRUE(std::regex_search(err, moved,
                                std::regex(R"(moved (\d+) keys older than the window to the semantic rule's )"
                                           R"(temporary file in .* \(TMPDIR\); (\d+) events with a time )"
                                           R"(that far back asked there, (\d+) found their key)")))
      << err;
  EXPECT_GT(std::stoll(moved[1]), 500'000);
  EXPECT_EQ(std::stoll(moved[3]), k_late);
  // Past about a million ids, the ids go there too, and events that repeat one find it.
  std::smatch ids;
  ASSERT_TRUE(std::regex_search(err, ids,
                                std::regex(R"(the id rule moved (\d+) event ids to the id rule's temporary )"
                                           R"(file in .* \(TMPDIR\); (\d+) events with an id not in memory )"
                                           R"(asked there \((\d+) blocks read\), (\d+) found theirs)")))
      << err;
  EXPECT_GE(std::stoll(ids[1]), 1'000'000);
  EXPECT_EQ(std::stoll(ids[4]), k_resent + k_reused);
  EXPECT_LT(std::stoll(ids[3]), k_resent + k_reused + std::stoll(ids[2]) / 50) << "the filter spares most reads";
  EXPECT_EQ(in_memory.err.find("moved"), std::string::npos) << in_memory.err;
  Json a = parse(archived);
  Json b = parse(in_memory);
  EXPECT_EQ(a.at("summary").at("semantic_duplicates"), k_late);
  EXPECT_EQ(a.at("summary").at("log_duplicates"), k_resent);
  EXPECT_EQ(a.at("summary").at("id_reuse"), k_reused);
  a.erase("generated_at");
  b.erase("generated_at");
  EXPECT_EQ(a, b);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "the archive showed in TMPDIR";
}

TEST(CliScan, PayloadsThatAreNotJsonCountAsNoIdWithTheReason) {
  std::string dump =
      kcat_line(OwnedEvent{.topic = "t", .timestamp_ms = 1, .payload = std::string("\0\1binary", 8)}) +
      kcat_line(OwnedEvent{.topic = "t", .offset = 1, .timestamp_ms = 2, .payload = R"({"event_id":"a"})"});
  auto result = run_dedupctl({"scan", "--input", "-", "--id", "json:/event_id", "-o", "json"}, dump);
  EXPECT_EQ(result.exit_code, 0) << result.err; // a warning does not fail --fail-on error
  auto doc = parse(result);
  EXPECT_EQ(doc.at("summary").at("no_id"), 1);
  EXPECT_EQ(doc.at("findings")[0].at("id"), "missing-event-id");
  EXPECT_EQ(doc.at("findings")[0].at("examples")[0].at("note"),
            "payload is binary, not JSON (Avro or Protobuf? see --registry)");
}

namespace {

// SIGINT once the run is under way: an incomplete JSON report and exit 130.
void interrupt_and_expect_130(Process& process) {
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  process.signal(SIGINT);
  std::string out;
  while (auto line = process.read_line(std::chrono::seconds(10))) {
    out += *line + "\n";
  }
  EXPECT_EQ(process.wait(), 130);
  auto doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(doc.at("exit_code"), 130);
}

} // namespace

TEST(CliScan, SigintWritesAnIncompleteReportAndExits130) {
  SpawnOptions options;
  options.pipe_stdin = true;
  options.pipe_stdout = true;
  Process process({DEDUPCTL_BINARY, "scan", "--input", "-", "-o", "json", "-q"}, options);
  process.write_line(
      kcat_json(OwnedEvent{.topic = "t", .timestamp_ms = 1, .headers = {{"event_id", "a"}}, .payload = "x"}));
  interrupt_and_expect_130(process);
}

// Opening a FIFO waits for a writer; SIGINT there is an interruption (130), not a bad path (2).
TEST(CliScan, SigintWhileWaitingForAFifoWriterExits130) {
  TempDir dir;
  std::string fifo = dir.file("events.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  SpawnOptions options;
  options.pipe_stdout = true;
  Process process({DEDUPCTL_BINARY, "scan", "--input", fifo, "-o", "json", "-q"}, options);
  interrupt_and_expect_130(process);
}

TEST(CliScan, EvictedLogStartIsReportedAsRangeClamped) {
  MockBroker broker({"big:1"});
  auto seeded = run_command({DEDUPCTL_SEEDER, "-b", broker.bootstrap(), "--topic", "big", "--generate", "4000",
                             "--partitions", "1", "--payload-size", "2000"});
  ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
  auto result = run_dedupctl({"scan", "-b", broker.bootstrap(), "--topic", "big", "--from", "0", "-o", "json"});
  auto doc = parse(result);
  expect_report_v1(doc, "scan");
  auto c = counts(doc);
  ASSERT_EQ(c.count("range-clamped"), 1u) << result.out;
  EXPECT_EQ(result.exit_code, 0); // a warning
  const auto& p = doc.at("source").at("partitions")[0];
  EXPECT_GT(p.at("log_start").get<long long>(), 0);
  EXPECT_EQ(p.at("from"), p.at("log_start"));
  EXPECT_EQ(p.at("events").get<long long>(), p.at("log_end").get<long long>() - p.at("log_start").get<long long>());
}

TEST(CliHelp, ListsEveryOptionWithItsDefault) {
  auto main_help = run_dedupctl({"--help"});
  EXPECT_EQ(main_help.exit_code, 0);
  for (const char* expected : {"-b,--bootstrap-server,--brokers", "-X", "--config", "-o,--format FMT=text", "--output",
                               "--fail-on LEVEL=error", "--timeout DURATION=10s", "-v,--verbose", "-q,--quiet",
                               "--no-progress", "--no-color", "scan"}) {
    EXPECT_NE(main_help.out.find(expected), std::string::npos) << expected;
  }
  auto scan_help = run_dedupctl({"scan", "--help"});
  EXPECT_EQ(scan_help.exit_code, 0);
  for (const char* expected :
       {"--topic", "--input", "--from SPEC=earliest", "--to SPEC=latest", "--group", "--skip-invalid",
        "--id SPEC[,...]=header:event_id,json:/event_id", "--type SPEC[,...]=header:type,json:/type", "--entity",
        "--semantic-key", "--window DURATION=5m", "--examples N=5"}) {
    EXPECT_NE(scan_help.out.find(expected), std::string::npos) << expected;
  }
}

TEST(CliConfig, FlagBeatsConfigFileWhichBeatsTheDefault) {
  TempDir dir;
  write_file(dir.file("dedupctl.toml"), "fail-on = \"none\"\n[scan]\nwindow = \"1s\"\n");
  // From the file: window 1s (no semantic duplicates 20 s apart), fail-on none (exit 0).
  auto from_file = run_dedupctl({"--config", dir.file("dedupctl.toml"), "scan", "--input", k_orders, "-o", "json"});
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  EXPECT_EQ(parse(from_file).at("summary").at("semantic_duplicates"), 0);
  // The same file through the environment; a flag still wins.
  auto from_env = run_dedupctl({"scan", "--input", k_orders, "-o", "json", "--fail-on", "error"}, "",
                               {{"DEDUPCTL_CONFIG", dir.file("dedupctl.toml")}});
  EXPECT_EQ(from_env.exit_code, 1);
  EXPECT_EQ(parse(from_env).at("summary").at("semantic_duplicates"), 0);
  auto missing = run_dedupctl({"scan", "--input", k_orders}, "", {{"DEDUPCTL_CONFIG", dir.file("nope.toml")}});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("DEDUPCTL_CONFIG"), std::string::npos);
}

// Every value says where it came from: a TTL from the config file is not labelled "(flag)".
TEST(CliConfig, EachValueSaysWhetherItCameFromAFlagTheConfigOrTheDefault) {
  TempDir dir;
  write_file(dir.file("dedupctl.toml"), "fail-on = \"none\"\n[scan]\nwindow = \"1s\"\n[audit]\nttl = \"2h\"\n"
                                        "retention = \"7d\"\nmax-lag = \"1m\"\n");
  auto scan = parse(run_dedupctl(
      {"--config", dir.file("dedupctl.toml"), "scan", "--input", k_orders, "-o", "json", "--id", "header:event_id"}));
  EXPECT_EQ(scan.at("settings_origin"), (Json{{"semantic window", "config"},
                                              {"fail on", "config"},
                                              {"id", "flag"},
                                              {"type", "default"},
                                              {"entity", "default"},
                                              {"semantic key", "default"}}));
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  std::vector<std::string> audit{"--config",  dir.file("dedupctl.toml"), "audit",       "--input", k_orders, "--store",
                                 redis.uri(), "--key-template",          "d:{event_id}"};
  auto json_args = audit;
  json_args.insert(json_args.end(), {"-o", "json"});
  auto from_config = parse(run_dedupctl(json_args));
  const auto& placement = from_config.at("placement");
  EXPECT_EQ(placement.at("ttl_source"), "flag") << "report-v1: declared, not estimated";
  EXPECT_EQ(placement.at("ttl_origin"), "config");
  EXPECT_EQ(placement.at("retention_origin"), "config");
  EXPECT_EQ(from_config.at("settings_origin").at("max lag"), "config");
  EXPECT_EQ(from_config.at("settings_origin").at("lease"), "default");
  auto text = run_dedupctl(audit);
  EXPECT_NE(text.out.find("ttl 2h (config)  retention 7d (config)"), std::string::npos) << text.out;
  json_args.insert(json_args.end(), {"--ttl", "3h"});
  auto flag = parse(run_dedupctl(json_args));
  EXPECT_EQ(flag.at("placement").at("ttl_ms"), 3 * 3600 * 1000);
  EXPECT_EQ(flag.at("placement").at("ttl_origin"), "flag");
  EXPECT_EQ(flag.at("placement").at("retention_origin"), "config");
}

// A config file that would change a verdict without a word is refused at its line: a typo, a
// syntax error, binary garbage, through --config or DEDUPCTL_CONFIG.
TEST(CliConfig, BadConfigFilesAreUsageErrorsNamingFileAndLine) {
  TempDir dir;
  write_file(dir.file("typo.toml"), "[audit]\ntll = \"1h\"\n");
  write_file(dir.file("syntax.toml"), "fail-on = \"none\n");
  write_file(dir.file("garbage.toml"), std::string("\x7f"
                                                   "ELF\x02\x01\x01\0\0\xff",
                                                   10));
  for (const auto& [file, says] : std::vector<std::pair<std::string, std::string>>{
           {"typo.toml", ":2:1: unknown key 'tll' in [audit]; did you mean 'ttl'?"},
           {"syntax.toml", ":1:"},
           {"garbage.toml", ": not valid TOML"}}) {
    auto flag = run_dedupctl({"--config", dir.file(file), "scan", "--input", k_orders});
    EXPECT_EQ(flag.exit_code, 2) << file;
    EXPECT_NE(flag.err.find(dir.file(file)), std::string::npos) << flag.err;
    EXPECT_NE(flag.err.find(says), std::string::npos) << flag.err;
    auto env = run_dedupctl({"scan", "--input", k_orders}, "", {{"DEDUPCTL_CONFIG", dir.file(file)}});
    EXPECT_EQ(env.exit_code, 2) << file;
  }
}
