// dedupctl replay end to end: the mock cluster and a real Kafka broker as source and sink, a real
// Redis and a real PostgreSQL as placements, produce failures injected in the mock, and runs killed
// with SIGKILL.
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <functional>
#include <future>
#include <random>
#include <sstream>
#include <thread>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

constexpr int k_events = 400;

// k_events events e-0 … in two partitions of "src", each id once.
std::string source_events() {
  std::string out;
  for (int i = 0; i < k_events; ++i) {
    out += kcat_line(OwnedEvent{.topic = "src",
                                .partition = i % 2,
                                .offset = i / 2,
                                .timestamp_ms = 1'795'000'000'000LL + i,
                                .headers = {{"event_id", fmt::format("e-{}", i)}, {"type", "PaymentCharged"}},
                                .key = fmt::format("k{}", i),
                                .payload = fmt::format(R"({{"n":{}}})", i)});
  }
  return out;
}

std::map<std::string, long long> summary_of(const std::string& json) {
  std::map<std::string, long long> out;
  Json doc = Json::parse(json); // alive through the loop: items() only views it
  for (const auto& [name, value] : doc.at("summary").items()) {
    out[name] = value.get<long long>();
  }
  return out;
}

// What a file sink holds: `events` lines, each id once, none torn. Counted by lines too: scan takes a
// line that repeats a record's topic, partition and offset for a repeat of a dump's and counts it
// apart (source.repeated_records), so a record published twice is not a log duplicate there.
void expect_file_sink_holds_each_once(const std::string& path, long long events, const std::string& context = "") {
  std::string text = read_file(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), events) << "lines in " << path << context;
  auto scan = run_dedupctl({"scan", "--input", path, "-o", "json", "-q"});
  ASSERT_EQ(scan.exit_code, 0) << scan.err;
  auto s = summary_of(scan.out);
  auto source = Json::parse(scan.out).at("source");
  EXPECT_EQ(s.at("events"), events) << "each id once, no more, no fewer" << context;
  EXPECT_EQ(s.at("log_duplicates"), 0) << context;
  EXPECT_EQ(source.value("repeated_records", 0), 0) << "a record published twice" << context;
  EXPECT_EQ(source.value("invalid_lines", 0), 0) << "no torn line" << context;
}

// The lines of a --decisions file, each parsed.
std::vector<Json> decisions_in(const std::string& path) {
  std::vector<Json> out;
  std::string text = read_file(path);
  for (std::size_t pos = 0, end; (end = text.find('\n', pos)) != std::string::npos; pos = end + 1) {
    out.push_back(Json::parse(text.substr(pos, end - pos)));
  }
  return out;
}

// Waits until a running replay's checkpoint shows a settled batch (a line of a partition of `topic`).
bool wait_for_progress(const std::string& checkpoint, const std::string& topic) {
  for (int i = 0; i < 300; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::error_code ec;
    if (std::filesystem::exists(checkpoint, ec) &&
        read_file(checkpoint).find("\n" + topic + "\t") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// Where a background run keeps what it prints: kept(".err"), kept(".out").
using Kept = std::function<std::string(const std::string&)>;

// dedupctl with `args`, running in the background: its report on a pipe with `report`; with `kept`,
// its stderr (and its report, when not piped) in the files kept(".err") and kept(".out").
std::unique_ptr<Process> start(const std::vector<std::string>& args, bool report = false, const Kept& kept = {}) {
  SpawnOptions options;
  options.silence = !report;
  options.pipe_stdout = report;
  if (kept) {
    options.stderr_file = kept(".err");
    options.stdout_file = kept(".out");
  }
  std::vector<std::string> argv{DEDUPCTL_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<Process>(argv, options);
}

// What a background run kept (start's `kept`), for a failure's message: a run that ended early says
// why only there (-q keeps its notes off stderr; the report's errors say it).
std::string kept_output(const Kept& kept) {
  std::error_code ec;
  std::string out;
  for (const char* which : {".err", ".out"}) {
    if (std::filesystem::exists(kept(which), ec)) {
      out += fmt::format("\n{}: {}", which, read_file(kept(which)));
    }
  }
  return out;
}

// A slow run (--batch 5 --max-rate 200) with `args` and its checkpoint, in the background, once a
// batch has settled. Batches of 5: the 32 a Redis run holds in flight are 160 of the 400 events,
// so an interrupt after the first checkpoint still comes mid-run. A run that settles nothing says
// why (what it printed, kept next to the checkpoint).
std::unique_ptr<Process> start_slow(const std::vector<std::string>& args, const std::string& checkpoint,
                                    const std::string& topic, bool report = false) {
  std::vector<std::string> slow = args;
  slow.insert(slow.end(), {"--batch", "5", "--max-rate", "200", "--checkpoint", checkpoint});
  auto kept = [checkpoint](const std::string& which) { return checkpoint + ".run" + which; };
  auto run = start(slow, report, kept);
  EXPECT_TRUE(wait_for_progress(checkpoint, topic))
      << "no batch settled; the run " << (run->running() ? "is still running" : "has ended") << kept_output(kept);
  return run;
}

// What a run started with its report on a pipe printed, to its end (30 s at most between lines).
std::string report_of(Process& run) {
  std::string out;
  while (auto line = run.read_line(std::chrono::seconds(30))) {
    out += *line + "\n";
  }
  return out;
}

// A slow run interrupted by `interrupt` (stop its store, signal it) once a batch has settled; then its
// exit code and its report, which says incomplete.
std::pair<int, Json> run_interrupted(const std::vector<std::string>& args, const std::string& checkpoint,
                                     const std::string& topic, const std::function<void(Process&)>& interrupt) {
  auto run = start_slow(args, checkpoint, topic, true);
  interrupt(*run);
  std::string out = report_of(*run);
  int code = run->wait();
  auto doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), false);
  return {code, doc};
}

} // namespace

// The source "src" (k_events events) and an empty "sink" on a cluster of `kind`: a mock of its own,
// or topics of their own on the real broker.
class ReplayBase : public ::testing::Test {
protected:
  void open(const std::string& kind) {
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    m_cluster = fresh_topic(kind, "src", 2, source_events());
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
    m_src = m_cluster.topic;
    m_sink = add_topic(m_cluster, "sink", 2);
  }

  std::vector<std::string> args(std::vector<std::string> extra, const std::string& timeout = "5s") const {
    std::vector<std::string> out{"replay", "-b", m_cluster.bootstrap, "--topic", m_src, "-o",
                                 "json",   "-q", "--timeout",         timeout};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }
  std::vector<std::string> via_redis(std::vector<std::string> extra, const std::string& timeout = "5s") const {
    std::vector<std::string> out{"--via", m_redis.uri(), "--key-template", "dedup:{event_id}", "--ttl", "1d"};
    out.insert(out.end(), extra.begin(), extra.end());
    return args(out, timeout);
  }
  std::string sink() const { return "kafka:" + m_sink; }
  CommandResult scan_topic(const std::string& topic) const {
    return run_dedupctl({"scan", "-b", m_cluster.bootstrap, "--topic", topic, "-o", "json", "-q"});
  }

  // What the sink topic holds: every id of the source exactly once?
  void expect_each_event_once_in_sink() {
    auto scan = scan_topic(m_sink);
    ASSERT_EQ(scan.exit_code, 0) << scan.err;
    auto s = summary_of(scan.out);
    EXPECT_EQ(s.at("events"), k_events) << "the sink holds each event once, no more, no fewer";
    EXPECT_EQ(s.at("log_duplicates"), 0);
    EXPECT_EQ(s.at("id_reuse"), 0);
    EXPECT_EQ(s.at("no_id"), 0);
  }

  RedisServer m_redis;
  TestTopic m_cluster;
  std::string m_src;
  std::string m_sink;
};

// On both brokers.
class Replay : public ReplayBase, public ::testing::WithParamInterface<std::string> {
protected:
  void SetUp() override { open(GetParam()); }
};

INSTANTIATE_TEST_SUITE_P(Brokers, Replay, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

// Faults only the mock can inject (produce errors) and records it can write at any offset.
class ReplayMock : public ReplayBase {
protected:
  void SetUp() override { open("mock"); }

  // A run into a sink whose every Produce the mock answers with `code` (a Kafka error code): exit 3,
  // the report incomplete and its error saying `said`; nothing replayed, and every claim that went
  // through released, each such event's decision "failed" with a reason saying `reason`. The
  // checkpoint in `dir` holds; the mock takes records again after. Batches of `batch` events.
  void expect_refused_and_released(int code, const std::string& said, const std::string& reason, const TempDir& dir,
                                   const std::string& batch = "50") {
    ASSERT_EQ(m_cluster.mock->command(fmt::format("error 0 {} 1000", code)), "ok");
    auto refused = run_dedupctl(via_redis({"--execute", "--sink", sink(), "--batch", batch, "--checkpoint",
                                           dir.file("cp"), "--decisions", dir.file("decisions")}));
    ASSERT_EQ(m_cluster.mock->command("clear 0"), "ok");
    EXPECT_EQ(refused.exit_code, 3) << refused.err;
    auto doc = Json::parse(refused.out);
    EXPECT_EQ(doc.at("complete"), false);
    std::string message = doc.at("error").at("message");
    EXPECT_NE(message.find(said), std::string::npos) << message;
    auto s = summary_of(refused.out);
    EXPECT_EQ(s.at("replayed"), 0);
    ASSERT_GT(s.at("failed"), 0) << "the claims that went through are counted as failed";
    EXPECT_EQ(s.at("released"), s.at("failed"));
    EXPECT_EQ(m_redis.command("DBSIZE"), ":0\r\n") << "no claim is left behind";
    long long failed_lines = 0;
    for (const auto& d : decisions_in(dir.file("decisions"))) {
      ASSERT_EQ(d.at("decision"), "failed") << d.dump();
      EXPECT_NE(d.at("reason").get<std::string>().find(reason), std::string::npos) << d.dump();
      ++failed_lines;
    }
    EXPECT_EQ(failed_lines, s.at("failed"));
  }
};

TEST_P(Replay, APlanSaysPerPartitionWhatWouldHappenAndChangesNothing) {
  m_redis.command("SET dedup:e-4 done");
  m_redis.command("SET dedup:e-5 processing:someone");
  auto result = run_dedupctl(via_redis({"--sink", sink()}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("summary").at("would_replay"), k_events - 2);
  EXPECT_EQ(doc.at("summary").at("would_skip"), 2);
  const auto& replay = doc.at("replay");
  EXPECT_EQ(replay.at("mode"), "plan");
  ASSERT_EQ(replay.at("partitions").size(), 2u);
  EXPECT_EQ(replay.at("partitions")[0].at("would_publish"), k_events / 2 - 1); // e-4 is in partition 0
  EXPECT_EQ(replay.at("partitions")[0].at("would_skip"), 1);
  EXPECT_EQ(replay.at("partitions")[0].at("to"), k_events / 2);
  EXPECT_EQ(m_redis.command("DBSIZE"), ":2\r\n") << "a plan claims nothing";
  auto published = scan_topic(m_sink);
  EXPECT_EQ(summary_of(published.out).at("events"), 0) << "a plan publishes nothing";
  // The text plan has the per-partition table.
  auto text =
      run_dedupctl({"replay", "-b", m_cluster.bootstrap, "--topic", m_src, "--via", m_redis.uri(), "--sink", sink()});
  EXPECT_NE(text.out.find("REPLAY PLAN"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("WOULD-PUBLISH"), std::string::npos) << text.out;
}

TEST_P(Replay, ReplayingARangeTwicePublishesEveryEventOnce) {
  TempDir dir;
  auto first = run_dedupctl(via_redis({"--execute", "--sink", sink(), "--decisions", dir.file("d.ndjson")}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(summary_of(first.out).at("replayed"), k_events);
  auto second = run_dedupctl(via_redis({"--execute", "--sink", sink(), "--decisions", dir.file("d.ndjson")}));
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(summary_of(second.out).at("replayed"), 0);
  EXPECT_EQ(summary_of(second.out).at("skipped_duplicate"), k_events);
  expect_each_event_once_in_sink();
  EXPECT_EQ(m_redis.command("GET dedup:e-7"), "$4\r\ndone\r\n");
  // Every decision of both runs is logged, one JSON object a line.
  std::string log = read_file(dir.file("d.ndjson"));
  int lines = 0, skipped = 0;
  for (std::size_t pos = 0, end; (end = log.find('\n', pos)) != std::string::npos; pos = end + 1) {
    auto d = Json::parse(log.substr(pos, end - pos));
    ++lines;
    skipped += d.at("decision") == "skipped-duplicate" ? 1 : 0;
  }
  EXPECT_EQ(lines, 2 * k_events);
  EXPECT_EQ(skipped, k_events);
}

// The sink's producer lingers (linger.ms) to fill its batches, but never while the run waits for
// deliveries: in small chunks, 32 of them in flight fill the window long before a linger of 90 s ends,
// and the last chunks wait for theirs. Were the lingering records not sent at once then, the run would
// take three lingers (270 s) and be killed at 120 s.
TEST_P(Replay, RecordsLingeringInTheProducerGoOutWhenTheRunWaitsForThem) {
  // A linger must stay under librdkafka's message.timeout.ms (--timeout).
  auto run = run_dedupctl(via_redis({"--execute", "--sink", sink(), "--batch", "5", "-X", "linger.ms=90000"}, "100s"));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(summary_of(run.out).at("replayed"), k_events);
  expect_each_event_once_in_sink();
}

// librdkafka refuses a linger that is not under message.timeout.ms (--timeout): a short --timeout
// shortens the sink's own linger rather than failing the run on a setting the user never gave.
TEST_P(Replay, AShortTimeoutShortensTheSinksLinger) {
  auto run = run_dedupctl(via_redis({"--execute", "--sink", sink()}, "100ms"));
  EXPECT_EQ(run.err.find("linger"), std::string::npos) << run.err;
  if (run.exit_code == 0) {
    EXPECT_EQ(summary_of(run.out).at("replayed"), k_events);
  }
}

TEST_F(ReplayMock, FailedDeliveriesAreReleasedAndPublishedOnTheRerunNoneTwice) {
  TempDir dir;
  // The next three Produce requests fail with a permanent error (MSG_SIZE_TOO_LARGE).
  ASSERT_EQ(m_cluster.mock->command("error 0 10 3"), "ok");
  auto first = run_dedupctl(via_redis({"--execute", "--sink", sink(), "--batch", "50", "--checkpoint", dir.file("cp"),
                                       "--decisions", dir.file("decisions")}));
  EXPECT_EQ(first.exit_code, 1) << first.err;
  auto s = summary_of(first.out);
  // Each failed event's decision says why, whole (the reason outlives its record).
  long long failed_lines = 0;
  for (const auto& d : decisions_in(dir.file("decisions"))) {
    if (d.at("decision") == "failed") {
      ++failed_lines;
      std::string reason = d.at("reason");
      EXPECT_TRUE(reason.starts_with("delivery failed (") && reason.ends_with("); claim released")) << reason;
    }
  }
  EXPECT_EQ(failed_lines, s.at("failed"));
  ASSERT_GT(s.at("failed"), 0);
  EXPECT_EQ(s.at("released"), s.at("failed"));
  EXPECT_EQ(s.at("replayed") + s.at("failed"), k_events);
  EXPECT_EQ(m_redis.command("DBSIZE"), fmt::format(":{}\r\n", s.at("replayed"))) << "failed claims are deleted";
  ASSERT_EQ(m_cluster.mock->command("clear 0"), "ok"); // the broker is healthy again
  auto rerun =
      run_dedupctl(via_redis({"--execute", "--sink", sink(), "--batch", "50", "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(summary_of(rerun.out).at("replayed"), s.at("failed"));
  expect_each_event_once_in_sink();
}

TEST_P(Replay, KilledMidRunAndRerunWithTheCheckpointEachEventIsInTheSinkOnce) {
  TempDir dir;
  auto run = start_slow(via_redis({"--execute", "--sink", sink()}), dir.file("cp"), m_src);
  run->signal(SIGKILL);
  EXPECT_EQ(run->wait(), 128 + SIGKILL);
  auto partial = scan_topic(m_sink);
  long long published = summary_of(partial.out).at("events");
  EXPECT_GT(published, 0);
  EXPECT_LT(published, k_events) << "the kill came mid-run";
  auto rerun =
      run_dedupctl(via_redis({"--execute", "--sink", sink(), "--batch", "20", "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  auto resumed = Json::parse(rerun.out);
  EXPECT_EQ(resumed.at("replay").at("resumed"), true);
  long long read = 0;
  for (const auto& p : resumed.at("source").at("partitions")) {
    read += p.at("events").get<long long>();
  }
  EXPECT_LT(read, k_events) << "the rerun reads from the checkpoint, not from the range's start";
  expect_each_event_once_in_sink();
}

TEST_P(Replay, SigintFinishesWhatIsInFlightWritesTheCheckpointAndExits130) {
  TempDir dir;
  auto [code, doc] = run_interrupted(via_redis({"--execute", "--sink", sink()}), dir.file("cp"), m_src,
                                     [](Process& run) { run.signal(SIGINT); });
  EXPECT_EQ(code, 130);
  // Everything published was settled: no claim of this run is left in progress.
  long long replayed = doc.at("summary").at("replayed");
  EXPECT_GT(replayed, 0);
  EXPECT_EQ(m_redis.command("DBSIZE"), fmt::format(":{}\r\n", replayed));
  auto rerun = run_dedupctl(via_redis({"--execute", "--sink", sink(), "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(Json::parse(rerun.out).at("replay").at("found_in_sink"), 0) << "nothing was left unsettled";
  expect_each_event_once_in_sink();
}

// Redis dies mid-run (its keyspace with it): the run ends incomplete with exit 3 and the checkpoint of
// its last settled batch; a rerun through another (empty) Redis resumes there and reads back what was
// published since, so the sink still holds each event once.
TEST_P(Replay, RedisKilledMidRunExits3AndTheRerunThroughAnotherRedisPublishesEachEventOnce) {
  TempDir dir;
  auto [code, doc] = run_interrupted(via_redis({"--execute", "--sink", sink()}), dir.file("cp"), m_src,
                                     [&](Process&) { m_redis.kill(); });
  EXPECT_EQ(code, 3);
  EXPECT_LT(doc.at("summary").at("replayed").get<long long>(), k_events);
  RedisServer other;
  ASSERT_TRUE(other.available()) << other.why_unavailable();
  auto rerun = run_dedupctl(args({"--via", other.uri(), "--key-template", "dedup:{event_id}", "--ttl", "1d",
                                  "--execute", "--sink", sink(), "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_each_event_once_in_sink();
}

TEST_P(Replay, SafetyRefusalsAreUsageErrorsBeforeAnythingIsContacted) {
  auto same = run_dedupctl(via_redis({"--execute", "--sink", "kafka:" + m_src}));
  EXPECT_EQ(same.exit_code, 2);
  EXPECT_NE(same.err.find("--allow-same-topic"), std::string::npos) << same.err;
  auto no_via = run_dedupctl(args({"--execute", "--sink", sink()}));
  EXPECT_EQ(no_via.exit_code, 2);
  EXPECT_NE(no_via.err.find("--no-dedup"), std::string::npos) << no_via.err;
  auto both = run_dedupctl(via_redis({"--execute", "--dry-run", "--sink", sink()}));
  EXPECT_EQ(both.exit_code, 2);
  EXPECT_NE(both.err.find("mutually exclusive"), std::string::npos) << both.err;
  auto no_ttl = run_dedupctl(args({"--via", m_redis.uri(), "--execute", "--sink", sink()}));
  EXPECT_EQ(no_ttl.exit_code, 2);
  EXPECT_NE(no_ttl.err.find("--ttl"), std::string::npos) << no_ttl.err;
  EXPECT_EQ(m_redis.command("DBSIZE"), ":0\r\n");
  // --no-dedup said explicitly publishes everything, with a warning.
  auto no_dedup = run_dedupctl(args({"--execute", "--no-dedup", "--sink", sink(), "--fail-on", "error"}));
  ASSERT_EQ(no_dedup.exit_code, 0) << no_dedup.err;
  EXPECT_NE(no_dedup.out.find("replay-without-dedup"), std::string::npos);
  expect_each_event_once_in_sink();
}

TEST_P(Replay, ContradictoryFlagsAndForeignCheckpointsAreUsageErrors) {
  TempDir dir;
  auto expect_usage = [](const CommandResult& result, const std::string& says) {
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
  };
  expect_usage(run_dedupctl(args({"--via", "file:" + dir.file("keys.tsv"), "--sink", sink()})), "cannot claim events");
  expect_usage(run_dedupctl(via_redis({"--no-dedup", "--sink", sink()})), "contradict each other");
  expect_usage(run_dedupctl(args({"--sink", sink()})), "needs --via");
  expect_usage(run_dedupctl(via_redis({"--execute"})), "--execute needs --sink");
  expect_usage(run_dedupctl(via_redis({"--sink", "s3:bucket"})), "expected kafka:TOPIC or file:PATH");
  expect_usage(run_dedupctl(via_redis({"--sink", sink(), "--batch", "0"})), "--batch must be at least 1");
  write_file(dir.file("bad.ckpt"), "{\"offsets\": {}}\n");
  expect_usage(run_dedupctl(via_redis({"--execute", "--sink", sink(), "--checkpoint", dir.file("bad.ckpt")})),
               "not a dedupctl replay checkpoint");
  // A checkpoint written for a file sink is refused for a Kafka one.
  auto first = run_dedupctl(
      via_redis({"--execute", "--sink", "file:" + dir.file("out.ndjson"), "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  expect_usage(run_dedupctl(via_redis({"--execute", "--sink", sink(), "--checkpoint", dir.file("cp")})),
               "belongs to a replay into file:");
}

// A token that rotates (Azure Entra, ElastiCache IAM): the password is changed and every connection
// of the run killed mid-run. With a password command the run connects again with the new one and
// finishes, each event in the sink once and a record each.
TEST_F(ReplayMock, APasswordRotatedMidRunIsTakenAgainFromTheCommandAndTheRunFinishesExactlyOnce) {
  ASSERT_EQ(m_redis.command("ACL SETUSER app on >Old-t0ken ~* +@all"), "+OK\r\n");
  TempDir dir;
  write_file(dir.file("token"), "Old-t0ken\n");
  std::string command = fmt::format("echo run >> {}; cat {}", dir.file("runs"), dir.file("token"));
  auto with_user = via_redis({"--execute", "--sink", sink(), "--redis-password-command", command});
  std::replace(with_user.begin(), with_user.end(), m_redis.uri(),
               "redis://app:@127.0.0.1:" + std::to_string(m_redis.port()));
  auto run = start_slow(with_user, dir.file("cp"), m_src, true);
  ASSERT_EQ(m_redis.command("ACL SETUSER app resetpass >New-t0ken"), "+OK\r\n");
  write_file(dir.file("token"), "New-t0ken\n");
  EXPECT_NE(m_redis.command("CLIENT KILL USER app"), ":0\r\n") << "the run's connections were killed";
  std::string out = report_of(*run);
  ASSERT_EQ(run->wait(), 0) << out;
  auto doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), true);
  EXPECT_EQ(doc.at("summary").at("replayed"), k_events);
  EXPECT_EQ(m_redis.command("DBSIZE"), fmt::format(":{}\r\n", k_events));
  expect_each_event_once_in_sink();
  std::string runs = read_file(dir.file("runs"));
  EXPECT_GE(std::count(runs.begin(), runs.end(), '\n'), 3) << "a connection for claims, one for settling, and again";
  EXPECT_EQ(out.find("t0ken"), std::string::npos);
}

// The one server restarted (empty) between two batches: connecting again works, but it is not the
// keyspace the run began with, so the run ends incomplete with its checkpoint, saying so.
TEST_F(ReplayMock, AServerThatRestartedMidRunEndsTheRunSayingSo) {
  TempDir dir;
  auto run = start_slow(via_redis({"--execute", "--sink", sink()}), dir.file("cp"), m_src, true);
  ASSERT_TRUE(m_redis.restart());
  std::string out = report_of(*run);
  EXPECT_EQ(run->wait(), 3) << out;
  auto doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("restarted meanwhile (its run_id changed)"),
            std::string::npos)
      << doc.dump();
}

TEST_F(ReplayMock, TheMemoryPlacementIntoAFileSinkSkipsRepeatsWithinTheRun) {
  TempDir dir;
  // e-0 again, as a producer retry would write it.
  m_cluster.mock->seed(m_src,
                       R"({"topic":"src","partition":0,"offset":0,"ts":1795000009999,"headers":["event_id","e-0",)"
                       R"("type","PaymentCharged"],"key":"k0","payload":"{\"n\":0}"})"
                       "\n");
  auto result = run_dedupctl(args({"--via", "memory:", "--execute", "--sink", "file:" + dir.file("out.ndjson")}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto s = summary_of(result.out);
  EXPECT_EQ(s.at("replayed"), k_events);
  EXPECT_EQ(s.at("skipped_duplicate"), 1);
  EXPECT_NE(result.out.find("memory-placement"), std::string::npos) << "the plan says what memory: may miss";
  expect_file_sink_holds_each_once(dir.file("out.ndjson"), k_events);
}

// An event without an id is not published, and its decision says why, whole.
TEST_F(ReplayMock, AnEventWithoutAnIdIsLoggedWithItsReason) {
  TempDir dir;
  m_cluster.mock->seed(m_src, R"({"topic":"src","partition":1,"offset":0,"ts":1795000009999,"headers":["type","X"],)"
                              R"("key":"k","payload":"{}"})"
                              "\n");
  auto result = run_dedupctl(args({"--via", "memory:", "--execute", "--sink", "file:" + dir.file("out.ndjson"),
                                   "--decisions", dir.file("decisions")}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(summary_of(result.out).at("no_id"), 1);
  int no_id = 0;
  for (const auto& d : decisions_in(dir.file("decisions"))) {
    if (d.at("decision") == "no-id") {
      ++no_id;
      EXPECT_EQ(d.at("reason"), "no header event_id, payload has no /event_id") << d.dump();
    }
  }
  EXPECT_EQ(no_id, 1);
}

// A record larger than the producer takes (message.max.bytes) fails alone, as a record the broker
// refused: its claim released, its decision saying why and what raises the limit; the run goes on
// and ends with exit 1 (replay-failed), the rest published.
TEST_F(ReplayMock, ARecordLargerThanTheProducerTakesFailsAloneAndTheRunGoesOn) {
  TempDir dir;
  for (int p = 0; p < 2; ++p) {
    m_cluster.mock->seed(m_src, fmt::format(R"({{"topic":"src","partition":{0},"offset":{1},"ts":1795000009999,)"
                                            R"("headers":["event_id","big-{0}"],"key":"k","payload":"{2}"}})"
                                            "\n",
                                            p, k_events / 2, std::string(3000, 'x')));
  }
  auto result = run_dedupctl(
      via_redis({"--execute", "--sink", sink(), "--decisions", dir.file("decisions"), "-X", "message.max.bytes=2000"}));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto s = summary_of(result.out);
  EXPECT_EQ(s.at("failed"), 2);
  EXPECT_EQ(s.at("released"), 2);
  EXPECT_EQ(s.at("replayed"), k_events);
  EXPECT_EQ(m_redis.command("DBSIZE"), fmt::format(":{}\r\n", k_events)) << "the large records' claims are released";
  int failed = 0;
  for (const auto& d : decisions_in(dir.file("decisions"))) {
    if (d.at("decision") == "failed") {
      ++failed;
      EXPECT_TRUE(d.at("event_id").get<std::string>().starts_with("big-")) << d.dump();
      EXPECT_NE(d.at("reason").get<std::string>().find("Message size too large"), std::string::npos) << d.dump();
      EXPECT_NE(d.at("reason").get<std::string>().find("-X message.max.bytes"), std::string::npos) << d.dump();
    }
  }
  EXPECT_EQ(failed, 2);
  expect_each_event_once_in_sink();
}

// The inbox placement: one transaction per batch.
class ReplayInbox : public Replay {
protected:
  void SetUp() override {
    Replay::SetUp();
    if (HasFatalFailure() || IsSkipped()) {
      return;
    }
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    ASSERT_EQ(m_pg.psql("CREATE TABLE processed_events (event_id text PRIMARY KEY, consumer_name text, processed_at "
                        "timestamptz NOT NULL, status text)")
                  .exit_code,
              0);
  }
  std::vector<std::string> via_inbox(std::vector<std::string> extra) const {
    std::vector<std::string> out{"--via", m_pg.conninfo(), "--consumer", "billing", "--inbox-status-column", "status"};
    out.insert(out.end(), extra.begin(), extra.end());
    return args(out);
  }
  long long rows() const { return std::stoll(m_pg.psql("SELECT count(*) FROM processed_events").out); }

  PostgresServer m_pg;
};

INSTANTIATE_TEST_SUITE_P(Brokers, ReplayInbox, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(ReplayInbox, TwiceThroughTheInboxPublishesOnceAndWritesARowAnEvent) {
  auto first = run_dedupctl(via_inbox({"--execute", "--sink", sink()}));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(summary_of(first.out).at("replayed"), k_events);
  auto second = run_dedupctl(via_inbox({"--execute", "--sink", sink()}));
  EXPECT_EQ(summary_of(second.out).at("skipped_duplicate"), k_events);
  EXPECT_EQ(rows(), k_events);
  EXPECT_EQ(m_pg.psql("SELECT consumer_name, status FROM processed_events WHERE event_id = 'e-3'").out,
            "billing|done\n");
  expect_each_event_once_in_sink();
}

TEST_P(ReplayInbox, AnInboxWithoutAUniqueConstraintCannotBeClaimedThrough) {
  ASSERT_EQ(m_pg.psql("ALTER TABLE processed_events DROP CONSTRAINT processed_events_pkey").exit_code, 0);
  auto result = run_dedupctl(via_inbox({"--execute", "--sink", sink()}));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("processed_events has no primary key or unique index"), std::string::npos) << result.err;
  EXPECT_EQ(rows(), 0);
}

TEST_P(ReplayInbox, KilledMidRunAndRerunWithTheCheckpointEachEventIsInTheSinkOnce) {
  TempDir dir;
  auto run = start_slow(via_inbox({"--execute", "--sink", sink()}), dir.file("cp"), m_src);
  run->signal(SIGKILL);
  run->wait();
  EXPECT_LT(rows(), k_events);
  auto rerun = run_dedupctl(via_inbox({"--execute", "--sink", sink(), "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_each_event_once_in_sink();
  EXPECT_EQ(rows(), k_events);
}

TEST_P(ReplayInbox, PostgresStoppedMidBatchRollsTheBatchBackAndTheCheckpointHolds) {
  TempDir dir;
  auto [code, doc] = run_interrupted(via_inbox({"--execute", "--sink", sink()}), dir.file("cp"), m_src,
                                     [&](Process&) { m_pg.stop(); });
  EXPECT_EQ(code, 3);
  ASSERT_TRUE(m_pg.start());
  // Every event below the checkpoint has its row; no row lies at or beyond it (the open batch rolled back).
  std::string checkpoint = read_file(dir.file("cp"));
  long long below = 0;
  for (int p = 0; p < 2; ++p) {
    std::string line = fmt::format("\n{}\t{}\t", m_src, p);
    auto at = checkpoint.find(line);
    // A partition no settled batch has reached yet is not in the checkpoint: it starts at 0.
    below += at == std::string::npos ? 0 : std::stoll(checkpoint.substr(at + line.size()));
  }
  // Unless the server died between committing the next batch and answering its COMMIT: then that
  // batch's rows are there too, and the run says it cannot know.
  if (rows() != below) {
    EXPECT_EQ(rows(), below + 5) << checkpoint;
    EXPECT_NE(doc.at("error").at("message").get<std::string>().find("whether it committed is unknown"),
              std::string::npos)
        << doc.dump();
  }
  auto rerun = run_dedupctl(via_inbox({"--execute", "--sink", sink(), "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_each_event_once_in_sink();
  EXPECT_EQ(rows(), k_events);
}

// A COMMIT the server has made durable but never answered (here it waits for a synchronous standby
// that does not exist when the server is killed) is in doubt: the run says so and exits 3, its
// checkpoint stays before that batch, and the rerun finds the batch's rows and publishes each event
// once.
TEST_P(ReplayInbox, ACommitLeftInDoubtIsSaidAndTheRerunAppliesNothingTwice) {
  ASSERT_EQ(m_pg.psql("ALTER SYSTEM SET synchronous_standby_names = 'nobody'").exit_code, 0);
  ASSERT_EQ(m_pg.psql("SELECT pg_reload_conf()").exit_code, 0);
  TempDir dir;
  auto run = start(via_inbox({"--execute", "--sink", sink(), "--batch", "5", "--checkpoint", dir.file("cp")}), true);
  bool waiting = false;
  for (int i = 0; i < 500 && !waiting; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    waiting = m_pg.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'").out == "1\n";
  }
  ASSERT_TRUE(waiting) << "the first batch's COMMIT never waited for the standby";
  m_pg.stop();
  std::string out = report_of(*run);
  EXPECT_EQ(run->wait(), 3);
  Json doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("whether it committed is unknown"), std::string::npos)
      << doc.dump();
  ASSERT_TRUE(m_pg.start());
  ASSERT_EQ(m_pg.psql("ALTER SYSTEM RESET synchronous_standby_names").exit_code, 0);
  ASSERT_EQ(m_pg.psql("SELECT pg_reload_conf()").exit_code, 0);
  EXPECT_EQ(rows(), 5) << "the batch committed locally before the server died";
  EXPECT_EQ(read_file(dir.file("cp")).find(fmt::format("\n{}\t", m_src)), std::string::npos)
      << "no batch settled as far as the run knows";
  auto rerun = run_dedupctl(via_inbox({"--execute", "--sink", sink(), "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  expect_each_event_once_in_sink();
  EXPECT_EQ(rows(), k_events);
}

// Every type an id can live in, for the claim too: the ids the inbox already holds are skipped,
// the one it lacks is published once and its row holds the whole id (char(n) is not char(1)), and
// one the column is too short for is id-unfit, never cut to fit.
TEST_P(ReplayInbox, EveryIdColumnTypeClaimsTheWholeIdInItsOwnType) {
  const std::vector<std::string> uuids{"0a0b0c0d-0000-4000-8000-000000000001", "0a0b0c0d-0000-4000-8000-000000000002",
                                       "0a0b0c0d-0000-4000-8000-000000000003"};
  const std::vector<std::pair<std::string, std::vector<std::string>>> columns{
      {"text", uuids},
      {"varchar(36)", {uuids[0], uuids[1], uuids[2], uuids[2] + "-and-more"}},
      {"char(36)", {uuids[0], uuids[1], uuids[2], uuids[2] + "-and-more"}},
      {"char(5)", {"e-1", "e-22", "e-333", "e-4444"}},
      {"uuid", uuids},
      {"bigint", {"101", "102", "103"}},
  };
  for (std::size_t c = 0; c < columns.size(); ++c) {
    const auto& [type, ids] = columns[c];
    SCOPED_TRACE(type);
    std::string log;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      log += fmt::format(R"({{"topic":"t","partition":0,"offset":{},"ts":{},"headers":["event_id","{}"],)"
                         R"("key":"k","payload":"{{}}"}})"
                         "\n",
                         i, 1'795'000'000'000LL + i, ids[i]);
    }
    std::string topic = add_topic(m_cluster, fmt::format("typed-{}", c), 1, log);
    ASSERT_EQ(m_pg.psql(fmt::format("DROP TABLE processed_events; CREATE TABLE processed_events (event_id {} PRIMARY "
                                    "KEY, consumer_name text, processed_at timestamptz NOT NULL, status text); "
                                    "INSERT INTO processed_events VALUES ('{}', 'billing', now(), 'done'), "
                                    "('{}', 'billing', now(), 'done')",
                                    type, ids[0], ids[1]))
                  .exit_code,
              0);
    TempDir dir;
    std::string published = dir.file("published.ndjson");
    auto run = run_dedupctl({"replay", "-b", m_cluster.bootstrap, "--topic", topic, "-o", "json", "-q", "--via",
                             m_pg.conninfo(), "--consumer", "billing", "--inbox-status-column", "status", "--execute",
                             "--sink", "file:" + published});
    ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
    auto s = summary_of(run.out);
    EXPECT_EQ(s.at("replayed"), 1);
    EXPECT_EQ(s.at("skipped_duplicate"), 2);
    EXPECT_EQ(s.at("id_unfit"), static_cast<long long>(ids.size()) - 3);
    std::string sunk = read_file(published);
    EXPECT_EQ(std::count(sunk.begin(), sunk.end(), '\n'), 1) << sunk;
    EXPECT_NE(sunk.find(ids[2]), std::string::npos) << sunk;
    EXPECT_EQ(m_pg.psql("SELECT event_id::text FROM processed_events ORDER BY event_id::text").out,
              ids[0] + "\n" + ids[1] + "\n" + ids[2] + "\n");
  }
}

// An inbox keyed by uuid cannot hold an id that is not one, and neither could the consumer: such an
// event is not published, is counted and logged as id-unfit, and is reported with an example; the
// rest of the batch goes through. The plan says the same.
TEST_P(ReplayInbox, IdsAUuidInboxCannotHoldAreNotPublishedAndSaidSo) {
  ASSERT_EQ(m_pg.psql("DROP TABLE processed_events").exit_code, 0);
  ASSERT_EQ(m_pg.psql("CREATE TABLE processed_events (event_id uuid PRIMARY KEY, consumer_name text, processed_at "
                      "timestamptz NOT NULL, status text)")
                .exit_code,
            0);
  std::string log;
  const char* ids[] = {"6f1c2a9e-3b4d-4e5f-8a7b-1c2d3e4f5a6b", "order-7", "6F1C2A9E-3B4D-4E5F-8A7B-1C2D3E4F5A6C"};
  for (int i = 0; i < 3; ++i) {
    log += fmt::format(R"({{"topic":"mixed","partition":0,"offset":{},"ts":{},"headers":["event_id","{}"],)"
                       R"("key":"k","payload":"{{}}"}})"
                       "\n",
                       i, 1'795'000'000'000LL + i, ids[i]);
  }
  std::string topic = add_topic(m_cluster, "mixed", 1, log);
  TempDir dir;
  auto mixed = [&](std::vector<std::string> extra) {
    std::vector<std::string> out{"replay", "-b",    m_cluster.bootstrap, "--topic",    topic,    "-o", "json",
                                 "-q",     "--via", m_pg.conninfo(),     "--consumer", "billing"};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  };
  auto plan = run_dedupctl(mixed({}));
  ASSERT_EQ(plan.exit_code, 0) << plan.err << plan.out;
  EXPECT_EQ(summary_of(plan.out).at("would_replay"), 2);
  EXPECT_EQ(summary_of(plan.out).at("id_unfit"), 1);
  auto run = run_dedupctl(mixed({"--execute", "--sink", sink(), "--decisions", dir.file("decisions")}));
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  auto s = summary_of(run.out);
  EXPECT_EQ(s.at("replayed"), 2);
  EXPECT_EQ(s.at("id_unfit"), 1);
  auto doc = Json::parse(run.out);
  bool reported = false;
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == "replay-id-unfit") {
      reported = true;
      EXPECT_EQ(f.at("severity"), "warning");
      EXPECT_EQ(f.at("count"), 1);
      EXPECT_EQ(f.at("examples").at(0).at("event_id"), "order-7");
      EXPECT_NE(f.at("title").get<std::string>().find("uuid"), std::string::npos) << f.dump();
    }
  }
  EXPECT_TRUE(reported) << run.out;
  EXPECT_NE(read_file(dir.file("decisions"))
                .find(fmt::format(R"("event_id":"order-7","topic":"{}","partition":0,"offset":1,)"
                                  R"("decision":"id-unfit")",
                                  topic)),
            std::string::npos)
      << read_file(dir.file("decisions"));
  EXPECT_EQ(rows(), 2);
}

// `command` run at --max-rate 1000 in the background, SIGKILLed after `after_ms`, then run again to
// its end (what the killed run printed is kept in `dir`); the rerun's result.
static CommandResult kill_then_rerun(const std::vector<std::string>& command, int after_ms, const TempDir& dir) {
  auto slow = command;
  slow.insert(slow.end(), {"--max-rate", "1000"});
  auto kept = [&dir](const std::string& which) { return dir.file("killed" + which); };
  auto run = start(slow, false, kept);
  std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
  run->signal(SIGKILL);
  int killed = run->wait();
  EXPECT_TRUE(killed == 128 + SIGKILL || killed == 0) << killed << kept_output(kept);
  return run_dedupctl(command);
}

// The kill loop: a run SIGKILLed at 20 points spread over its whole life (before its first
// checkpoint, mid-claim, mid-publish, mid-settle, after it ended), then the same command again
// until it completes: every id is in the sink exactly once, for a file sink and a Kafka sink. Each
// point gets its own keys, sink and checkpoint. Bounded: 400 events at 1000 a second.
TEST_P(Replay, KilledAtAnyPointTheRerunLeavesEveryIdInTheSinkExactlyOnce) {
  constexpr int k_points = 20;
  constexpr int k_run_ms = 500; // 400 events at --max-rate 1000, and the start
  for (std::string kind : {"file", "kafka"}) {
    for (int point = 0; point < k_points; ++point) {
      SCOPED_TRACE(fmt::format("{} sink, killed after {} ms", kind, point * k_run_ms / k_points));
      TempDir dir;
      std::string topic = kind == "kafka" ? add_topic(m_cluster, fmt::format("sink-{}", point), 2) : "";
      std::string sink = kind == "file" ? "file:" + dir.file("out.ndjson") : "kafka:" + topic;
      std::vector<std::string> command{"--via",
                                       m_redis.uri(),
                                       "--key-template",
                                       fmt::format("dedup:{}:{}:{{event_id}}", kind, point),
                                       "--ttl",
                                       "1d",
                                       "--execute",
                                       "--sink",
                                       sink,
                                       "--batch",
                                       "20",
                                       "--checkpoint",
                                       dir.file("cp")};
      auto rerun = kill_then_rerun(args(command), point * k_run_ms / k_points, dir);
      ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
      if (kind == "file") {
        expect_file_sink_holds_each_once(dir.file("out.ndjson"), k_events);
        continue;
      }
      auto scan = scan_topic(topic);
      ASSERT_EQ(scan.exit_code, 0) << scan.err;
      auto s = summary_of(scan.out);
      EXPECT_EQ(s.at("events"), k_events) << "each id once, no more, no fewer";
      EXPECT_EQ(s.at("log_duplicates"), 0);
    }
  }
}

// The file sink's kill loop at the sizes an operator replays, from a topic of four partitions. A
// resumed run once moved the read-back position past lines an interrupted run had published for
// events it had not checkpointed yet (another partition's, fetched later): killed then, its rerun
// published them again (106,093 lines for 100,000 ids on a loaded machine). The window opens at the
// resumed run's first checkpoint and stays open while it publishes the partition fetched first:
// --max-rate 10000 holds it open for a few hundred ms, and 20 kills between 100 and 500 ms after each
// start (so inside the file writes too, not only between batches) found the fault in 4 runs of 4
// before the fix. Each kill is resumed from the checkpoint; the last run goes to the end unpaced.
// Every id is in the file exactly once, no line torn. The real broker: the mock evicts past 5 MiB a
// partition.
TEST(ReplayFileSinkKills, KilledAtRandomPointsAtTwoSizesEveryIdIsInTheFileOnce) {
  KafkaBroker& broker = shared_kafka_broker();
  DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> when(100, 500);
  for (int events : {20'000, 100'000}) {
    SCOPED_TRACE(fmt::format("{} events", events));
    static int topics = 0;
    std::string topic = fmt::format("kills-{}-{}", events, ++topics);
    create_topic(broker.bootstrap(), topic, 4, {{"retention.ms", "-1"}});
    auto seeded = run_command({DEDUPCTL_SEEDER, "-b", broker.bootstrap(), "--topic", topic, "--generate",
                               std::to_string(events), "--partitions", "4"});
    ASSERT_EQ(seeded.exit_code, 0) << seeded.err;
    TempDir dir;
    std::string out = dir.file("out.ndjson");
    std::vector<std::string> command{"replay",  "-b",   broker.bootstrap(), "--topic",   topic,    "-q",
                                     "-o",      "json", "--no-dedup",       "--execute", "--sink", "file:" + out,
                                     "--batch", "500",  "--checkpoint",     out + ".cp"};
    std::vector<int> kills;
    for (int kill = 0; kill < 20; ++kill) {
      auto paced = command;
      paced.insert(paced.end(), {"--max-rate", "10000"});
      auto run = start(paced);
      kills.push_back(when(random));
      std::this_thread::sleep_for(std::chrono::milliseconds(kills.back()));
      run->signal(SIGKILL);
      int code = run->wait();
      EXPECT_TRUE(code == 128 + SIGKILL || code == 0) << code;
    }
    auto last = run_dedupctl(command);
    ASSERT_EQ(last.exit_code, 0) << last.err;
    expect_file_sink_holds_each_once(out, events, fmt::format("; killed after (ms) {}", fmt::join(kills, ", ")));
  }
}

// The same kill loop for replay --repair-lost, where nine events in ten are lost (a record "done", no
// effect key; every tenth was charged, which proves the effects lookup can match): a run killed between
// releasing a batch's records and publishing it has written their keys down (CHECKPOINT.released), so
// the rerun still publishes them. Every lost id ends in the sink exactly once, and every lost record
// is released. Ten points over a file sink.
TEST_P(Replay, ARepairKilledAtAnyPointLeavesEveryLostIdInTheSinkExactlyOnce) {
  constexpr int k_points = 10;
  constexpr int k_run_ms = 500;
  for (int point = 0; point < k_points; ++point) {
    SCOPED_TRACE(fmt::format("killed after {} ms", point * k_run_ms / k_points));
    TempDir dir;
    std::string prefix = fmt::format("lost:{}:", point);
    std::string mset = "MSET";
    for (int i = 0; i < k_events; ++i) {
      mset += fmt::format(" {}e-{} done", prefix, i);
    }
    ASSERT_EQ(m_redis.command(mset), "+OK\r\n");
    std::string charged = "MSET";
    for (int i = 0; i < k_events; i += 10) {
      charged += fmt::format(" charged:e-{} 1200", i);
    }
    ASSERT_EQ(m_redis.command(charged), "+OK\r\n");
    std::vector<std::string> command{"--via",
                                     m_redis.uri(),
                                     "--key-template",
                                     prefix + "{event_id}",
                                     "--repair-lost",
                                     "--effects",
                                     m_redis.uri(),
                                     "--effects-key-template",
                                     "charged:{event_id}",
                                     "--execute",
                                     "--sink",
                                     "file:" + dir.file("out.ndjson"),
                                     "--batch",
                                     "20",
                                     "--checkpoint",
                                     dir.file("cp")};
    auto rerun = kill_then_rerun(args(command), point * k_run_ms / k_points, dir);
    ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
    expect_file_sink_holds_each_once(dir.file("out.ndjson"), k_events - k_events / 10, "; the rerun:\n" + rerun.out);
    EXPECT_EQ(m_redis.command(fmt::format("EXISTS {}e-1 {}e-{}", prefix, prefix, k_events - 1)), ":0\r\n");
    EXPECT_EQ(m_redis.command(fmt::format("EXISTS {}e-0 {}e-10", prefix, prefix)), ":2\r\n") << "charged: kept";
  }
}

// Two runs at once on one checkpoint and one file sink: the second is refused, naming the holder,
// and the first completes with every id once.
TEST_P(Replay, ASecondRunAtOnceIsRefusedNamingTheHolder) {
  TempDir dir;
  std::vector<std::string> command = via_redis({"--execute", "--sink", "file:" + dir.file("out.ndjson")});
  auto first = start_slow(command, dir.file("cp"), m_src, true);
  auto second = command;
  second.insert(second.end(), {"--checkpoint", dir.file("cp")});
  auto refused = run_dedupctl(second);
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("--checkpoint " + dir.file("cp") + " is in use by another replay (pid "),
            std::string::npos)
      << refused.err;
  // Another checkpoint, the same file sink: refused too.
  auto other = command;
  other.insert(other.end(), {"--checkpoint", dir.file("cp2")});
  auto sink_refused = run_dedupctl(other);
  EXPECT_EQ(sink_refused.exit_code, 2) << sink_refused.err;
  EXPECT_NE(sink_refused.err.find("--sink file:" + dir.file("out.ndjson") + " is in use"), std::string::npos)
      << sink_refused.err;
  std::string out;
  while (auto line = first->read_line(std::chrono::seconds(30))) {
    out += *line + "\n";
  }
  EXPECT_EQ(first->wait(), 0);
  expect_file_sink_holds_each_once(dir.file("out.ndjson"), k_events);
}

// A decision log that cannot be written (a full disk) ends the run as incomplete, never a run
// whose post-mortem record was silently lost.
TEST_P(Replay, ADecisionLogThatCannotBeWrittenEndsTheRunIncomplete) {
  auto result = run_dedupctl(via_redis({"--decisions", "/dev/full"}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find(
                "cannot write --decisions /dev/full: No space left on device"),
            std::string::npos)
      << result.out;
}

// Through a Redis Cluster: claims, settles and releases go to the master of each key's slot, and a
// second run skips every event the first published.
TEST(ReplayRedisCluster, TwiceIsOnceThroughAClusterAndEveryKeyIsOnItsMaster) {
  RedisCluster redis(3, 0);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  auto cluster = fresh_topic("mock", "src", 2, source_events());
  DEDUPCTL_REQUIRE_SERVER(!cluster.bootstrap.empty(), cluster.why);
  std::string sink = add_topic(cluster, "sink", 2);
  std::vector<std::string> args{"replay",
                                "-b",
                                cluster.bootstrap,
                                "--topic",
                                cluster.topic,
                                "--via",
                                redis.seed_uri(),
                                "--key-template",
                                "dedup:{event_id}",
                                "--ttl",
                                "1d",
                                "--sink",
                                "kafka:" + sink,
                                "--execute",
                                "-o",
                                "json",
                                "-q"};
  auto first = run_dedupctl(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(summary_of(first.out).at("replayed"), k_events);
  auto second = run_dedupctl(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(summary_of(second.out).at("replayed"), 0);
  EXPECT_EQ(summary_of(second.out).at("skipped_duplicate"), k_events);
  long long keys = 0;
  for (auto* node : redis.nodes()) {
    std::string size = node->command("DBSIZE");
    keys += std::stoll(size.substr(1));
    EXPECT_NE(size, ":0\r\n") << "every master holds some of the keys";
  }
  EXPECT_EQ(keys, k_events);
  auto scan = run_dedupctl({"scan", "-b", cluster.bootstrap, "--topic", sink, "-o", "json", "-q"});
  EXPECT_EQ(summary_of(scan.out).at("events"), k_events);
  EXPECT_EQ(summary_of(scan.out).at("log_duplicates"), 0);
}

// A publish of the killed run can land in the sink after the run died (its produce request still on
// its way): the rerun must find it there, not publish it again. The test kills a run, waits until
// its own publishes have landed, takes an event it claimed but never published, and writes that
// event into the sink 100 ms after the rerun started, as a late request would. Without the rerun's
// wait for the sink to hold still, about one run in two published it twice.
namespace {

// 30 events of topic "hdrs" whose headers hold a repeated name, an empty and a null value; every
// third has a null key.
std::string header_events() {
  std::string events;
  for (int i = 0; i < 30; ++i) {
    events +=
        fmt::format(R"({{"topic":"hdrs","partition":0,"offset":{},"ts":{},"headers":["trace","t-{}","event_id","h-{}",)"
                    R"("trace","again-{}","empty","","null",null],"key":{},"payload":"{{\"n\":{}}}"}})"
                    "\n",
                    i, 1'795'000'100'000LL + i * 7, i, i, i, i % 3 == 0 ? "null" : fmt::format(R"("k{}")", i), i);
  }
  return events;
}

// A topic's records by event id, as kcat -J shows them less where they are: headers, key,
// payload, CreateTime.
std::map<std::string, Json> records_by_id(const std::string& bootstrap, const std::string& topic) {
  auto dump = run_command({"kcat", "-C", "-e", "-q", "-J", "-b", bootstrap, "-t", topic});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  std::map<std::string, Json> out;
  std::istringstream lines(dump.out);
  for (std::string line; std::getline(lines, line);) {
    Json record = Json::parse(line);
    const Json& headers = record.at("headers");
    for (std::size_t h = 0; h + 1 < headers.size(); h += 2) {
      if (headers[h] == "event_id") {
        out[headers[h + 1].get<std::string>()] = Json{{"headers", headers},
                                                      {"key", record.at("key")},
                                                      {"payload", record.at("payload")},
                                                      {"ts", record.at("ts")}};
      }
    }
  }
  return out;
}

} // namespace

// What a replay publishes is its source record as it was: key, payload, CreateTime, and every
// header in its order, a repeated name, an empty and a null value included (the producer is handed
// the consumer's parsed headers as they are).
TEST_P(Replay, EachPublishedRecordIsItsSourceRecordHeadersKeyPayloadAndTime) {
  std::string source = add_topic(m_cluster, "hdrs", 1, header_events());
  auto run = run_dedupctl({"replay", "-b", m_cluster.bootstrap, "--topic", source, "-o", "json", "-q", "--timeout",
                           "5s", "--via", m_redis.uri(), "--key-template", "dedup:{event_id}", "--ttl", "1d",
                           "--execute", "--sink", sink()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(summary_of(run.out).at("replayed"), 30);
  auto from = records_by_id(m_cluster.bootstrap, source);
  auto to = records_by_id(m_cluster.bootstrap, m_sink);
  ASSERT_EQ(from.size(), 30u);
  EXPECT_EQ(from.at("h-3").at("headers"),
            Json::parse(R"(["trace","t-3","event_id","h-3","trace","again-3","empty","","null",null])"));
  EXPECT_EQ(from.at("h-3").at("key"), nullptr);
  ASSERT_EQ(to.size(), from.size());
  for (const auto& [id, record] : from) {
    EXPECT_EQ(to.at(id), record) << id;
  }
}

// Events of a dump carry no Kafka message to take headers from: the producer builds them, and the
// published records are the same.
TEST_P(Replay, EachRecordPublishedFromADumpIsItsDumpedRecord) {
  TempDir dir;
  write_file(dir.file("hdrs.ndjson"), header_events());
  std::string source = add_topic(m_cluster, "hdrs", 1, header_events()); // the same records, as kcat shows them
  auto run = run_dedupctl({"replay", "--input", dir.file("hdrs.ndjson"), "-b", m_cluster.bootstrap, "-o", "json", "-q",
                           "--timeout", "5s", "--via", m_redis.uri(), "--key-template", "dedup:{event_id}", "--ttl",
                           "1d", "--execute", "--sink", sink()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(summary_of(run.out).at("replayed"), 30);
  auto from = records_by_id(m_cluster.bootstrap, source);
  auto to = records_by_id(m_cluster.bootstrap, m_sink);
  ASSERT_EQ(from.size(), 30u);
  ASSERT_EQ(to.size(), from.size());
  for (const auto& [id, record] : from) {
    EXPECT_EQ(to.at(id), record) << id;
  }
}

TEST_P(Replay, APublishThatLandsAfterTheKilledRunDiedIsNotPublishedAgain) {
  TempDir dir;
  std::vector<std::string> command =
      via_redis({"--execute", "--sink", sink(), "--checkpoint", dir.file("cp"), "--batch", "10"});
  auto slow = command;
  slow.insert(slow.end(), {"--max-rate", "200"});
  auto run = start(slow);
  ASSERT_TRUE(wait_for_progress(dir.file("cp"), m_src));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  run->signal(SIGKILL);
  run->wait();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  auto in_sink = run_command({"kcat", "-C", "-e", "-q", "-b", m_cluster.bootstrap, "-t", m_sink, "-f", "%h\n"});
  ASSERT_EQ(in_sink.exit_code, 0) << in_sink.err;
  int late = -1;
  for (int i = 0; i < k_events && late < 0; ++i) {
    bool claimed = m_redis.command(fmt::format("GET dedup:e-{}", i)).find("processing:") != std::string::npos;
    bool published = in_sink.out.find(fmt::format("event_id=e-{},", i)) != std::string::npos;
    late = claimed && !published ? i : -1;
  }
  ASSERT_GE(late, 0) << "the killed run had claims it had not published";
  // The late record must land while the rerun waits for the sink to hold still (500 ms): the
  // producer connects before the rerun starts, so that on a loaded machine its first send is not
  // held up by the connection and the metadata (CI: it landed after the read-back, and the rerun,
  // rightly by its rule, published the event again).
  TestProducer producer(m_cluster.bootstrap, 10'000);
  producer.connect(m_sink);
  auto rerun = std::async(std::launch::async, [&] { return run_dedupctl(command); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  producer.send(OutgoingRecord{m_sink,
                               late % 2,
                               fmt::format("k{}", late),
                               fmt::format(R"({{"n":{}}})", late),
                               {{"event_id", fmt::format("e-{}", late)}, {"type", "PaymentCharged"}},
                               1'795'000'000'000LL + late});
  std::string error;
  ASSERT_EQ(producer.flush(error), 0) << error;
  auto result = rerun.get();
  ASSERT_EQ(result.exit_code, 0) << result.err;
  expect_each_event_once_in_sink();
}

// A sink that refuses the run's records (the principal lacks WRITE on the topic) is a system that
// will not take them, not bad input: exit 3, the report incomplete, the sink and the reason named.
// Redis still answers, so no claim is left behind: what was claimed and not delivered is released
// (each such event's decision says so), and once the broker takes records again a rerun with the
// checkpoint publishes each event once.
TEST_F(ReplayMock, ASinkThatRefusesTheRunsRecordsIsExit3AndReleasesEveryClaim) {
  TempDir dir;
  expect_refused_and_released(29, // TOPIC_AUTHORIZATION_FAILED
                              fmt::format("the sink topic {} refused this run's records (Broker: Topic authorization "
                                          "failed): the principal needs WRITE on it",
                                          m_sink),
                              "Topic authorization failed", dir);
  // WRITE granted:
  auto rerun =
      run_dedupctl(via_redis({"--execute", "--sink", sink(), "--batch", "50", "--checkpoint", dir.file("cp")}));
  ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_EQ(summary_of(rerun.out).at("replayed"), k_events);
  expect_each_event_once_in_sink();
}

// The two other refusals the broker can send: the cluster's (an idempotent producer on a broker
// before 2.8 needs IDEMPOTENT_WRITE), and the idempotent producer's fatal error (librdkafka gives
// up on a sequence the broker says is out of order at the very first batch). Each ends the run the
// same way, saying which. The fatal error in one batch of every event: only the delivery reports
// can say it, no produce comes after.
TEST_F(ReplayMock, AClusterThatRefusesTheProducerOrAFatalProducerErrorEndsTheRunTheSameWay) {
  {
    TempDir dir;
    expect_refused_and_released(31, // CLUSTER_AUTHORIZATION_FAILED
                                fmt::format("the cluster refused this run's records for {} (Broker: Cluster "
                                            "authorization failed): an idempotent producer needs IDEMPOTENT_WRITE",
                                            m_sink),
                                "Cluster authorization failed", dir);
  }
  {
    TempDir dir;
    expect_refused_and_released(45, // OUT_OF_ORDER_SEQUENCE_NUMBER, fatal at sequence 0
                                fmt::format("the sink's producer for {} failed for good (Broker: Broker received an "
                                            "out of order sequence number",
                                            m_sink),
                                "failed for good", dir, std::to_string(k_events));
  }
  EXPECT_EQ(summary_of(scan_topic(m_sink).out).at("events"), 0) << "nothing reached the sink";
}

// A plan reads a Camel set's members (Java-serialized, as the library writes them), though a run
// through it is refused: the events already in the set would be skipped, the rest published.
TEST(ReplayLayouts, APlanReadsACamelSetThatARunCannotWrite) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  auto java = [](const std::string& text) { // as redis-server's inline quoting takes bytes
    return fmt::format("\"\\xac\\xed\\x00\\x05t\\x00\\x{:02x}{}\"", text.size(), text);
  };
  ASSERT_EQ(redis.command(fmt::format("SADD {} {} {}", java("orders"), java("36824dd6-b804-49b8-8b2d-451c62f746b4"),
                                      java("f5b19f71-ec7a-48ad-9b2b-a06b6ae12c97"))),
            ":2\r\n");
  std::string input = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/orders.ndjson";
  auto plan_through = [&](const std::string& collection) {
    auto plan = run_dedupctl({"replay", "--input", input, "--via", redis.uri(), "--layout", "camel-set", "--collection",
                              collection, "--fail-on", "none", "-o", "json"});
    EXPECT_EQ(plan.exit_code, 0) << plan.err;
    return Json::parse(plan.out);
  };
  Json doc = plan_through("orders");
  Json none = plan_through("no-such-repository"); // the range's own repeats only
  EXPECT_EQ(doc.at("placement").at("layout"), "camel-set");
  EXPECT_EQ(doc.at("summary").at("would_skip").get<int>() - none.at("summary").at("would_skip").get<int>(), 2)
      << doc.at("summary").dump() << none.at("summary").dump();
  EXPECT_EQ(none.at("summary").at("would_replay").get<int>() - doc.at("summary").at("would_replay").get<int>(), 2);
  TempDir dir;
  auto run = run_dedupctl({"replay", "--input", input, "--via", redis.uri(), "--layout", "camel-set", "--collection",
                           "orders", "--sink", "file:" + dir.file("out.ndjson"), "--execute"});
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("a plan (without --execute) reads it"), std::string::npos) << run.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.ndjson"))) << "refused before anything is written";
}

// Event ids that are not UTF-8 (binary keys read by --id key): every JSON document and every
// --decisions line stays valid JSON, with U+FFFD for each byte that is not UTF-8 in event_id and
// the exact bytes in event_id_base64; Markdown and HTML show the bytes escaped as \xHH.
TEST(ReplayBytes, IdsThatAreNotUtf8KeepEveryJsonOutputValidWithTheirBytesBeside) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  const std::string bad = std::string("k-\xc3\x28-\xff", 6); // a lead byte without its continuation, and 0xff
  std::string events;
  for (int i = 0; i < 4; ++i) {
    events += kcat_line(OwnedEvent{.topic = "bin",
                                   .partition = 0,
                                   .offset = i,
                                   .timestamp_ms = 1'795'000'000'000LL + i,
                                   .headers = {{"type", "PaymentCharged"}},
                                   .key = bad + std::to_string(i % 2), // each id twice, other payloads: id reuse
                                   .payload = fmt::format(R"({{"n":{}}})", i)});
  }
  auto cluster = fresh_topic("mock", "bin", 1, events);
  DEDUPCTL_REQUIRE_SERVER(!cluster.bootstrap.empty(), cluster.why);
  std::string sink = add_topic(cluster, "sink", 1);
  const std::string replaced = "k-\xef\xbf\xbd(-\xef\xbf\xbd";
  auto expect_id = [&](const Json& holder, const std::string& what) {
    std::string id = holder.at("event_id").get<std::string>();
    EXPECT_EQ(id.substr(0, replaced.size()), replaced) << what << ": " << holder.dump();
    ASSERT_TRUE(holder.contains("event_id_base64")) << what << ": " << holder.dump();
    std::string b64 = holder.at("event_id_base64").get<std::string>();
    auto out = run_command({"sh", "-c", "printf %s '" + b64 + "' | base64 -d"});
    EXPECT_EQ(out.out, bad + id.substr(id.size() - 1)) << what << ": the exact bytes";
  };
  std::vector<std::string> common{"-b", cluster.bootstrap, "--topic", cluster.topic, "--id", "key", "-q"};
  auto with = [&](std::vector<std::string> head, std::vector<std::string> tail) {
    head.insert(head.end(), common.begin(), common.end());
    head.insert(head.end(), tail.begin(), tail.end());
    return head;
  };
  std::vector<std::string> store{"--store", redis.uri(), "--key-template", "dedup:{event_id}", "--retention", "7d"};

  auto scan = run_dedupctl(with({"scan"}, {"-o", "json", "--fail-on", "none"}));
  ASSERT_EQ(scan.exit_code, 0) << scan.err;
  Json scanned = Json::parse(scan.out, nullptr, false);
  ASSERT_FALSE(scanned.is_discarded()) << scan.out;
  ASSERT_FALSE(scanned.at("findings").empty()) << scan.out;
  for (const auto& example : scanned.at("findings")[0].at("examples")) {
    expect_id(example, "scan");
  }

  std::vector<std::string> audit_args = with({"audit"}, {"-o", "json", "--fail-on", "none"});
  audit_args.insert(audit_args.end(), store.begin(), store.end());
  auto audit = run_dedupctl(audit_args);
  ASSERT_EQ(audit.exit_code, 0) << audit.err;
  Json audited = Json::parse(audit.out, nullptr, false);
  ASSERT_FALSE(audited.is_discarded()) << audit.out;
  int examples = 0;
  for (const auto& finding : audited.at("findings")) {
    for (const auto& example : finding.at("examples")) {
      if (!example.at("event_id").is_null()) {
        expect_id(example, "audit " + finding.at("id").get<std::string>());
        ++examples;
      }
    }
  }
  EXPECT_GT(examples, 0) << audit.out;
  for (std::string format : {"markdown", "html", "text"}) {
    std::vector<std::string> args = with({"audit"}, {"-o", format, "--fail-on", "none", "--examples", "10"});
    args.insert(args.end(), store.begin(), store.end());
    auto human = run_dedupctl(args);
    ASSERT_EQ(human.exit_code, 0) << human.err;
    EXPECT_NE(human.out.find("k-\\xc3(-\\xff"), std::string::npos) << format << ": " << human.out;
    EXPECT_EQ(human.out.find(bad), std::string::npos) << format << ": the raw bytes";
  }

  std::vector<std::string> trace_args = with({"trace"}, {"--event-id", bad + "0", "-o", "json", "--fail-on", "none"});
  trace_args.insert(trace_args.end(), store.begin(), store.end() - 2);
  auto traced = run_dedupctl(trace_args);
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  Json trace = Json::parse(traced.out, nullptr, false);
  ASSERT_FALSE(trace.is_discarded()) << traced.out;
  expect_id(trace.at("traces").at(0), "trace");

  TempDir dir;
  auto replay = run_dedupctl(
      with({"replay"}, {"--via", redis.uri(), "--key-template", "dedup:{event_id}", "--ttl", "1d", "--sink",
                        "kafka:" + sink, "--decisions", dir.file("d.ndjson"), "-o", "json", "--fail-on", "none"}));
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  ASSERT_FALSE(Json::parse(replay.out, nullptr, false).is_discarded()) << replay.out;
  auto lines = decisions_in(dir.file("d.ndjson")); // each line parses
  ASSERT_EQ(lines.size(), 4u);
  for (const auto& line : lines) {
    expect_id(line, "--decisions");
  }
}
