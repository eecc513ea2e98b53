// scan and audit with --version (issue 63): a version guard's dropped changes, conflicts and gaps,
// found in the log of a two-partition topic on the mock cluster, as report-v1 says.
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/planted.hpp"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

std::string order_event(int partition, long long offset, long long ts, const std::string& id, const std::string& order,
                        int version, const std::string& status) {
  OwnedEvent e{.topic = "orders", .partition = partition, .offset = offset, .timestamp_ms = ts};
  e.headers.emplace_back("event_id", id);
  e.headers.emplace_back("type", "OrderChanged");
  e.key = id; // keyed by the event, not the order: one order's changes land in two partitions
  e.payload = fmt::format(R"({{"order_id":"{}","version":{},"status":"{}"}})", order, version, status);
  return kcat_line(e);
}

const Json* finding(const Json& doc, const std::string& id) {
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == id) {
      return &f;
    }
  }
  return nullptr;
}

// Each of `lines` is in `out`, what the binary printed, and in docs/version-guards.md, which shows it.
void expect_printed_as_the_guide_shows(const std::string& out, const std::vector<std::string>& lines) {
  const std::string guide = read_file(std::string(DEDUPCTL_SOURCE_DIR) + "/docs/version-guards.md");
  for (const auto& line : lines) {
    EXPECT_NE(out.find(line), std::string::npos) << line << "\n" << out;
    EXPECT_NE(guide.find(line), std::string::npos) << "the guide lacks: " << line;
  }
}

// `command` over the guide's events (docs/version-guards.md) with their entity and version, the guard's
// projection in Redis at `uri` as `placement` (--store for audit, --via for replay), then `more`.
std::vector<std::string> over_the_guide(const std::string& command, const std::string& placement,
                                        const std::string& uri, const std::vector<std::string>& more) {
  const std::string root = DEDUPCTL_SOURCE_DIR;
  std::vector<std::string> out{command,         "--input",        root + "/examples/versions.ndjson",
                               "--entity",      "json:/order_id", "--version",
                               "json:/version", placement,        uri,
                               "--layout",      "version-guard",  "--key-template",
                               "order:{entity}"};
  out.insert(out.end(), more.begin(), more.end());
  return out;
}

} // namespace

class Versions : public ::testing::Test {
protected:
  void SetUp() override {
    const long long t = 1'795'161'600'000LL;
    // o-1: v1 and v2 in partition 0, v3 in partition 1 a minute before v2 was written: v2 is dropped.
    // o-2: v1, then v2 twice with two changes, then v5 (3 and 4 never written).
    m_broker.seed("orders", order_event(0, 0, t, "e-1", "o-1", 1, "created") +
                                order_event(0, 1, t + 120'000, "e-2", "o-1", 2, "paid") +
                                order_event(0, 2, t + 10, "e-4", "o-2", 1, "created") +
                                order_event(0, 3, t + 20, "e-5", "o-2", 2, "paid") +
                                order_event(0, 4, t + 30, "e-6", "o-2", 2, "refunded") +
                                order_event(0, 5, t + 40, "e-7", "o-2", 5, "closed") +
                                order_event(1, 0, t + 60'000, "e-3", "o-1", 3, "shipped"));
  }
  std::vector<std::string> scan(const std::vector<std::string>& extra) const {
    std::vector<std::string> out{"scan", "-b", m_broker.bootstrap(), "--topic", "orders", "-o", "json"};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }
  MockBroker m_broker{{"orders:2"}};
};

TEST_F(Versions, ScanFindsTheChangeAGuardDropsTheConflictAndTheGap) {
  auto result = run_dedupctl(scan({"--entity", "json:/order_id", "--version", "json:/version"}));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("complete"), true);
  const Json* regression = finding(doc, "version-regression");
  ASSERT_NE(regression, nullptr) << result.out;
  EXPECT_EQ(regression->at("severity"), "error");
  EXPECT_EQ(regression->at("count"), 1);
  const Json& dropped = regression->at("examples")[0];
  EXPECT_EQ(dropped.at("event_id"), "e-2");
  EXPECT_EQ(dropped.at("partition"), 0);
  EXPECT_EQ(dropped.at("offset"), 1);
  EXPECT_EQ(dropped.at("cross_partition"), true);
  EXPECT_NE(dropped.at("note").get<std::string>().find("entity o-1 version 2 after version 3 (e-3 orders[1]@0"),
            std::string::npos)
      << dropped.dump();
  const Json* conflict = finding(doc, "version-conflict");
  ASSERT_NE(conflict, nullptr);
  EXPECT_EQ(conflict->at("count"), 1);
  EXPECT_EQ(conflict->at("examples")[0].at("event_id"), "e-6");
  const Json* gap = finding(doc, "version-gap");
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->at("severity"), "warning");
  EXPECT_EQ(gap->at("count"), 2);
  EXPECT_EQ(gap->at("examples")[0].at("note"), "entity o-2: versions 3 to 4 missing between 2 and 5");
  EXPECT_EQ(doc.at("settings").at("version order"), "numeric");
  EXPECT_EQ(doc.at("settings").at("version"), "json:/version");
}

TEST_F(Versions, WithoutVersionNothingOfItIsReported) {
  auto doc = Json::parse(run_dedupctl(scan({"--entity", "json:/order_id"})).out);
  EXPECT_EQ(finding(doc, "version-regression"), nullptr);
  EXPECT_EQ(finding(doc, "version-gap"), nullptr);
}

TEST_F(Versions, AnEntitySpecThatYieldsNothingIsNoCleanVerdict) {
  auto result = run_dedupctl(scan({"--entity", "json:/customer_id", "--version", "json:/version"}));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = Json::parse(result.out);
  const Json* unchecked = finding(doc, "version-unchecked");
  ASSERT_NE(unchecked, nullptr) << result.out;
  EXPECT_EQ(unchecked->at("severity"), "error");
  EXPECT_EQ(unchecked->at("count"), 7);
}

TEST_F(Versions, ALexicalGuardIsAskedForAndBadFlagsAreUsageErrors) {
  auto lexical =
      run_dedupctl(scan({"--entity", "json:/order_id", "--version", "json:/version", "--version-order", "lexical"}));
  auto lexical_doc = Json::parse(lexical.out);
  ASSERT_NE(finding(lexical_doc, "version-regression"), nullptr);
  EXPECT_EQ(finding(lexical_doc, "version-gap"), nullptr) << "no count of what lies between two strings";
  auto bad =
      run_dedupctl(scan({"--entity", "json:/order_id", "--version", "json:/version", "--version-order", "semver"}));
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("invalid --version-order 'semver'"), std::string::npos) << bad.err;
  auto alone = run_dedupctl(scan({"--version", "json:/version"}));
  EXPECT_EQ(alone.exit_code, 2);
  EXPECT_NE(alone.err.find("--version needs --entity"), std::string::npos) << alone.err;
  TempDir dir;
  auto sharded = run_dedupctl(scan({"--entity", "json:/order_id", "--version", "json:/version", "--shard", "1/2",
                                    "--digest", dir.file("s.digest")}));
  EXPECT_EQ(sharded.exit_code, 2);
  EXPECT_NE(sharded.err.find("--version with --shard/--digest"), std::string::npos) << sharded.err;
}

TEST_F(Versions, AuditReportsTheGuardsFindingsBesideThePlacements) {
  auto result = run_dedupctl({"audit", "-b", m_broker.bootstrap(), "--topic", "orders", "--store",
                              "memory:", "--layout", "lru", "--layout-option", "capacity=100", "--retention", "7d",
                              "--entity", "json:/order_id", "--version", "json:/version", "-o", "json"});
  ASSERT_NE(result.exit_code, 2) << result.err;
  auto doc = Json::parse(result.out);
  const Json* regression = finding(doc, "version-regression");
  ASSERT_NE(regression, nullptr) << result.out;
  EXPECT_EQ(regression->at("examples")[0].at("event_id"), "e-2");
}

// The README's and docs/version-guards.md's example is what the binary prints over the bundled log.
TEST(VersionsExample, TheReadmesDroppedChangeIsWhatScanPrints) {
  const std::string root = DEDUPCTL_SOURCE_DIR;
  auto result = run_dedupctl({"scan", "--input", root + "/examples/versions.ndjson", "--entity", "json:/order_id",
                              "--version", "json:/version"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  const std::string line = "orders[0]@30  id ev-0102  2026-11-20T08:05:05.000Z  (entity o-1042 version 2 after "
                           "version 3 (ev-0103 orders[1]@31, earlier by timestamp: an estimate across partitions))";
  EXPECT_NE(result.out.find(line), std::string::npos) << result.out;
  for (const char* doc : {"/README.md", "/docs/version-guards.md"}) {
    EXPECT_NE(read_file(root + doc).find(line), std::string::npos) << doc;
  }
}

// --layout state-guard: its table of transitions, --entity without --version, and the commands that
// do not read it, refused (exit 2) before anything is contacted (the store's port is closed).
TEST_F(Versions, AStateGuardsMisusesAreUsageErrorsNamingWhatToDo) {
  TempDir dir;
  const std::string table = dir.file("orders.toml");
  const std::string bad = dir.file("bad.toml");
  std::ofstream(table) << "[OrderPlaced]\nto = \"pending\"\n[OrderPaid]\nfrom = [\"pending\"]\nto = \"paid\"\n";
  std::ofstream(bad) << "[OrderPlaced]\nto = \"pending\"\n[OrderPaid]\nfrom = \"pending\"\nto = \"paid\"\n";
  auto guard = [](const std::string& transitions) {
    std::vector<std::string> out{"--store",     "redis://127.0.0.1:1", "--layout",
                                 "state-guard", "--key-template",      "order:{entity}"};
    if (!transitions.empty()) {
      out.insert(out.end(), {"--layout-option", "transitions=" + transitions});
    }
    return out;
  };
  const std::string b = m_broker.bootstrap();
  auto with = [](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const std::vector<std::string> audit{"audit", "-b", b, "--topic", "orders", "--entity", "json:/order_id"};
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{
           {with(audit, guard("")), "--layout state-guard needs --layout-option transitions=FILE"},
           {with(audit, guard(bad)), "--layout-option transitions=" + bad + ":4: [OrderPaid] from must be"},
           {with(audit, guard(dir.file("none.toml"))), "cannot read --layout-option transitions"},
           {with({"audit", "-b", b, "--topic", "orders"}, guard(table)), "--layout state-guard needs --entity"},
           {with(with(audit, {"--version", "json:/version"}), guard(table)),
            "--version with --layout state-guard: a state guard compares its entity's state, not a version"},
           {with(audit, with(guard(table), {"--layout-option", "version-column=v"})),
            "--layout-option version-column=v: --layout state-guard takes transitions=FILE, entity-column=NAME and "
            "state-column=NAME"},
           {with({"trace", "-b", b, "--topic", "orders", "--event-id", "e-1"}, guard(table)),
            "--layout state-guard: trace does not read a guard's projection yet"},
           {with({"replay", "-b", b, "--topic", "orders", "--entity", "json:/order_id", "--repair-lost", "--effects",
                  "redis://127.0.0.1:1", "--via", "redis://127.0.0.1:1", "--layout", "state-guard", "--key-template",
                  "order:{entity}", "--layout-option", "transitions=" + table},
                 {}),
            "--repair-lost --layout state-guard: a guard keeps no record to release"},
       }) {
    auto result = run_dedupctl(c.args);
    EXPECT_EQ(result.exit_code, 2) << fmt::format("{}", fmt::join(c.args, " ")) << "\n" << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
  }
}

// --layout version-guard: what it needs and what does not read it yet, refused (exit 2) before
// anything is contacted (the store's port is closed).
TEST_F(Versions, AVersionGuardsMisusesAreUsageErrorsNamingWhatToDo) {
  const std::vector<std::string> guard{"--store",       "redis://127.0.0.1:1", "--layout",
                                       "version-guard", "--key-template",      "order:{entity}"};
  auto with = [&](std::vector<std::string> args) {
    args.insert(args.end(), guard.begin(), guard.end());
    return run_dedupctl(args);
  };
  const std::string b = m_broker.bootstrap();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{
           {{"audit", "-b", b, "--topic", "orders"}, "--layout version-guard needs --entity and --version"},
           {{"audit", "-b", b, "--topic", "orders", "--entity", "json:/order_id", "--version", "json:/version", "--ttl",
             "1h"},
            "--ttl 1h: --layout version-guard reads the handler's projection, whose rows never lapse"},
           {{"trace", "-b", b, "--topic", "orders", "--event-id", "e-1"},
            "--layout version-guard needs --entity and --version"},
           {{"trace", "-b", b, "--topic", "orders", "--event-id", "e-1", "--entity", "json:/order_id", "--version",
             "json:/version", "--store", "redis://127.0.0.1:1"},
            "--layout version-guard: a chain of tiers does not read a guard's projection yet"},
           {{"watch", "-b", b, "--topic", "orders"},
            "--layout version-guard: watch does not read a guard's projection yet"},
           {{"audit", "-b", b, "--topic", "orders", "--entity", "json:/order_id", "--version", "json:/version",
             "--layout-option", "version-colum=v"},
            "--layout-option version-colum=v: --layout version-guard takes entity-column=NAME"},
       }) {
    auto result = with(c.args);
    EXPECT_EQ(result.exit_code, 2) << fmt::format("{}", fmt::join(c.args, " ")) << "\n" << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
  }
  TempDir dir;
  auto snapshot = run_dedupctl(
      {"snapshot", "--store", "redis://127.0.0.1:1", "--layout", "version-guard", "--output", dir.file("snapshot")});
  EXPECT_EQ(snapshot.exit_code, 2) << snapshot.err;
  EXPECT_NE(snapshot.err.find("snapshot does not export a projection"), std::string::npos) << snapshot.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("snapshot")));
  auto no_table =
      run_dedupctl({"audit", "-b", b, "--topic", "orders", "--entity", "json:/order_id", "--version", "json:/version",
                    "--store", "postgres://127.0.0.1:1/shop", "--layout", "version-guard"});
  EXPECT_EQ(no_table.exit_code, 2) << no_table.err;
  EXPECT_NE(no_table.err.find("name the projection's table with --inbox-table"), std::string::npos) << no_table.err;
  auto file = run_dedupctl({"audit", "-b", b, "--topic", "orders", "--entity", "json:/order_id", "--version",
                            "json:/version", "--store", "file:/dev/null", "--layout", "version-guard"});
  EXPECT_EQ(file.exit_code, 2) << file.err;
  EXPECT_NE(file.err.find("reads the handler's projection itself"), std::string::npos) << file.err;
  auto chain =
      run_dedupctl({"audit", "-b", b, "--topic", "orders", "--entity", "json:/order_id", "--version", "json:/version",
                    "--store", "redis://127.0.0.1:1", "--layout", "version-guard", "--store", "redis://127.0.0.1:1"});
  EXPECT_EQ(chain.exit_code, 2) << chain.err;
  EXPECT_NE(chain.err.find("a chain of tiers does not read"), std::string::npos) << chain.err;
}

// replay --via a version guard: what it cannot be combined with and what it needs, refused (exit 2)
// before anything is contacted; a projection that cannot be reached is exit 3 with nothing published.
TEST_F(Versions, AReplayViaAVersionGuardRefusesWhatItCannotBackAndPublishesNothingUnread) {
  const std::string b = m_broker.bootstrap();
  const std::vector<std::string> via{"replay",
                                     "-b",
                                     b,
                                     "--topic",
                                     "orders",
                                     "--via",
                                     "redis://127.0.0.1:1",
                                     "--layout",
                                     "version-guard",
                                     "--key-template",
                                     "order:{entity}"};
  const std::vector<std::string> versions{"--entity", "json:/order_id", "--version", "json:/version"};
  auto with = [&](std::vector<std::string> args, const std::vector<std::string>& more) {
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const auto& c : std::vector<Case>{
           {via, "--via --layout version-guard needs --entity and --version"},
           {with(with(via, versions), {"--repair-lost", "--effects", "redis://127.0.0.1:1"}),
            "--repair-lost --layout version-guard: a guard keeps no record to release"},
           {with(with(via, versions), {"--via", "redis://127.0.0.1:1"}),
            "--via repeated with --layout version-guard: a guard is the consumer's whole placement"},
           {with({"replay", "-b", b, "--topic", "orders", "--via", "redis://127.0.0.1:1"}, versions),
            "--version on replay is read by --via with --layout version-guard"},
       }) {
    auto result = run_dedupctl(c.args);
    EXPECT_EQ(result.exit_code, 2) << fmt::format("{}", fmt::join(c.args, " ")) << "\n" << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
  }
  TempDir dir;
  const std::string root = DEDUPCTL_SOURCE_DIR;
  auto unread = run_dedupctl(with({"replay", "--input", root + "/examples/versions.ndjson", "--via",
                                   "redis://127.0.0.1:1", "--layout", "version-guard", "--key-template",
                                   "order:{entity}", "--execute", "--sink", "file:" + dir.file("out"), "-o", "json"},
                                  versions));
  EXPECT_EQ(unread.exit_code, 3) << unread.err;
  auto doc = Json::parse(unread.out);
  EXPECT_FALSE(doc.at("complete").get<bool>());
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("the guard's walk"), std::string::npos)
      << doc.at("error");
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("nothing was published"), std::string::npos)
      << doc.at("error");
  EXPECT_FALSE(std::filesystem::exists(dir.file("out"))) << "nothing may be published over a walk not read";
}

// docs/version-guards.md's audit of a projection restored from a backup is what the binary prints
// over the bundled log, against a real redis-server holding each order's version.
TEST(VersionsExample, TheGuidesProjectionBehindIsWhatAuditPrints) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_NO_FATAL_FAILURE(plant_guide_projection(redis));
  auto result = run_dedupctl(over_the_guide("audit", "--store", redis.uri(), {"--retention", "7d", "--examples", "3"}));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  expect_printed_as_the_guide_shows(
      result.out,
      {"projection-behind  5 events the consumer moved past carry a version above their entity's in the projection: "
       "their change is not in it (3 of them superseded by a higher version in the range)",
       "orders[0]@26  id ev-0054  2026-11-20T08:02:53.000Z  key order:o-1017  (entity o-1017 version 3, the "
       "projection's 1)",
       "orders[0]@27  id ev-0056  2026-11-20T08:03:02.000Z  key order:o-1018  (entity o-1018 version 2, no row, a "
       "higher version follows)",
       "66 events: 61 would be skipped, 5 re-applied, 0 skipped unfinished (orphaned), 0 first deliveries"});
}

// The same projection kept as a hash per order, its version in a field (HGET, a key at a time).
TEST(VersionsExample, AHashPerEntityIsReadByItsVersionField) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  for (int i = 1000; i <= 1019; ++i) {
    ASSERT_EQ(redis.command(fmt::format("HSET order:o-{} version 3 status shipped", i)), ":2\r\n");
  }
  ASSERT_EQ(redis.command("HSET order:o-1042 version 3"), ":1\r\n");
  ASSERT_EQ(redis.command("HSET order:o-1043 version 2"), ":1\r\n");
  ASSERT_EQ(redis.command("HSET order:o-1017 version 1"), ":0\r\n"); // the backup's
  ASSERT_EQ(redis.command("HDEL order:o-1018 version"), ":1\r\n");   // its row gone (an empty hash is no key)
  auto result = run_dedupctl(over_the_guide(
      "audit", "--store", redis.uri(),
      {"--layout-option", "version-field=version", "--retention", "7d", "-o", "json", "--fail-on", "none"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("summary").at("missing"), 5) << doc.at("summary");
  EXPECT_EQ(doc.at("summary").at("superseded"), 3) << doc.at("summary");
  EXPECT_EQ(doc.at("replay").at("would_reapply"), 5) << doc.at("replay");
}

// docs/version-guards.md's replay --via the projection: the plan publishes what the audit re-applies,
// and the decisions say why each is skipped, against the same restored projection.
TEST(VersionsExample, TheGuidesReplayViaTheProjectionIsWhatReplayPrints) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_NO_FATAL_FAILURE(plant_guide_projection(redis));
  TempDir dir;
  auto result = run_dedupctl(over_the_guide("replay", "--via", redis.uri(), {"--decisions", dir.file("plan.ndjson")}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  expect_printed_as_the_guide_shows(
      result.out,
      {"  would replay                          5", "  would skip                            61",
       "version-guard-replay  a version guard applies 5 of the 66 events read: those above their entity's version "
       "in the projection and above every version applied before them; only they are published"});
  std::string ev_0102;
  std::istringstream decisions(read_file(dir.file("plan.ndjson")));
  for (std::string line; std::getline(decisions, line);) {
    if (line.find("\"ev-0102\"") != std::string::npos) {
      ev_0102 = line;
    }
  }
  EXPECT_NE(ev_0102.find("a version guard drops it"), std::string::npos) << ev_0102;
  expect_printed_as_the_guide_shows(ev_0102, {ev_0102});
  EXPECT_EQ(redis.command("GET order:o-1017"), "$1\r\n1\r\n") << "a plan writes nothing";
}

// replay --via the guide's projection with --execute, SIGKILLed at 20 points over its life (in the walk,
// between two of the five publishes, after the end: --batch 1 at --max-rate 10 spreads them over half
// a second), then run again from its checkpoint until it completes: the file sink holds the five
// events the guard applies, each exactly once and in the guard's order, and the projection is as
// planted (the replay writes none of it). Each point gets its own sink and checkpoint.
TEST(VersionsExample, AGuardReplayKilledAtAnyPointPublishesEachAppliedEventOnce) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_NO_FATAL_FAILURE(plant_guide_projection(redis));
  // The guide's preview (docs/version-guards.md): what the guard applies, in the order it applies them.
  const std::vector<std::string> applied{"ev-0054", "ev-0056", "ev-0053", "ev-0055", "ev-0057"};
  constexpr int k_points = 20;
  constexpr int k_run_ms = 600;
  for (int point = 0; point < k_points; ++point) {
    int after_ms = point * k_run_ms / k_points;
    SCOPED_TRACE(fmt::format("killed after {} ms", after_ms));
    TempDir dir;
    const auto command = over_the_guide("replay", "--via", redis.uri(),
                                        {"--execute", "--sink", "file:" + dir.file("out.ndjson"), "--checkpoint",
                                         dir.file("cp"), "--batch", "1", "-q"});
    std::vector<std::string> paced{DEDUPCTL_BINARY};
    paced.insert(paced.end(), command.begin(), command.end());
    paced.insert(paced.end(), {"--max-rate", "10"});
    SpawnOptions options;
    options.silence = true;
    Process run(paced, options);
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    run.signal(SIGKILL);
    int killed = run.wait();
    EXPECT_TRUE(killed == 128 + SIGKILL || killed == 0) << killed;
    auto rerun = run_dedupctl(command);
    ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
    std::vector<std::string> published;
    std::istringstream lines(read_file(dir.file("out.ndjson")));
    for (std::string line; std::getline(lines, line);) {
      auto event = Json::parse(line); // a torn line does not parse
      published.push_back(event.at("headers").at(1).get<std::string>());
    }
    EXPECT_EQ(published, applied) << fmt::format("{}", fmt::join(published, " "));
  }
  for (const auto& command : guide_projection_commands()) {
    std::string key = command.substr(4, command.rfind(' ') - 4);
    std::string value = command.substr(command.rfind(' ') + 1);
    EXPECT_EQ(redis.command("GET " + key), fmt::format("${}\r\n{}\r\n", value.size(), value)) << key;
  }
}

// trace --entity --version: the entity's versions around the event join its timeline, in the order
// its consumer meets them, the dropped change said as such.
TEST(VersionsExample, TraceShowsTheEntitysVersionsAroundTheEvent) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  const std::string root = DEDUPCTL_SOURCE_DIR;
  auto result = run_dedupctl({"trace", "--input", root + "/examples/versions.ndjson", "--event-id", "ev-0102",
                              "--entity", "json:/order_id", "--version", "json:/version", "--store", redis.uri(),
                              "--ttl", "1h", "-o", "json", "--fail-on", "none"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  std::vector<std::string> versions;
  for (const auto& entry : doc.at("traces").at(0).at("timeline")) {
    if (entry.at("what").get<std::string>().starts_with("entity ")) {
      versions.push_back(entry.at("what"));
    }
  }
  EXPECT_EQ(versions, (std::vector<std::string>{
                          "entity o-1042 version 1: ev-0101 (orders[1]@30)",
                          "entity o-1042 version 3: ev-0103 (orders[1]@31)",
                          "entity o-1042 version 2: ev-0102 (orders[0]@30), this event, a version guard drops it: "
                          "version 3 came first",
                      }))
      << doc.at("traces").at(0).at("timeline");
  EXPECT_EQ(doc.at("settings").at("version"), "json:/version") << doc.at("settings");
  EXPECT_EQ(doc.at("settings").at("version order"), "numeric") << doc.at("settings");
}

// trace through the guard's projection (docs/version-guards.md): the record is the entity's version
// there, and the verdict what the guard does with a redelivery. o-1017 is at 1 (ev-0052's own version:
// protected; ev-0053's 2 is above it: exposed, with 3 after it), o-1018 has no row, o-1042 is at 3
// (ev-0102's 2 was dropped, and would be again).
TEST(VersionsExample, TraceThroughTheProjectionSaysWhatTheGuardDoesWithARedelivery) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_NO_FATAL_FAILURE(plant_guide_projection(redis));
  const std::vector<std::string> ids{"--event-id", "ev-0052", "--event-id", "ev-0053",
                                     "--event-id", "ev-0056", "--event-id", "ev-0102"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), ids.begin(), ids.end());
    return run_dedupctl(over_the_guide("trace", "--store", redis.uri(), more));
  };
  auto json = with({"-o", "json"});
  ASSERT_EQ(json.exit_code, 0) << json.err; // exposed is a warning
  auto doc = Json::parse(json.out);
  std::map<std::string, std::string> verdicts;
  for (const auto& trace : doc.at("traces")) {
    verdicts[trace.at("event_id").get<std::string>()] = trace.at("verdict").at("id").get<std::string>();
  }
  EXPECT_EQ(verdicts,
            (std::map<std::string, std::string>{
                {"ev-0052", "protected"}, {"ev-0053", "exposed"}, {"ev-0056", "exposed"}, {"ev-0102", "protected"}}))
      << json.out;
  EXPECT_EQ(doc.at("traces").at(1).at("record").at("value"), "1") << doc.at("traces").at(1);
  EXPECT_EQ(doc.at("traces").at(2).at("record").at("state"), "absent") << doc.at("traces").at(2);
  EXPECT_EQ(doc.at("placement").at("layout"), "version-guard");

  auto text = with({});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  expect_printed_as_the_guide_shows(
      text.out,
      {"TRACE ev-0053  exposed: the projection holds version 1 of entity o-1017, below this event's 2, so a "
       "redelivery applies it (its change is not in the projection); a higher version follows it in the range",
       "TRACE ev-0102  protected: the projection holds version 3 of entity o-1042, at or above this event's 2, so "
       "the guard drops a redelivery",
       "  record     present, value '3', no expiry"});
  // The event's entity in no row and its version unreadable: never protected.
  ASSERT_EQ(redis.command("SET order:o-1042 unknown"), "+OK\r\n");
  auto unreadable =
      run_dedupctl(over_the_guide("trace", "--store", redis.uri(), {"--event-id", "ev-0102", "-o", "json"}));
  ASSERT_EQ(unreadable.exit_code, 0) << unreadable.err;
  auto verdict = Json::parse(unreadable.out).at("traces").at(0).at("verdict");
  EXPECT_EQ(verdict.at("id"), "exposed") << verdict;
  EXPECT_NE(verdict.at("text").get<std::string>().find("the projection's version 'unknown' of entity o-1042 does not "
                                                       "parse"),
            std::string::npos)
      << verdict;
}

// docs/version-guards.md's state guard: a projection restored with o-2002 still pending, and o-2003's
// delivery read before any shipment. The audit's lines and the replay's count are what the binary
// prints over the bundled log, against a real redis-server holding each order's state.
TEST(VersionsExample, TheGuidesStateGuardIsWhatAuditAndReplayPrint) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  for (const char* set : {"SET order:o-2001 delivered", "SET order:o-2002 pending", "SET order:o-2003 pending",
                          "SET order:o-2004 cancelled"}) {
    ASSERT_EQ(redis.command(set), "+OK\r\n");
  }
  const std::string root = DEDUPCTL_SOURCE_DIR;
  const std::vector<std::string> guard{"--entity",        "json:/order_id",
                                       "--layout",        "state-guard",
                                       "--key-template",  "order:{entity}",
                                       "--layout-option", "transitions=" + root + "/examples/order-transitions.toml"};
  std::vector<std::string> audit{
      "audit", "--input", root + "/examples/order-states.ndjson", "--store", redis.uri(), "--retention", "7d"};
  audit.insert(audit.end(), guard.begin(), guard.end());
  auto audited = run_dedupctl(audit);
  EXPECT_EQ(audited.exit_code, 1) << audited.err;
  TempDir dir;
  std::vector<std::string> replay{"replay",
                                  "--input",
                                  root + "/examples/order-states.ndjson",
                                  "--via",
                                  redis.uri(),
                                  "--decisions",
                                  dir.file("plan.ndjson")};
  replay.insert(replay.end(), guard.begin(), guard.end());
  auto replayed = run_dedupctl(replay);
  EXPECT_EQ(replayed.exit_code, 0) << replayed.err;
  expect_printed_as_the_guide_shows(
      audited.out,
      {"projection-behind  3 events the consumer moved past move their entity to a state the projection is not at "
       "or past: their change is not in it",
       "fulfilment[0]@4  id st-0005  2026-11-20T09:00:20.000Z  key order:o-2002  (entity o-2002 OrderPaid, the "
       "projection's pending)",
       "fulfilment[0]@7  id st-0008  2026-11-20T09:00:35.000Z  key order:o-2002  (entity o-2002 OrderShipped, the "
       "projection's pending)",
       "fulfilment[0]@8  id st-0009  2026-11-20T09:00:40.000Z  key order:o-2003  (entity o-2003 OrderDelivered, the "
       "projection's pending)",
       "transition-gap  1 events move their entity from a state no other event of it in the range moves it to: a "
       "state guard drops them unless the entity got there before the range",
       "fulfilment[0]@8  id st-0009  2026-11-20T09:00:40.000Z  (entity o-2003 OrderDelivered moves from shipped, "
       "which no other event of the entity in the range moves it to)",
       "11 events: 9 would be skipped, 2 re-applied, 0 skipped unfinished (orphaned), 0 first deliveries"});
  const std::string info = "state-guard-replay  a state guard applies 2 of the 11 events read: those whose entity "
                           "is in a state they move from when the consumer meets them, from the projection's state "
                           "on; only they are published";
  expect_printed_as_the_guide_shows(replayed.out, {info});
  std::set<std::string> published;
  std::istringstream decisions(read_file(dir.file("plan.ndjson")));
  for (std::string line; std::getline(decisions, line);) {
    auto d = Json::parse(line);
    if (d.at("decision") == "would-replay") {
      published.insert(d.at("event_id").get<std::string>());
    }
  }
  EXPECT_EQ(published, (std::set<std::string>{"st-0005", "st-0008"})) << "o-2002's payment and shipment, no more";
  EXPECT_EQ(redis.command("GET order:o-2002"), "$7\r\npending\r\n") << "a plan writes nothing";
}
