// dedupctl audit --effects: the consumer's effects (a row of a real PostgreSQL table, a key of a
// real Redis) beside its dedup records in a real Redis, over the planted events of planted.hpp on
// the mock cluster. Lost = the record says processed, the effect is absent; unguarded = the effect
// exists, no record guards it.
#include "tests/cli/report_json.hpp"
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

// The consumer's effects: e-0 (expired), e-1 (missing), e-3 (covered) and e-4 (orphaned) were
// applied; e-2 (expiring) and e-6 (covered) are marked processed and were not; e-7 (missing, in the
// window), e-8 (in progress) and e-9 (pending) were not.
const std::vector<std::string> k_applied{"e-0", "e-1", "e-3", "e-4"};

} // namespace

class AuditEffects : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    m_now = wall_ms();
    plant_pay(m_broker, m_now);
    plant_records(m_redis);
    std::string rows;
    for (const auto& id : k_applied) {
      rows += fmt::format("{}('{}', 1200)", rows.empty() ? "" : ", ", id);
      ASSERT_EQ(m_redis.command("SET charged:" + id + " 1200"), "+OK\r\n");
    }
    auto result = m_pg.psql("CREATE TABLE charges (charged_event text PRIMARY KEY, amount int); INSERT INTO charges "
                            "VALUES " +
                            rows + ";");
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }

  // `command` over the planted topic for group billing against `store`, then `extra`.
  std::vector<std::string> over_pay(const std::string& command, const std::string& store,
                                    std::vector<std::string> extra) const {
    std::vector<std::string> out{command,   "-b", m_broker.bootstrap(), "--topic", "pay", "--group", "billing",
                                 "--store", store};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  std::vector<std::string> audit(std::vector<std::string> extra, const std::string& format = "json") const {
    return audit_args(m_broker.bootstrap(), m_redis.uri(), std::move(extra), format);
  }
  std::vector<std::string> with_table(std::vector<std::string> extra = {}) const {
    std::vector<std::string> out{"--effects", m_pg.conninfo(),    "--effects-table",
                                 "charges",   "--effects-column", "charged_event"};
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  // The inbox holds e-2, e-3 (done), e-6 (done) and e-4 (processing).
  void plant_inbox() const {
    auto made = m_pg.psql(
        "CREATE TABLE processed_events (event_id text PRIMARY KEY, processed_at timestamptz NOT NULL, status text);"
        "INSERT INTO processed_events VALUES ('e-2', now(), 'done'), ('e-3', now(), 'done'), ('e-6', now(), 'done'), "
        "('e-4', now() - interval '2 hours', 'processing');");
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  void expect_effects(const Json& doc) const {
    Json summary = doc.at("summary");
    summary.erase("effects");
    Json plain = parse(run_dedupctl(audit({})));
    expect_planted(plain);
    EXPECT_EQ(summary, plain.at("summary")) << "the states, as without --effects";
    EXPECT_EQ(doc.at("summary").at("effects"),
              (Json{{"checked", 9}, {"applied", 4}, {"not_applied", 5}, {"lost", 2}, {"unguarded", 3}}));
    const auto& replay = doc.at("replay");
    EXPECT_EQ(replay.at("would_reapply"), 2) << replay.dump();
    EXPECT_EQ(replay.at("would_reapply_applied"), 1) << "the event without id: its effect cannot be looked up";
    EXPECT_EQ(replay.at("would_reapply_unapplied"), 1) << "e-7: the seek applies it for the first time";
    std::map<std::string, std::vector<std::string>> examples;
    for (const auto& f : doc.at("findings")) {
      for (const auto& ex : f.at("examples")) {
        examples[f.at("id")].push_back(ex.at("event_id").is_null() ? "" : ex.at("event_id").get<std::string>());
      }
    }
    EXPECT_EQ(examples["lost-effect"], (std::vector<std::string>{"e-2", "e-6"}));
    EXPECT_EQ(examples["unguarded-effect"], (std::vector<std::string>{"e-0", "e-1", "e-4"}));
  }

  MockBroker m_broker{{"pay:1"}};
  RedisServer m_redis;
  PostgresServer m_pg;
  TempDir m_dir;
  long long m_now = 0;
};

TEST_F(AuditEffects, ATablesRowsTellLostEventsFromUnguardedOnes) {
  auto result = run_dedupctl(audit(with_table()));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  Json doc = parse(result);
  EXPECT_EQ(doc.at("complete"), true);
  expect_effects(doc);
  EXPECT_EQ(
      doc.at("placement").at("effects"),
      (Json{{"kind", "postgres"}, {"store", m_pg.conninfo()}, {"table", "charges"}, {"column", "charged_event"}}));
  auto counts = finding_counts(doc);
  EXPECT_EQ(counts["lost-effect"], 2);
  EXPECT_EQ(counts["unguarded-effect"], 3);
  // Without --effects the same audit says nothing of them.
  Json plain = parse(run_dedupctl(audit({})));
  EXPECT_FALSE(plain.at("summary").contains("effects"));
  EXPECT_FALSE(plain.at("replay").contains("would_reapply_applied"));
  EXPECT_FALSE(plain.at("placement").contains("effects"));
}

TEST_F(AuditEffects, RedisKeysAsEffectsGiveTheSameVerdicts) {
  auto result = run_dedupctl(audit({"--effects", m_redis.uri(), "--effects-key-template", "charged:{event_id}"}));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  Json doc = parse(result);
  expect_effects(doc);
  EXPECT_EQ(doc.at("placement").at("effects"),
            (Json{{"kind", "redis"}, {"store", m_redis.uri()}, {"key_template", "charged:{event_id}"}}));
}

// An effects key built from the event's own fields ({json:/n}: the payload's n), beside a dedup key
// template that takes a field of its own ({header:absent}, empty): the identify stage evaluates both
// templates' fields, each rendered from its own.
TEST_F(AuditEffects, AnEffectsKeyFromTheEventsFieldsBesideADedupKeyWithFieldsOfItsOwn) {
  for (const char* n : {"0", "1", "3", "4"}) {
    ASSERT_EQ(m_redis.command(fmt::format("SET charged:{} 1200", n)), "+OK\r\n");
  }
  auto result = run_dedupctl(over_pay("audit", m_redis.uri(),
                                      {"--seek", "2", "--key-template", "dedup:pay:{event_id}{header:absent}", "--ttl",
                                       "1h", "--retention", "7d", "--side-effects", "EmailSent=idempotent", "--effects",
                                       m_redis.uri(), "--effects-key-template", "charged:{json:/n}", "-o", "json"}));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  expect_effects(parse(result));
}

TEST_F(AuditEffects, TheTextReportSaysWhatASeekWouldChargeTwice) {
  auto result = run_dedupctl(audit(with_table(), "text"));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(result.out.find("a seek over [seek, committed) would re-apply 2 events: 1 already applied (charged "
                            "twice), 1 never applied"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("2 events are marked processed but their effect is absent: no seek will apply them"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("3 events were applied but nothing guards them: a seek applies them twice"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("lost (marked processed, never applied)    2\n"), std::string::npos) << result.out;
  auto markdown = run_dedupctl(audit(with_table(), "markdown"));
  EXPECT_EQ(markdown.exit_code, 1) << markdown.err;
  EXPECT_NE(markdown.out.find("| unguarded (applied, no record guards it) | 3 |"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("**a seek over [seek, committed) would re-apply 2 events: 1 already applied (charged "
                              "twice), 1 never applied**"),
            std::string::npos)
      << markdown.out;
}

TEST_F(AuditEffects, ATableOrColumnThatDoesNotExistIsExit2ListingTheColumns) {
  auto table = run_dedupctl(audit({"--effects", m_pg.conninfo(), "--effects-table", "chargez"}));
  EXPECT_EQ(table.exit_code, 2) << table.err;
  EXPECT_NE(table.err.find("the effects table chargez does not exist"), std::string::npos) << table.err;
  EXPECT_NE(table.err.find("--effects-table"), std::string::npos) << table.err;
  auto column = run_dedupctl(audit({"--effects", m_pg.conninfo(), "--effects-table", "charges"}));
  EXPECT_EQ(column.exit_code, 2) << column.err;
  EXPECT_NE(column.err.find("has no column event_id (--effects-column); its columns are charged_event, amount"),
            std::string::npos)
      << column.err;
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--effects", m_pg.conninfo()}, "--effects-table NAME"},
           {{"--effects", m_redis.uri()}, "--effects-key-template TEMPLATE"},
           {{"--effects-table", "charges"}, "needs --effects URI"},
           {{"--effects", m_redis.uri(), "--effects-key-template", "charged:{event_id|sha3}"},
            "--effects-key-template"},
           {{"--effects", "file:x.tsv"}, "postgres://…, redis://… or kafka:TOPIC"},
           {{"--effects", m_pg.conninfo(), "--effects-table", "charges", "--effects-key-template", "c:{event_id}"},
            "--effects-key-template is for --effects redis://"},
           {{"--effects", m_redis.uri(), "--effects-key-template", "c:{event_id}", "--effects-table", "charges"},
            "--effects-table is for --effects postgres://"},
           {{"--effects", m_redis.uri(), "--effects-key-template", "c:{event_id}", "--digest", m_dir.file("d")},
            "a merge of shards does not carry the effects"}}) {
    auto result = run_dedupctl(audit(args));
    EXPECT_EQ(result.exit_code, 2) << args[1] << ": " << result.err;
    EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
  }
}

// The effects table's id column in every type an id can live in: char(n) is compared blank-padded
// and whole, never cut to one character; the verdicts are those of a text column.
TEST_F(AuditEffects, EveryIdColumnTypeGivesTheVerdictsOfText) {
  for (const char* type : {"varchar(8)", "char(3)", "char(36)", "character(10)"}) {
    SCOPED_TRACE(type);
    ASSERT_EQ(m_pg.psql(fmt::format("ALTER TABLE charges ALTER COLUMN charged_event TYPE {}", type)).exit_code, 0);
    auto result = run_dedupctl(audit(with_table()));
    EXPECT_EQ(result.exit_code, 1) << result.err;
    Json doc = parse(result);
    expect_effects(doc);
    EXPECT_EQ(finding_counts(doc).count("effects-unmatched"), 0u);
  }
}

// An effects lookup that can never match (an id column of a type no id fits, or rows keyed by
// something else) is not "every processed event lost": effects-unmatched names it, nothing is lost,
// and the replay's counts and safe_from are those of an audit without --effects.
TEST_F(AuditEffects, ALookupThatMatchesNoProcessedEventIsUnmatchedNotAllLost) {
  Json plain = parse(run_dedupctl(audit({})));
  ASSERT_EQ(m_pg.psql("CREATE TABLE by_uuid (event_id uuid PRIMARY KEY); CREATE TABLE by_number (event_id bigint "
                      "PRIMARY KEY); INSERT INTO by_number VALUES (1), (3); CREATE TABLE by_order (order_id text "
                      "PRIMARY KEY); INSERT INTO by_order VALUES ('o-1'), ('o-3')")
                .exit_code,
            0);
  for (const auto& [table, column] : std::vector<std::pair<std::string, std::string>>{
           {"by_uuid", "event_id"}, {"by_number", "event_id"}, {"by_order", "order_id"}}) {
    SCOPED_TRACE(table);
    auto result =
        run_dedupctl(audit({"--effects", m_pg.conninfo(), "--effects-table", table, "--effects-column", column}));
    EXPECT_EQ(result.exit_code, 1) << result.err;
    Json doc = parse(result);
    auto counts = finding_counts(doc);
    EXPECT_EQ(counts.count("lost-effect"), 0u) << doc.dump();
    ASSERT_EQ(counts.count("effects-unmatched"), 1u) << doc.dump();
    EXPECT_EQ(counts.at("effects-unmatched"), 3) << "e-2 (expiring), e-3 and e-6 are marked processed";
    EXPECT_EQ(doc.at("summary").at("effects").at("lost"), 0);
    EXPECT_FALSE(doc.at("replay").contains("would_reapply_applied"));
    EXPECT_EQ(doc.at("replay").at("safe_from"), plain.at("replay").at("safe_from"));
    for (const auto& f : doc.at("findings")) {
      if (f.at("id") == "effects-unmatched") {
        EXPECT_NE(f.at("title").get<std::string>().find(table + "." + column), std::string::npos) << f.dump();
      }
    }
  }
}

// An effects store that cannot be reached is exit 3 and an incomplete report, never a verdict over
// effects not seen; its password shows nowhere.
TEST_F(AuditEffects, AnUnreachableEffectsStoreIsExit3AndItsPasswordIsNeverShown) {
  for (const auto& format : {"json", "text"}) {
    auto result = run_dedupctl(audit({"--effects", "postgresql://billing:Sup3r%2Fs3cret@127.0.0.1:1/shop",
                                      "--effects-table", "charges", "--timeout", "2s"},
                                     format));
    EXPECT_EQ(result.exit_code, 3) << result.err;
    for (const auto& text : {result.out, result.err}) {
      EXPECT_EQ(text.find("Sup3r"), std::string::npos) << text;
      EXPECT_EQ(text.find("s3cret"), std::string::npos) << text;
    }
    if (std::string(format) == "json") {
      Json doc = parse(result);
      EXPECT_EQ(doc.at("complete"), false);
      EXPECT_FALSE(doc.at("summary").contains("effects")) << doc.dump();
    }
  }
}

// The effects' Redis paused, then killed, as the audit starts: exit 3, incomplete.
TEST_F(AuditEffects, AnEffectsStoreThatStopsAnsweringIsExit3AndIncomplete) {
  RedisServer effects;
  DEDUPCTL_REQUIRE_SERVER(effects.available(), effects.why_unavailable());
  ASSERT_EQ(effects.command("CLIENT PAUSE 4000"), "+OK\r\n");
  SpawnOptions options;
  options.pipe_stdout = true;
  options.stderr_file = m_dir.file("stderr");
  std::vector<std::string> argv{DEDUPCTL_BINARY};
  auto args = audit({"--effects", effects.uri(), "--effects-key-template", "charged:{event_id}", "--timeout", "2s"});
  argv.insert(argv.end(), args.begin(), args.end());
  Process run(argv, options);
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  effects.kill();
  std::string out;
  while (auto line = run.read_line(std::chrono::seconds(30))) {
    out += *line + "\n";
  }
  int code = run.wait();
  EXPECT_EQ(code, 3) << out;
  Json doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(read_file(m_dir.file("stderr")).find("check --effects"), std::string::npos)
      << "names the flag that named the server: " << read_file(m_dir.file("stderr"));
}

// trace --effects: each occurrence carries the id's effect, and the verdict uses it.
TEST_F(AuditEffects, TraceShowsTheEffectBesideTheRecordAndItsVerdictUsesIt) {
  std::vector<std::string> args =
      over_pay("trace", m_redis.uri(),
               {"--key-template", "dedup:pay:{event_id}", "--ttl", "1h", "--fail-on", "none", "-o", "json"});
  for (const char* id : {"e-2", "e-0", "e-7", "e-3"}) {
    args.insert(args.end(), {"--event-id", id});
  }
  auto with = args;
  auto effects = with_table();
  with.insert(with.end(), effects.begin(), effects.end());
  auto result = run_dedupctl(with);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Json doc = parse(result);
  const auto& traces = doc.at("traces");
  ASSERT_EQ(traces.size(), 4u);
  auto effect_of = [&](int t) { return traces.at(t).at("occurrences").at(0).at("effect"); };
  auto verdict_of = [&](int t) { return traces.at(t).at("verdict"); };
  EXPECT_EQ(effect_of(0), "not_applied");
  EXPECT_EQ(verdict_of(0).at("id"), "effect-lost") << verdict_of(0);
  EXPECT_EQ(effect_of(1), "applied");
  EXPECT_EQ(verdict_of(1).at("id"), "exposed");
  EXPECT_EQ(verdict_of(1).at("text").get<std::string>().rfind("applied once, unguarded; ", 0), 0u) << verdict_of(1);
  EXPECT_EQ(effect_of(2), "not_applied");
  EXPECT_EQ(verdict_of(2).at("text").get<std::string>().rfind("never applied; ", 0), 0u) << verdict_of(2);
  EXPECT_EQ(effect_of(3), "applied");
  EXPECT_EQ(verdict_of(3).at("id"), "protected");
  EXPECT_EQ(doc.at("placement").at("effects").at("table"), "charges");
  // Without --effects the occurrences say it was not checked, and the verdicts are the records' alone.
  Json plain = parse(run_dedupctl(args));
  EXPECT_TRUE(plain.at("traces").at(0).at("occurrences").at(0).at("effect").is_null());
  EXPECT_EQ(plain.at("traces").at(0).at("verdict").at("id"), "protected");
  // The text report says it too.
  auto text = with;
  text.erase(std::find(text.begin(), text.end(), "-o"), std::find(text.begin(), text.end(), "-o") + 2);
  auto printed = run_dedupctl(text);
  EXPECT_NE(printed.out.find("effect     not applied"), std::string::npos) << printed.out;
}

// An inbox placement with its effects in another table of the same database: the inbox's rows are
// the records, the charges the effects.
TEST_F(AuditEffects, AnInboxPlacementsRowsAgainstItsEffectsTable) {
  // The inbox holds e-2, e-3 (done), e-6 (done) and e-4 (processing): e-2 and e-6 have no charge (lost),
  // e-0 and e-1 have charges and no row (unguarded), as has e-4 under its claim.
  ASSERT_NO_FATAL_FAILURE(plant_inbox());
  std::vector<std::string> args =
      over_pay("audit", m_pg.conninfo(),
               {"--seek", "2", "--inbox-consumer-column", "", "--inbox-status-column", "status", "--inbox-retention",
                "7d", "--retention", "7d", "--fail-on", "none", "-o", "json"});
  auto effects = with_table();
  args.insert(args.end(), effects.begin(), effects.end());
  auto result = run_dedupctl(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Json doc = parse(result);
  EXPECT_EQ(doc.at("placement").at("kind"), "postgres");
  EXPECT_EQ(doc.at("summary").at("effects"),
            (Json{{"checked", 9}, {"applied", 4}, {"not_applied", 5}, {"lost", 2}, {"unguarded", 3}}))
      << doc.at("summary");
}

// watch --effects serves dedupctl_effects by state, as the audit of the same range counts them, and
// promtool lints it.
// The dedupctl_effects gauges of topic pay that a watch on `port` serves, once they equal `want`
// (or after 30 s); `body` gets the last scrape.
std::map<std::string, long long> effects_gauges(int port, const std::map<std::string, long long>& want,
                                                std::string& body) {
  std::map<std::string, long long> seen;
  for (int i = 0; i < 150 && seen != want; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto metrics = http_get(port, "/metrics");
    if (!metrics || metrics->status != 200) {
      continue;
    }
    body = metrics->body;
    seen.clear();
    std::istringstream lines(body);
    for (std::string line; std::getline(lines, line);) {
      std::string prefix = "dedupctl_effects{topic=\"pay\",state=\"";
      if (line.starts_with(prefix)) {
        auto end = line.find('"', prefix.size());
        seen[line.substr(prefix.size(), end - prefix.size())] = std::stoll(line.substr(line.rfind(' ') + 1));
      }
    }
  }
  return seen;
}

TEST_F(AuditEffects, WatchServesTheEffectsAsTheAuditCountsThem) {
  int port = free_port();
  auto args = watch_args(m_broker.bootstrap(), "pay", m_redis.uri(), port,
                         {"--effects", m_redis.uri(), "--effects-key-template", "charged:{event_id}"});
  auto watch = spawn_watch(args, m_dir.file("watch.err"));
  std::string body;
  std::map<std::string, long long> want{{"applied", 4}, {"not_applied", 5}, {"lost", 2}, {"unguarded", 3}};
  EXPECT_EQ(effects_gauges(port, want, body), want) << body << read_file(m_dir.file("watch.err"));
  auto lint = run_command({find_program("promtool"), "check", "metrics"}, body);
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
}

// watch --effects kafka:TOPIC follows the output topic: an effect produced while it runs is counted
// at the next tick.
TEST_F(AuditEffects, WatchFollowsAnOutputTopicOfEffects) {
  ASSERT_EQ(m_broker.command("topic charges 1"), "ok");
  auto effect = [&](const std::string& id, long long offset) {
    return kcat_line(OwnedEvent{.topic = "charges",
                                .partition = 0,
                                .offset = offset,
                                .timestamp_ms = wall_ms(),
                                .headers = {{"event_id", id}},
                                .key = id,
                                .payload = "{}"});
  };
  m_broker.seed("charges", effect("e-0", 0) + effect("e-1", 1) + effect("e-3", 2));
  int port = free_port();
  auto args = watch_args(m_broker.bootstrap(), "pay", m_redis.uri(), port, {"--effects", "kafka:charges"});
  auto watch = spawn_watch(args, m_dir.file("watch.err"));
  std::string body;
  std::map<std::string, long long> before{{"applied", 3}, {"not_applied", 6}, {"lost", 2}, {"unguarded", 2}};
  EXPECT_EQ(effects_gauges(port, before, body), before) << body << read_file(m_dir.file("watch.err"));
  m_broker.seed("charges", effect("e-4", 3));
  std::map<std::string, long long> after{{"applied", 4}, {"not_applied", 5}, {"lost", 2}, {"unguarded", 3}};
  EXPECT_EQ(effects_gauges(port, after, body), after) << body << read_file(m_dir.file("watch.err"));
}

// trace with an effects store that cannot be reached: exit 3, incomplete, no verdict over it.
TEST_F(AuditEffects, TraceWithAnUnreachableEffectsStoreIsExit3) {
  auto result =
      run_dedupctl(over_pay("trace", m_redis.uri(),
                            {"--key-template", "dedup:pay:{event_id}", "--ttl", "1h", "--event-id", "e-2", "--effects",
                             fmt::format("redis://127.0.0.1:{}", free_port()), "--effects-key-template",
                             "charged:{event_id}", "--timeout", "2s", "-o", "json"}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  Json doc = parse(result);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(result.err.find("check --effects"), std::string::npos) << result.err;
}

// watch with an effects store that does not answer: down under its own label (the store answers), no
// gauges it cannot see.
TEST_F(AuditEffects, WatchWithAnUnreachableEffectsStoreShowsTheEffectsDownAndNoGauges) {
  int port = free_port();
  auto args = watch_args(m_broker.bootstrap(), "pay", m_redis.uri(), port,
                         {"--effects", fmt::format("redis://127.0.0.1:{}", free_port()), "--effects-key-template",
                          "charged:{event_id}", "--timeout", "1s"});
  auto watch = spawn_watch(args, m_dir.file("watch.err"));
  std::string body;
  for (int i = 0; i < 100 && body.find("dedupctl_up{system=\"effects\"} 0") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto metrics = http_get(port, "/metrics");
    body = metrics ? metrics->body : "";
  }
  EXPECT_NE(body.find("dedupctl_up{system=\"effects\"} 0"), std::string::npos) << body;
  EXPECT_NE(body.find("dedupctl_up{system=\"redis\"} 1"), std::string::npos) << "the store answered\n" << body;
  EXPECT_EQ(body.find("dedupctl_effects{"), std::string::npos) << body;
  EXPECT_EQ(body.find("dedupctl_events{"), std::string::npos) << body;
  EXPECT_NE(read_file(m_dir.file("watch.err")).find("check --effects"), std::string::npos)
      << read_file(m_dir.file("watch.err"));
}

// replay --repair-lost over the same records and effects: the lost events (e-2, e-6: marked done,
// no charge) and only those.
class ReplayRepair : public AuditEffects {
protected:
  // `effects`: the --effects flags (the charged:<id> keys unless given).
  std::vector<std::string> repair(std::vector<std::string> extra, std::vector<std::string> effects = {}) const {
    if (effects.empty()) {
      effects = {"--effects", m_redis.uri(), "--effects-key-template", "charged:{event_id}"};
    }
    std::vector<std::string> out{"replay", "-b",          m_broker.bootstrap(), "--topic", "pay",
                                 "--via",  m_redis.uri(), "--repair-lost",      "-o",      "json"};
    out.insert(out.end(), effects.begin(), effects.end());
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }
  // The ids of the decisions file's lines that say `decision`.
  static std::vector<std::string> decided(const std::string& path, const std::string& decision) {
    std::vector<std::string> out;
    std::istringstream in(read_file(path));
    for (std::string line; std::getline(in, line);) {
      Json d = Json::parse(line);
      if (d.at("decision") == decision) {
        out.push_back(d.at("event_id"));
      }
    }
    return out;
  }
  std::string exists(const std::string& key) const { return m_redis.command("EXISTS " + key); }
};

TEST_F(ReplayRepair, APlanNamesTheLostEventsAndARunReleasesAndPublishesOnlyThose) {
  auto plan = run_dedupctl(repair(
      {"--key-template", "dedup:pay:{event_id}", "--decisions", m_dir.file("plan.ndjson"), "--fail-on", "none"}));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  Json doc = parse(plan);
  EXPECT_EQ(doc.at("summary").at("would_replay"), 2) << doc.at("summary");
  EXPECT_EQ(doc.at("summary").at("not_lost"), 7) << "of the nine ids";
  EXPECT_EQ(doc.at("summary").at("no_id"), 1);
  EXPECT_EQ(doc.at("placement").at("effects").at("kind"), "redis");
  EXPECT_EQ(decided(m_dir.file("plan.ndjson"), "would-replay"), (std::vector<std::string>{"e-2", "e-6"}));
  EXPECT_EQ(exists("dedup:pay:e-2"), ":1\r\n") << "a plan releases nothing";

  std::string sink = m_dir.file("repaired.ndjson");
  auto run = run_dedupctl(repair({"--key-template", "dedup:pay:{event_id}", "--execute", "--sink", "file:" + sink,
                                  "--decisions", m_dir.file("run.ndjson"), "--checkpoint", m_dir.file("cp")}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(parse(run).at("summary").at("replayed"), 2);
  EXPECT_EQ(decided(m_dir.file("run.ndjson"), "replayed"), (std::vector<std::string>{"e-2", "e-6"}));
  auto published = run_dedupctl({"scan", "--input", sink, "-o", "json", "-q"});
  EXPECT_EQ(parse(published).at("summary").at("events"), 2) << published.err;
  // The lost records are gone; nothing else was touched, no record was written.
  EXPECT_EQ(exists("dedup:pay:e-2"), ":0\r\n");
  EXPECT_EQ(exists("dedup:pay:e-6"), ":0\r\n");
  EXPECT_EQ(m_redis.command("GET dedup:pay:e-3"), "$4\r\ndone\r\n");
  EXPECT_EQ(m_redis.command("GET dedup:pay:e-8"), "$16\r\nprocessing:run-1\r\n");
  EXPECT_EQ(exists("dedup:pay:e-0"), ":0\r\n");
  // The audit now finds nothing lost: e-2 and e-6 wait for the consumer, unguarded and unapplied.
  Json after = parse(run_dedupctl(audit({"--effects", m_redis.uri(), "--effects-key-template", "charged:{event_id}"})));
  EXPECT_EQ(after.at("summary").at("effects").at("lost"), 0) << after.at("summary");
}

// Spring's hash (spring-hash): a field's value compared and the field deleted in one step.
TEST_F(ReplayRepair, TheFieldsOfOneHashAreReleasedAsKeysAre) {
  for (const auto& id : {"e-2", "e-3", "e-6"}) {
    ASSERT_EQ(m_redis.command(fmt::format("HSET billing {} 1795000000000", id)), ":1\r\n");
  }
  auto run = run_dedupctl(repair({"--layout", "spring-hash", "--collection", "billing", "--key-template", "{event_id}",
                                  "--execute", "--sink", "file:" + m_dir.file("out.ndjson"), "--decisions",
                                  m_dir.file("run.ndjson"), "--checkpoint", m_dir.file("cp")}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(decided(m_dir.file("run.ndjson"), "replayed"), (std::vector<std::string>{"e-2", "e-6"}));
  EXPECT_EQ(m_redis.command("HEXISTS billing e-2"), ":0\r\n");
  EXPECT_EQ(m_redis.command("HEXISTS billing e-6"), ":0\r\n");
  EXPECT_EQ(m_redis.command("HEXISTS billing e-3"), ":1\r\n") << "applied: not lost";
}

TEST_F(ReplayRepair, WhatARepairNeedsIsSaidBeforeAnythingIsContacted) {
  auto expect_usage = [](const CommandResult& result, const std::string& says) {
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
  };
  std::vector<std::string> base{"replay", "-b", m_broker.bootstrap(), "--topic", "pay"};
  auto with = [&](std::vector<std::string> extra) {
    auto out = base;
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  };
  expect_usage(run_dedupctl(with({"--via", m_redis.uri(), "--repair-lost"})), "--repair-lost needs --effects");
  expect_usage(run_dedupctl(with({"--no-dedup", "--repair-lost", "--effects", m_redis.uri(), "--effects-key-template",
                                  "c:{event_id}"})),
               "--repair-lost needs --via");
  expect_usage(run_dedupctl(with({"--via", "memory:", "--repair-lost", "--effects", m_redis.uri(),
                                  "--effects-key-template", "c:{event_id}"})),
               "released from the consumer's own Redis keys or inbox table");
  expect_usage(run_dedupctl(with(
                   {"--via", m_redis.uri(), "--effects", m_redis.uri(), "--effects-key-template", "c:{event_id}"})),
               "read by --repair-lost");
  expect_usage(
      run_dedupctl(with({"--via", m_redis.uri(), "--layout", "camel-set", "--collection", "billing", "--repair-lost",
                         "--effects", m_redis.uri(), "--effects-key-template", "c:{event_id}"})),
      "members of one key");
}

TEST_F(ReplayRepair, AnUnreachableEffectsStoreIsExit3ReleasesNothingAndHidesItsPassword) {
  auto result = run_dedupctl(
      repair({"--key-template", "dedup:pay:{event_id}", "--timeout", "2s", "--execute", "--sink",
              "file:" + m_dir.file("out.ndjson"), "--checkpoint", m_dir.file("cp")},
             {"--effects", "postgresql://billing:Sup3r%2Fs3cret@127.0.0.1:1/shop", "--effects-table", "charges"}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  for (const auto& text : {result.out, result.err}) {
    EXPECT_EQ(text.find("Sup3r"), std::string::npos) << text;
    EXPECT_EQ(text.find("s3cret"), std::string::npos) << text;
  }
  EXPECT_EQ(parse(result).at("complete"), false);
  EXPECT_EQ(exists("dedup:pay:e-2"), ":1\r\n");
}

// --effects kafka:TOPIC's flags, checked before anything is read; its reading is checked against the
// real broker (tests/real-kafka, EffectsConsumer): the mock cluster does not look offsets up by time.
TEST_F(AuditEffects, AnOutputTopicsFlagsAreCheckedFirst) {
  auto expect_usage = [](const CommandResult& result, const std::string& says) {
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
  };
  expect_usage(run_dedupctl(audit({"--effects", "kafka:charges", "--effects-table", "charges"})),
               "--effects-table is not for --effects kafka:charges");
  expect_usage(run_dedupctl(audit(
                   {"--effects", m_redis.uri(), "--effects-key-template", "c:{event_id}", "--effects-id", "json:/id"})),
               "--effects-id is for --effects kafka:TOPIC");
  expect_usage(run_dedupctl(audit({"--effects", "kafka:"})), "name the topic");
  expect_usage(run_dedupctl(audit({"--effects", "kafka:no-such-topic"})), "--effects kafka:no-such-topic");
  expect_usage(run_dedupctl(audit({"--effects", "kafka:charges", "--effects-allowance", "soon"})),
               "--effects-allowance");
  std::string dump = m_dir.file("pay.ndjson");
  write_file(dump, planted(m_now, m_now - 30 * k_minute));
  expect_usage(
      run_dedupctl({"audit", "--input", dump, "--store", m_redis.uri(), "--key-template", "dedup:pay:{event_id}",
                    "--ttl", "1h", "--retention", "7d", "--effects", "kafka:charges", "-o", "json"}),
      "a kcat dump (--input) has none");
}

// An inbox's rows: the lost events' rows (done, no charge) deleted only while they read as they did;
// a row the consumer rewrote meanwhile is not (compare and delete over the whole row).
TEST_F(ReplayRepair, AnInboxsLostRowsAreDeletedAndItsOtherRowsKept) {
  ASSERT_NO_FATAL_FAILURE(plant_inbox());
  auto inbox = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"replay",
                                  "-b",
                                  m_broker.bootstrap(),
                                  "--topic",
                                  "pay",
                                  "--via",
                                  m_pg.conninfo(),
                                  "--inbox-consumer-column",
                                  "",
                                  "--inbox-status-column",
                                  "status",
                                  "--repair-lost",
                                  "-o",
                                  "json"};
    auto effects = with_table();
    args.insert(args.end(), effects.begin(), effects.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  auto plan = run_dedupctl(inbox({"--decisions", m_dir.file("plan.ndjson")}));
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(decided(m_dir.file("plan.ndjson"), "would-replay"), (std::vector<std::string>{"e-2", "e-6"}));
  auto run = run_dedupctl(inbox({"--execute", "--sink", "file:" + m_dir.file("out.ndjson"), "--checkpoint",
                                 m_dir.file("cp"), "--decisions", m_dir.file("run.ndjson")}));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(decided(m_dir.file("run.ndjson"), "replayed"), (std::vector<std::string>{"e-2", "e-6"}));
  auto left = m_pg.psql("SELECT string_agg(event_id || ':' || status, ',' ORDER BY event_id) FROM processed_events");
  EXPECT_EQ(left.out, "e-3:done,e-4:processing\n");
}

// A repair over an effects lookup that cannot match would release every processed record and
// publish events whose charge exists: the plan says effects-unmatched, and --execute refuses with
// exit 2 before it releases or publishes anything.
TEST_F(ReplayRepair, AnEffectsLookupThatCannotMatchReleasesNothing) {
  ASSERT_EQ(m_pg.psql("CREATE TABLE by_uuid (event_id uuid PRIMARY KEY)").exit_code, 0);
  std::vector<std::string> effects{"--effects", m_pg.conninfo(), "--effects-table", "by_uuid"};
  auto plan = run_dedupctl(repair({"--key-template", "dedup:pay:{event_id}"}, effects));
  EXPECT_EQ(plan.exit_code, 1) << plan.err;
  EXPECT_EQ(finding_counts(parse(plan)).count("effects-unmatched"), 1u) << plan.out;
  std::string sink = m_dir.file("out.ndjson");
  auto run = run_dedupctl(repair({"--key-template", "dedup:pay:{event_id}", "--execute", "--sink", "file:" + sink,
                                  "--checkpoint", m_dir.file("cp")},
                                 effects));
  EXPECT_EQ(run.exit_code, 2) << run.err;
  EXPECT_NE(run.err.find("found the effect of none of the"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("by_uuid.event_id"), std::string::npos) << run.err;
  for (const auto& id : {"e-2", "e-3", "e-6"}) {
    EXPECT_EQ(exists(std::string("dedup:pay:") + id), ":1\r\n") << id << " was released";
  }
  EXPECT_TRUE(!std::filesystem::exists(sink) || read_file(sink).empty()) << read_file(sink);
  // With the right table the same run repairs e-2 and e-6.
  auto right = run_dedupctl(repair({"--key-template", "dedup:pay:{event_id}", "--execute", "--sink", "file:" + sink,
                                    "--checkpoint", m_dir.file("cp2")},
                                   with_table()));
  ASSERT_EQ(right.exit_code, 0) << right.err;
  EXPECT_EQ(parse(right).at("summary").at("replayed"), 2);
}

// A release log that cannot be written (here a link into a directory that does not exist, as a full
// disk refuses it): exit 3, incomplete, and no record is released, since none was written down first.
TEST_F(ReplayRepair, AReleaseLogThatCannotBeWrittenReleasesNothing) {
  std::filesystem::create_symlink(m_dir.file("gone/cp.released"), m_dir.file("cp.released"));
  auto result = run_dedupctl(repair({"--key-template", "dedup:pay:{event_id}", "--execute", "--sink",
                                     "file:" + m_dir.file("out.ndjson"), "--checkpoint", m_dir.file("cp")}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_EQ(parse(result).at("complete"), false);
  EXPECT_NE(result.err.find("cannot write the repair's release log"), std::string::npos) << result.err;
  EXPECT_EQ(exists("dedup:pay:e-2"), ":1\r\n");
  EXPECT_EQ(exists("dedup:pay:e-6"), ":1\r\n");
}
