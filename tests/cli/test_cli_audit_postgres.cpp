// dedupctl audit against a PostgreSQL inbox table: a real PostgreSQL started by the fixture, the
// mock cluster, the planted events of planted.hpp, and every way the inbox can be wrong.
#include "core/util/time.hpp"
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <thread>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

// processed_at of a row written `ago` ms before `now`, as SQL.
std::string at(long long now, long long ago) { return fmt::format("to_timestamp({} / 1000.0)", now - ago); }

} // namespace

class AuditInbox : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    m_now = wall_ms();
    plant_pay(m_broker, m_now);
    // The consumer writes its row when it processes the event; two were left `processing`.
    std::string sql =
        "CREATE TABLE processed_events (event_id text NOT NULL, consumer_name text NOT NULL, processed_at timestamptz "
        "NOT NULL, status text, PRIMARY KEY (consumer_name, event_id));" +
        fmt::format("INSERT INTO processed_events VALUES ('e-2', 'billing', {}, 'done'), ('e-3', 'billing', {}, "
                    "'done'), ('e-4', 'billing', {}, 'processing'), ('e-6', 'billing', {}, 'done'), ('e-8', 'billing', "
                    "{}, 'processing'), ('e-7', 'shipping', {}, 'done');",
                    at(m_now, 30 * k_minute), at(m_now, 30 * k_minute), at(m_now, 2 * k_hour), at(m_now, 10 * k_minute),
                    at(m_now, k_minute), at(m_now, 40 * k_minute));
    auto result = m_pg.psql(sql);
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }

  // `command` over the planted topic for group billing, against the inbox (or `store`).
  std::vector<std::string> over_inbox(const std::string& command, const std::string& store = "") const {
    return {command,
            "-b",
            m_broker.bootstrap(),
            "--topic",
            "pay",
            "--group",
            "billing",
            "--store",
            store.empty() ? m_pg.conninfo() : store,
            "--inbox-status-column",
            "status"};
  }

  std::vector<std::string> args(std::vector<std::string> extra = {}, std::string store = "") {
    std::vector<std::string> out = over_inbox("audit", store);
    out.insert(out.end(), {"--seek", "2", "--retention", "7d", "-o", "json"});
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }

  // An audit of `topic` on `broker` against the inbox `table` (no consumer column, rows kept a day).
  std::vector<std::string> table_audit(const MockBroker& broker, const std::string& topic,
                                       const std::string& table) const {
    return {"audit",
            "-b",
            broker.bootstrap(),
            "--topic",
            topic,
            "--store",
            m_pg.conninfo(),
            "--inbox-table",
            table,
            "--inbox-consumer-column",
            "",
            "--inbox-retention",
            "1d",
            "--retention",
            "1d",
            "-o",
            "json",
            "--fail-on",
            "none"};
  }

  MockBroker m_broker{{"pay:1"}};
  PostgresServer m_pg;
  long long m_now = 0;
};

TEST_F(AuditInbox, EveryCoverageStateWithTheCleanupJobsRetentionAsTtl) {
  auto result = run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h"}));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = Json::parse(result.out);
  const auto& s = doc.at("summary");
  EXPECT_EQ(s.at("expired"), 1);  // e-0: 48 h old, past the 1 h inbox retention
  EXPECT_EQ(s.at("missing"), 2);  // e-1, e-7 (e-7's row belongs to shipping)
  EXPECT_EQ(s.at("expiring"), 3); // e-2, e-3, e-6: rows deleted by the cleanup long before the log lets go
  EXPECT_EQ(s.at("covered"), 0);
  EXPECT_EQ(s.at("orphaned"), 1);    // e-4: processing, below the committed offset
  EXPECT_EQ(s.at("in_progress"), 1); // e-8
  EXPECT_EQ(s.at("pending"), 1);     // e-9
  EXPECT_EQ(s.at("no_id"), 1);
  EXPECT_EQ(doc.at("placement").at("kind"), "postgres");
  EXPECT_EQ(doc.at("placement").at("ttl_ms"), k_hour);
  EXPECT_EQ(doc.at("placement").at("ttl_source"), "flag");
  auto counts = finding_counts(doc);
  EXPECT_EQ(counts.count("inbox-without-unique-constraint"), 0u);
  EXPECT_EQ(counts.count("namespace-shared"), 0u);
  EXPECT_EQ(counts.at("ttl-gap"), 1);
  EXPECT_EQ(counts.at("orphaned-claim"), 1);
}

TEST_F(AuditInbox, RowsKeptForeverAreCoveredAndTheRetentionCanBeEstimated) {
  auto forever = Json::parse(run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "none"})).out);
  EXPECT_EQ(forever.at("summary").at("covered"), 3);
  EXPECT_EQ(forever.at("summary").at("missing"), 3); // e-0 too: rows never expire, so its absence is a loss
  auto estimated = run_dedupctl(args({"--consumer", "billing"}));
  auto doc = Json::parse(estimated.out);
  EXPECT_EQ(doc.at("placement").at("ttl_source"), "estimate");
  // The oldest billing row (e-4) is 2 h old: the cleanup keeps at least that.
  EXPECT_NEAR(doc.at("placement").at("ttl_ms").get<double>(), 2.0 * k_hour, 60'000.0);
  EXPECT_NE(estimated.err.find("estimated from the oldest row"), std::string::npos);
}

// The inbox's TTL is its cleanup retention: declared (--inbox-retention) or estimated from the oldest
// row. JSON keeps report-v1's names; text and the finding's title say which of the two it was.
TEST_F(AuditInbox, TheInboxRetentionSourceIsNamedInTextJsonAndTheTitle) {
  auto text_args = [&](std::vector<std::string> extra) {
    auto a = args(std::move(extra));
    *(std::find(a.begin(), a.end(), "-o") + 1) = "text";
    return a;
  };
  auto declared = run_dedupctl(text_args({"--consumer", "billing", "--inbox-retention", "1h"}));
  EXPECT_NE(declared.out.find("ttl 1h (--inbox-retention)"), std::string::npos) << declared.out;
  EXPECT_NE(declared.out.find("the TTL (1h, --inbox-retention) is shorter than the topic's retention (7d)"),
            std::string::npos)
      << declared.out;
  auto estimated = run_dedupctl(text_args({"--consumer", "billing"}));
  EXPECT_NE(estimated.out.find("(estimated from the oldest row)  retention 7d (flag)"), std::string::npos)
      << estimated.out;
  EXPECT_NE(estimated.out.find(", estimated from the oldest row) is shorter than the topic's retention (7d)"),
            std::string::npos)
      << estimated.out;
  EXPECT_EQ(estimated.out.find(", flag) is shorter"), std::string::npos) << "an estimate is not a flag";
  auto doc = Json::parse(run_dedupctl(args({"--consumer", "billing"})).out);
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == "ttl-shorter-than-retention") {
      EXPECT_NE(f.at("title").get<std::string>().find("estimated from the oldest row"), std::string::npos);
    }
  }
}

// trace over an inbox: the row's processed_at and status as stored, its remaining retention, and the
// retention's source, declared or estimated.
TEST_F(AuditInbox, TraceShowsTheInboxRowAndWhereItsRetentionCameFrom) {
  auto trace_args = [&](std::vector<std::string> extra, const std::string& format) {
    std::vector<std::string> out = over_inbox("trace");
    out.insert(out.end(), {"--consumer", "billing", "--event-id", "e-2", "--event-id", "e-7", "-o", format});
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  };
  auto declared = run_dedupctl(trace_args({"--inbox-retention", "1h"}, "json"));
  ASSERT_LE(declared.exit_code, 1) << declared.err;
  auto doc = Json::parse(declared.out);
  EXPECT_EQ(doc.at("placement").at("ttl_source"), "flag");
  EXPECT_EQ(doc.at("placement").at("ttl_ms"), k_hour);
  const auto& row = doc.at("traces")[0].at("record");
  EXPECT_EQ(row.at("state"), "present");
  EXPECT_EQ(row.at("status"), "done");
  // processed_at is the row's own, to the millisecond PostgreSQL keeps, not derived from a TTL.
  EXPECT_NEAR(static_cast<double>(dedupctl::core::parse_time(row.at("processed_at").get<std::string>())),
              static_cast<double>(m_now - 30 * k_minute), 1.0);
  EXPECT_NEAR(row.at("pttl_ms").get<double>(), static_cast<double>(30 * k_minute), 120'000.0);
  EXPECT_EQ(doc.at("traces")[1].at("record").at("state"), "absent") << "e-7's row is shipping's";
  auto declared_text = run_dedupctl(trace_args({"--inbox-retention", "1h"}, "text"));
  EXPECT_NE(declared_text.out.find("ttl 1h (--inbox-retention)"), std::string::npos) << declared_text.out;

  auto estimated = run_dedupctl(trace_args({}, "json"));
  auto est = Json::parse(estimated.out);
  EXPECT_EQ(est.at("placement").at("ttl_source"), "estimate");
  EXPECT_NEAR(est.at("placement").at("ttl_ms").get<double>(), 2.0 * k_hour, 60'000.0); // e-4's row, 2 h old
  EXPECT_NEAR(static_cast<double>(
                  dedupctl::core::parse_time(est.at("traces")[0].at("record").at("processed_at").get<std::string>())),
              static_cast<double>(m_now - 30 * k_minute), 1.0);
  EXPECT_NE(estimated.err.find("estimated from the oldest row"), std::string::npos) << estimated.err;
  auto estimated_text = run_dedupctl(trace_args({}, "text"));
  EXPECT_NE(estimated_text.out.find("(estimated from the oldest row)"), std::string::npos) << estimated_text.out;
  EXPECT_EQ(estimated_text.out.find("(flag"), std::string::npos) << estimated_text.out;
}

TEST_F(AuditInbox, WithoutConsumerScopingSharedIdsAreFlagged) {
  ASSERT_EQ(m_pg.psql("INSERT INTO processed_events VALUES ('e-2', 'shipping', now(), 'done')").exit_code, 0);
  auto doc = Json::parse(run_dedupctl(args({"--inbox-retention", "1h"})).out);
  EXPECT_EQ(finding_counts(doc).at("namespace-shared"), 1);
  // Unscoped, shipping's row for e-7 counts as a record: e-7 is no longer missing.
  EXPECT_EQ(doc.at("summary").at("missing"), 1);
}

TEST_F(AuditInbox, ATableWithoutAUniqueConstraintIsAnError) {
  ASSERT_EQ(m_pg.psql("ALTER TABLE processed_events DROP CONSTRAINT processed_events_pkey").exit_code, 0);
  auto doc = Json::parse(run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h"})).out);
  EXPECT_EQ(finding_counts(doc).at("inbox-without-unique-constraint"), 1);
  ASSERT_EQ(m_pg.psql("CREATE UNIQUE INDEX ON processed_events (event_id, consumer_name)").exit_code, 0);
  doc = Json::parse(run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h"})).out);
  EXPECT_EQ(finding_counts(doc).count("inbox-without-unique-constraint"), 0u);
}

TEST_F(AuditInbox, AMissingTableOrColumnIsExit2NamingItAndListingTheColumns) {
  auto table = run_dedupctl(args({"--inbox-table", "public.nope"}));
  EXPECT_EQ(table.exit_code, 2);
  EXPECT_NE(table.err.find("the inbox table public.nope does not exist"), std::string::npos) << table.err;
  auto column = run_dedupctl(args({"--inbox-time-column", "handled_at"}));
  EXPECT_EQ(column.exit_code, 2);
  EXPECT_NE(column.err.find("has no column handled_at (--inbox-time-column); its columns are event_id, consumer_name, "
                            "processed_at, status"),
            std::string::npos)
      << column.err;
}

// A column of another type than the layout reads (processed_at as text) is a usage error naming the
// column and its type, found from the catalog before any read: exit 2, not an unreachable server.
TEST_F(AuditInbox, AColumnOfTheWrongTypeIsExit2NamingTheColumnAndItsType) {
  auto created = m_pg.psql("CREATE TABLE processed_text (event_id text, consumer_name text, processed_at text, status "
                           "text, PRIMARY KEY (consumer_name, event_id));");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  for (std::string command : {"audit", "trace"}) {
    auto args = over_inbox(command);
    args.insert(args.end(), {"--inbox-table", "processed_text", "-o", "json"});
    if (command == "trace") {
      args.insert(args.end(), {"--event-id", "e-2"});
    }
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << command << ": " << result.err;
    EXPECT_NE(result.err.find("the column processed_at of processed_text is text, but it is read as a time"),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("--inbox-time-column"), std::string::npos) << result.err;
  }
  auto boolean = m_pg.psql("CREATE TABLE processed_flag (event_id boolean, consumer_name text, processed_at "
                           "timestamptz, status text, PRIMARY KEY (consumer_name, event_id));");
  ASSERT_EQ(boolean.exit_code, 0) << boolean.err;
  auto args = over_inbox("audit");
  args.insert(args.end(), {"--inbox-table", "processed_flag", "-o", "json"});
  auto result = run_dedupctl(args);
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("the column event_id of processed_flag is boolean, which no event id fits"),
            std::string::npos)
      << result.err;
}

TEST_F(AuditInbox, NothingInTheDatabaseIsModified) {
  auto before = m_pg.psql("SELECT count(*), max(xmin::text) FROM processed_events").out;
  auto result = run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h"}));
  ASSERT_EQ(result.exit_code, 1) << "the audit must have run to its findings: " << result.err;
  EXPECT_EQ(Json::parse(result.out).at("complete"), true);
  EXPECT_EQ(m_pg.psql("SELECT count(*), max(xmin::text) FROM processed_events").out, before);
}

TEST_F(AuditInbox, TheServerStoppedMidAuditIsExit3AndIncomplete) {
  // Hold the table so the audit waits on it, then stop the server under it.
  SpawnOptions hold_options;
  hold_options.pipe_stdin = true;
  Process hold({find_program("psql", {"/usr/lib/postgresql/15/bin"}), "-X", "-q", "-d", m_pg.conninfo()}, hold_options);
  hold.write_line("BEGIN; LOCK TABLE processed_events IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  SpawnOptions options;
  options.pipe_stdout = true;
  std::vector<std::string> argv{DEDUPCTL_BINARY};
  for (auto& arg : args({"--consumer", "billing", "--inbox-retention", "1h", "-q", "--timeout", "30s"})) {
    argv.push_back(arg);
  }
  Process audit(argv, options);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  m_pg.stop();
  std::string out;
  while (auto line = audit.read_line(std::chrono::seconds(30))) {
    out += *line + "\n";
  }
  EXPECT_EQ(audit.wait(), 3);
  auto doc = Json::parse(out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("PostgreSQL"), std::string::npos);
}

TEST_F(AuditInbox, AnInboxSnapshotGivesTheSameVerdictsAsTheLiveTable) {
  TempDir dir;
  auto snap = run_dedupctl({"snapshot", "--store", m_pg.conninfo(), "--inbox-status-column", "status", "--consumer",
                            "billing", "--output", dir.file("inbox.tsv")});
  ASSERT_EQ(snap.exit_code, 0) << snap.err;
  std::string text = read_file(dir.file("inbox.tsv"));
  EXPECT_EQ(text.rfind("# dedupctl-inbox-snapshot v1\ttaken_at=", 0), 0u) << text;
  EXPECT_NE(text.find("e-4\tbilling\t"), std::string::npos) << text;
  EXPECT_EQ(text.find("shipping"), std::string::npos) << "--consumer scopes the export";
  EXPECT_EQ(text.find("\n\n"), std::string::npos) << "one line a row";
  auto live = Json::parse(run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h"})).out);
  auto offline = Json::parse(run_dedupctl({"audit", "-b", m_broker.bootstrap(), "--topic", "pay", "--group", "billing",
                                           "--seek", "2", "--store", "file:" + dir.file("inbox.tsv"), "--consumer",
                                           "billing", "--inbox-retention", "1h", "--retention", "7d", "-o", "json"})
                                 .out);
  EXPECT_EQ(offline.at("summary"), live.at("summary"));
  EXPECT_EQ(finding_counts(offline), finding_counts(live));
}

// The two lookup paths (batched = ANY, the whole inbox loaded with COPY) are one placement: same
// verdicts, scoped or not, and the report says which one ran.
TEST_F(AuditInbox, BatchedAndLoadedLookupsGiveTheSameVerdicts) {
  ASSERT_EQ(m_pg.psql("INSERT INTO processed_events VALUES ('e-2', 'shipping', now(), 'done')").exit_code, 0);
  for (std::vector<std::string> scope :
       {std::vector<std::string>{"--consumer", "billing"}, std::vector<std::string>{}}) {
    scope.insert(scope.end(), {"--inbox-retention", "1h"});
    auto with = [&](const std::string& lookup) {
      auto extra = scope;
      extra.insert(extra.end(), {"--inbox-lookup", lookup});
      auto result = run_dedupctl(args(extra));
      EXPECT_EQ(result.exit_code, 1) << result.err;
      return Json::parse(result.out);
    };
    auto batches = with("batches");
    auto load = with("load");
    EXPECT_EQ(batches.at("summary"), load.at("summary")) << scope.size();
    EXPECT_EQ(finding_counts(batches), finding_counts(load));
    EXPECT_EQ(batches.at("settings").at("inbox lookup"), "batched = ANY");
    EXPECT_EQ(load.at("settings").at("inbox lookup"), "COPY into memory");
  }
  // A small text-keyed table is loaded by default.
  auto doc = Json::parse(run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h"})).out);
  EXPECT_EQ(doc.at("settings").at("inbox lookup"), "COPY into memory");
  EXPECT_EQ(doc.at("summary").at("orphaned"), 1);
}

// A uuid column's equality is not byte equality: an upper-case id in the log still finds its row,
// so such a table is looked up in batches, and loading it is refused.
TEST_F(AuditInbox, AUuidIdColumnIsLookedUpInItsOwnType) {
  long long now = wall_ms();
  std::string lines;
  const char* ids[] = {"0A0B0C0D-0000-4000-8000-000000000001", "0a0b0c0d-0000-4000-8000-000000000002", "e-17"};
  for (int i = 0; i < 3; ++i) {
    lines += kcat_line(OwnedEvent{
        .topic = "uu", .offset = i, .timestamp_ms = now - 60'000, .headers = {{"event_id", ids[i]}}, .payload = "{}"});
  }
  MockBroker broker({"uu:1"});
  broker.seed("uu", lines);
  ASSERT_EQ(m_pg.psql("CREATE TABLE uinbox (event_id uuid PRIMARY KEY, processed_at timestamptz NOT NULL);"
                      "INSERT INTO uinbox VALUES ('0a0b0c0d-0000-4000-8000-000000000001', now())")
                .exit_code,
            0);
  std::vector<std::string> base = table_audit(broker, "uu", "uinbox");
  auto result = run_dedupctl(base);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("summary").at("covered"), 1) << "the upper-case id matches its lower-case uuid row";
  EXPECT_EQ(doc.at("summary").at("missing"), 2) << "e-17 cannot be a uuid: no row, and no failed batch";
  EXPECT_EQ(doc.at("settings").at("inbox lookup"), "batched = ANY");
  base.insert(base.end(), {"--inbox-lookup", "load"});
  auto refused = run_dedupctl(base);
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("uinbox.event_id is uuid; use --inbox-lookup batches"), std::string::npos) << refused.err;
}

// Every type an id can live in, compared whole in the column's own type: char(n) is blank-padded
// and must not be read as `character`, which is char(1) and cuts every id to one character. Each
// table holds the first two ids; the third has no row, and the one too long for the column cannot
// have one.
struct IdColumn {
  const char* type;
  std::vector<std::string> ids; // two with rows, one without, then (maybe) one the column cannot hold
};
const std::vector<IdColumn>& id_columns() {
  static const std::vector<std::string> uuids{"0a0b0c0d-0000-4000-8000-000000000001",
                                              "0a0b0c0d-0000-4000-8000-000000000002",
                                              "0a0b0c0d-0000-4000-8000-000000000003"};
  static const std::vector<IdColumn> columns{
      {"text", uuids},
      {"varchar(36)", {uuids[0], uuids[1], uuids[2], uuids[2] + "-and-more"}},
      {"char(36)", {uuids[0], uuids[1], uuids[2], uuids[2] + "-and-more"}},
      {"character(40)", uuids},
      {"char(5)", {"e-1", "e-22", "e-333", "e-4444"}},
      {"uuid", uuids},
      {"bigint", {"101", "102", "103"}},
  };
  return columns;
}

TEST_F(AuditInbox, EveryIdColumnTypeIsComparedWholeInItsOwnType) {
  long long now = wall_ms();
  for (const auto& column : id_columns()) {
    SCOPED_TRACE(column.type);
    std::string topic = fmt::format("typed-{}", &column - id_columns().data());
    std::string lines;
    for (std::size_t i = 0; i < column.ids.size(); ++i) {
      lines += kcat_line(OwnedEvent{.topic = topic,
                                    .offset = static_cast<long long>(i),
                                    .timestamp_ms = now - 60'000,
                                    .headers = {{"event_id", column.ids[i]}},
                                    .payload = "{}"});
    }
    MockBroker broker({topic + ":1"});
    broker.seed(topic, lines);
    ASSERT_EQ(m_pg.psql(fmt::format("DROP TABLE IF EXISTS typed; CREATE TABLE typed (event_id {} PRIMARY KEY, "
                                    "processed_at timestamptz NOT NULL); INSERT INTO typed VALUES ('{}', now()), "
                                    "('{}', now())",
                                    column.type, column.ids[0], column.ids[1]))
                  .exit_code,
              0);
    for (const char* lookup : {"batches", "auto"}) {
      auto args = table_audit(broker, topic, "typed");
      args.insert(args.end(), {"--inbox-lookup", lookup});
      auto result = run_dedupctl(args);
      ASSERT_EQ(result.exit_code, 0) << lookup << result.err;
      auto doc = Json::parse(result.out);
      EXPECT_EQ(doc.at("summary").at("covered"), 2) << lookup;
      EXPECT_EQ(doc.at("summary").at("missing"), column.ids.size() - 2) << lookup;
    }
  }
}

TEST_F(AuditInbox, NoServerListeningIsExit3AndIncomplete) {
  int port = free_port();
  auto result =
      run_dedupctl(args({"--inbox-retention", "1h"}, fmt::format("postgresql://auditor@127.0.0.1:{}/postgres", port)));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("cannot reach PostgreSQL"), std::string::npos)
      << result.out;
}

TEST_F(AuditInbox, AWrongPasswordIsExit3AndNeverPrinted) {
  ASSERT_EQ(m_pg.psql("CREATE ROLE auditor LOGIN PASSWORD 'right-one'; GRANT SELECT ON processed_events TO auditor")
                .exit_code,
            0);
  std::string uri = fmt::format("postgresql://auditor:{}@127.0.0.1:{}/postgres", "s3cr3t-wrong", m_pg.port());
  auto result = run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h"}, uri));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("password authentication failed"), std::string::npos)
      << result.out;
  EXPECT_EQ(result.out.find("s3cr3t-wrong"), std::string::npos);
  EXPECT_EQ(result.err.find("s3cr3t-wrong"), std::string::npos);
  // The right password reads the table over TCP.
  std::string right = fmt::format("postgresql://auditor:right-one@127.0.0.1:{}/postgres", m_pg.port());
  auto ok = run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h"}, right));
  EXPECT_EQ(ok.exit_code, 1) << ok.err;
}

// A statement that waits past --timeout (here on a lock) is cut by statement_timeout: exit 3, in
// either lookup path.
TEST_F(AuditInbox, AStatementPastTheTimeoutIsExit3) {
  SpawnOptions hold_options;
  hold_options.pipe_stdin = true;
  Process hold({find_program("psql", {"/usr/lib/postgresql/15/bin"}), "-X", "-q", "-d", m_pg.conninfo()}, hold_options);
  hold.write_line("BEGIN; LOCK TABLE processed_events IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (std::string lookup : {"batches", "load"}) {
    auto result = run_dedupctl(
        args({"--consumer", "billing", "--inbox-retention", "1h", "--timeout", "1s", "--inbox-lookup", lookup}));
    EXPECT_EQ(result.exit_code, 3) << lookup << ": " << result.err;
    auto doc = Json::parse(result.out);
    EXPECT_EQ(doc.at("complete"), false);
    EXPECT_NE(doc.at("error").at("message").get<std::string>().find("timed out after 1000 ms"), std::string::npos)
        << result.out;
  }
}

// PostgreSQL takes 'infinity' and '-infinity' for a timestamp. The cleanup's retention is counted
// from processed_at, which such a row does not give: every command that reads the inbox ends with
// exit 2 naming the table, the rows and what to write instead, with no verdict and no snapshot.
TEST_F(AuditInbox, AnInfiniteProcessedAtIsExit2NamingTheRowsOnEveryPath) {
  TempDir dir;
  for (std::string value : {"infinity", "-infinity"}) {
    SCOPED_TRACE(value);
    ASSERT_EQ(m_pg.psql(fmt::format("UPDATE processed_events SET processed_at = '{}' WHERE event_id IN ('e-3', 'e-6') "
                                    "AND consumer_name = 'billing'",
                                    value))
                  .exit_code,
              0);
    auto expect_named = [&](const CommandResult& result, const std::string& what) {
      EXPECT_EQ(result.exit_code, 2) << what << ": " << result.err;
      if (!result.out.empty()) { // -o json: the error's document, and no verdict
        auto doc = Json::parse(result.out);
        EXPECT_EQ(doc.at("complete"), false) << what;
        EXPECT_EQ(doc.at("summary"), Json::object()) << what;
        EXPECT_EQ(doc.at("findings"), Json::array()) << what;
      }
      EXPECT_NE(result.err.find(fmt::format("the inbox table processed_events has 2 rows whose processed_at is "
                                            "infinite, the first event_id e-3 (consumer_name billing): {}",
                                            value)),
                std::string::npos)
          << what << ": " << result.err;
      EXPECT_NE(result.err.find("set processed_at to when the event was processed"), std::string::npos)
          << what << ": " << result.err;
    };
    for (std::string lookup : {"batches", "load"}) {
      expect_named(run_dedupctl(args({"--consumer", "billing", "--inbox-retention", "1h", "--inbox-lookup", lookup})),
                   "audit, " + lookup);
      // Without --inbox-retention the retention is estimated from the oldest row first.
      expect_named(run_dedupctl(args({"--consumer", "billing", "--inbox-lookup", lookup})), "estimate, " + lookup);
    }
    auto trace = over_inbox("trace");
    trace.insert(trace.end(), {"--consumer", "billing", "--event-id", "e-3", "--inbox-retention", "1h"});
    auto traced = run_dedupctl(trace);
    expect_named(traced, "trace");
    EXPECT_EQ(traced.out, "");
    auto snapshot = run_dedupctl({"snapshot", "--store", m_pg.conninfo(), "--inbox-status-column", "status",
                                  "--consumer", "billing", "--output", dir.file("inbox.tsv")});
    expect_named(snapshot, "snapshot");
    EXPECT_FALSE(std::filesystem::exists(dir.file("inbox.tsv"))) << "no snapshot is written";
  }
}

// The inbox tables the libraries write, made from their published DDL and filled as each library
// fills them (PostgreSQL): --layout gives the table, the columns, the time column's type and the
// in-progress rule, so that an audit needs no --inbox-* flag. The rows mirror AuditInbox's
// (e-2, e-3 and e-6 processed; e-4 and e-8 in progress where the library has that state; e-7 under
// another scope), with the same verdicts.
class InboxLayouts : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    m_now = wall_ms();
    plant_pay(m_broker, m_now);
  }

  void sql(const std::string& text) {
    auto result = m_pg.psql(text);
    ASSERT_EQ(result.exit_code, 0) << result.err << "\n" << text;
  }

  Json audit(std::vector<std::string> extra, const std::string& seek = "2", int expect_exit = 1) {
    std::vector<std::string> args{"audit",
                                  "-b",
                                  m_broker.bootstrap(),
                                  "--topic",
                                  "pay",
                                  "--group",
                                  "billing",
                                  "--store",
                                  m_pg.conninfo(),
                                  "--seek",
                                  seek,
                                  "--retention",
                                  "7d",
                                  "--inbox-retention",
                                  "1h",
                                  "-o",
                                  "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, expect_exit) << result.err;
    return Json::parse(result.out, nullptr, false);
  }

  long long ms(long long ago) const { return m_now - ago; }

  MockBroker m_broker{{"pay:1"}};
  PostgresServer m_pg;
  long long m_now = 0;
};

// Eventuate Tram: received_messages(consumer_id, message_id, creation_time BIGINT ms), no status.
// Its DDL creates eventuate.received_messages, outside the search path: the layout reads that table, and
// a table of the same name on the search path (another library's, or a copy) is not taken for it.
TEST_F(InboxLayouts, EventuateReceivedMessagesWithEpochMilliseconds) {
  sql("CREATE SCHEMA eventuate; CREATE TABLE eventuate.received_messages (consumer_id VARCHAR(1000), message_id "
      "VARCHAR(1000), creation_time BIGINT, PRIMARY KEY(consumer_id, message_id)); CREATE TABLE received_messages "
      "(consumer_id VARCHAR(1000), message_id VARCHAR(1000), creation_time BIGINT, PRIMARY KEY(consumer_id, "
      "message_id));" +
      fmt::format("INSERT INTO eventuate.received_messages VALUES ('billing', 'e-2', {}), ('billing', 'e-3', {}), "
                  "('billing', 'e-6', {}), ('shipping', 'e-7', {});",
                  ms(30 * k_minute), ms(30 * k_minute), ms(10 * k_minute), ms(40 * k_minute)));
  Json doc = audit({"--layout", "eventuate", "--consumer", "billing"});
  const auto& s = doc.at("summary");
  EXPECT_EQ(s.at("expiring"), 3) << s.dump(); // e-2, e-3, e-6: counted from creation_time, 1 h
  EXPECT_EQ(s.at("missing"), 2);              // e-1, e-7 (shipping's)
  EXPECT_EQ(s.at("expired"), 2);              // e-0 and e-4 (no row, past the retention)
  EXPECT_EQ(doc.at("placement").at("layout"), "eventuate");
  EXPECT_EQ(finding_counts(doc).count("inbox-without-unique-constraint"), 0u);
  // trace shows the row as Eventuate wrote it: its columns, the time in epoch ms as it is.
  auto traced =
      run_dedupctl({"trace", "-b", m_broker.bootstrap(), "--topic", "pay", "--store", m_pg.conninfo(), "--layout",
                    "eventuate", "--consumer", "billing", "--event-id", "e-6", "--fail-on", "none", "-o", "json"});
  ASSERT_EQ(traced.exit_code, 0) << traced.err;
  Json record = Json::parse(traced.out).at("traces").at(0).at("record");
  EXPECT_EQ(
      record.at("fields"),
      (Json{{"consumer_id", "billing"}, {"message_id", "e-6"}, {"creation_time", std::to_string(ms(10 * k_minute))}}))
      << record.dump();
}

// discover, given a database it was never told about: the tables whose columns fit a library's inbox
// (MassTransit's uuid table in a schema of its own among them), the one holding the topic's ids first,
// with the consumer its rows belong to; its flags audit the inbox as the layout says.
TEST_F(InboxLayouts, DiscoverFindsTheInboxLayoutTableAndConsumer) {
  sql("CREATE TABLE received_messages (consumer_id VARCHAR(1000), message_id VARCHAR(1000), creation_time BIGINT, "
      "PRIMARY KEY(consumer_id, message_id)); CREATE TABLE orders (id text, created_at timestamptz);"
      "CREATE SCHEMA billing; CREATE TABLE billing.\"InboxState\" (\"Id\" bigint, \"MessageId\" uuid NOT NULL, "
      "\"ConsumerId\" uuid NOT NULL, \"Received\" timestamptz NOT NULL, \"Consumed\" timestamptz);" +
      fmt::format("INSERT INTO received_messages VALUES ('billing', 'e-2', {0}), ('billing', 'e-3', {0}), "
                  "('billing', 'e-6', {0}), ('shipping', 'e-3', {0});",
                  ms(30 * k_minute)));
  auto result = run_dedupctl(
      {"discover", "-b", m_broker.bootstrap(), "--topic", "pay", "--store", m_pg.conninfo(), "-o", "json"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Json doc = Json::parse(result.out);
  const Json& candidates = doc.at("candidates");
  ASSERT_EQ(candidates.size(), 1u) << result.out;
  EXPECT_EQ(candidates[0].at("layout"), "eventuate");
  EXPECT_EQ(candidates[0].at("found"), 3);
  std::string command = candidates[0].at("command");
  EXPECT_NE(command.find("--layout eventuate --inbox-table 'received_messages' --consumer 'billing'"),
            std::string::npos)
      << command;
  std::string tried = doc.at("tried").dump();
  EXPECT_NE(tried.find("--layout masstransit --inbox-table billing.\\\"InboxState\\\": 0 of"), std::string::npos)
      << tried;
  Json audited = audit({"--layout", "eventuate", "--inbox-table", "received_messages", "--consumer", "billing"});
  EXPECT_EQ(audited.at("summary").at("expiring"), 3) << audited.at("summary").dump();
  // A database with no table of an inbox's shape: exit 1, saying what was looked at.
  sql("DROP TABLE received_messages; DROP TABLE billing.\"InboxState\";");
  auto none = run_dedupctl({"discover", "-b", m_broker.bootstrap(), "--topic", "pay", "--store", m_pg.conninfo()});
  EXPECT_EQ(none.exit_code, 1) << none.err;
  EXPECT_NE(none.err.find("among 1 tables"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("no table has the columns of an inbox layout"), std::string::npos) << none.err;
}

// One odd table (Camel's table with its time as text) does not stop discover for the whole database:
// the candidate is skipped, and discover says so, in JSON and in text.
TEST_F(InboxLayouts, DiscoverSkipsATableItsLayoutCannotReadAndSaysSo) {
  sql("CREATE TABLE received_messages (consumer_id VARCHAR(1000), message_id VARCHAR(1000), creation_time BIGINT, "
      "PRIMARY KEY(consumer_id, message_id)); CREATE TABLE camel_messageprocessed (processorname text, messageid "
      "text, createdat text);" +
      fmt::format("INSERT INTO received_messages VALUES ('billing', 'e-2', {0}), ('billing', 'e-3', {0}); INSERT INTO "
                  "camel_messageprocessed VALUES ('billing', 'e-2', 'yesterday');",
                  ms(30 * k_minute)));
  std::vector<std::string> args{"discover", "-b", m_broker.bootstrap(), "--topic", "pay", "--store", m_pg.conninfo()};
  auto json = args;
  json.insert(json.end(), {"-o", "json"});
  auto result = run_dedupctl(json);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Json doc = Json::parse(result.out);
  ASSERT_EQ(doc.at("candidates").size(), 1u) << result.out;
  EXPECT_EQ(doc.at("candidates")[0].at("layout"), "eventuate");
  ASSERT_EQ(doc.at("skipped").size(), 1u) << result.out;
  EXPECT_NE(doc.at("skipped")[0].get<std::string>().find(
                "--layout camel-jdbc: the column createdat of camel_messageprocessed is text"),
            std::string::npos)
      << result.out;
  auto text = run_dedupctl(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("skipped  --layout camel-jdbc: the column createdat"), std::string::npos) << text.out;
}

// replay --via through Eventuate's table writes Eventuate's rows (consumer_id, message_id,
// creation_time in epoch ms) in the batch's transaction; a rerun publishes nothing.
TEST_F(InboxLayouts, ReplayWritesEventuatesRows) {
  sql("CREATE SCHEMA eventuate; CREATE TABLE eventuate.received_messages (consumer_id VARCHAR(1000), message_id "
      "VARCHAR(1000), creation_time BIGINT, PRIMARY KEY(consumer_id, message_id)); INSERT INTO "
      "eventuate.received_messages VALUES ('billing', 'e-2', 1);");
  TempDir dir;
  auto replay = [&] {
    auto result = run_dedupctl({"replay", "-b", m_broker.bootstrap(), "--topic", "pay", "--via", m_pg.conninfo(),
                                "--layout", "eventuate", "--consumer", "billing", "--sink",
                                "file:" + dir.file("out.ndjson"), "--execute", "--fail-on", "none", "-o", "json"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return Json::parse(result.out, nullptr, false);
  };
  long long before = ms(0);
  Json first = replay();
  long long after = wall_ms();
  EXPECT_EQ(first.at("placement").at("layout"), "eventuate");
  EXPECT_EQ(first.at("summary").at("skipped_duplicate"), 1) << first.at("summary").dump(); // e-2
  long long replayed = first.at("summary").at("replayed").get<long long>();
  EXPECT_GT(replayed, 0);
  auto rows =
      m_pg.psql("SELECT count(*), min(creation_time), max(creation_time) FROM eventuate.received_messages WHERE "
                "consumer_id = 'billing' AND message_id <> 'e-2'");
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  long long count = 0, low = 0, high = 0;
  ASSERT_EQ(std::sscanf(rows.out.c_str(), "%lld|%lld|%lld", &count, &low, &high), 3) << rows.out;
  EXPECT_EQ(count, replayed);
  EXPECT_GE(low, before - 1000) << "the time in epoch milliseconds, as Eventuate writes it";
  EXPECT_LE(high, after + 1000);
  Json second = replay();
  EXPECT_EQ(second.at("summary").at("replayed"), 0) << second.at("summary").dump();
}

// Spring Integration's JdbcMetadataStore: INT_METADATA_STORE, the time in ms as text, REGION 'DEFAULT'
// unless --consumer names another.
TEST_F(InboxLayouts, SpringJdbcMetadataStoreWithTextMillisecondsAndItsRegion) {
  sql("CREATE TABLE INT_METADATA_STORE (METADATA_KEY VARCHAR(255) NOT NULL, METADATA_VALUE VARCHAR(4000), REGION "
      "VARCHAR(100) NOT NULL, constraint INT_METADATA_STORE_PK primary key (METADATA_KEY, REGION));" +
      fmt::format("INSERT INTO INT_METADATA_STORE VALUES ('e-2', '{}', 'DEFAULT'), ('e-3', '{}', 'DEFAULT'), "
                  "('e-6', '{}', 'DEFAULT'), ('e-7', '{}', 'shipping');",
                  ms(30 * k_minute), ms(30 * k_minute), ms(10 * k_minute), ms(40 * k_minute)));
  Json doc = audit({"--layout", "spring-jdbc"});
  EXPECT_EQ(doc.at("summary").at("expiring"), 3) << doc.at("summary").dump();
  EXPECT_EQ(doc.at("summary").at("missing"), 2);
  Json shipping = audit({"--layout", "spring-jdbc", "--consumer", "shipping"});
  EXPECT_EQ(shipping.at("summary").at("expiring"), 1) << "only e-7 is in region shipping";
}

// Camel's JdbcMessageIdRepository: CAMEL_MESSAGEPROCESSED as Camel creates it (no key at all).
TEST_F(InboxLayouts, CamelMessageProcessedAsCamelCreatesIt) {
  sql("CREATE TABLE CAMEL_MESSAGEPROCESSED (processorName VARCHAR(255), messageId VARCHAR(100), createdAt TIMESTAMP);" +
      fmt::format("INSERT INTO CAMEL_MESSAGEPROCESSED VALUES ('billing', 'e-2', {0}), ('billing', 'e-3', {0}), "
                  "('billing', 'e-6', {1});",
                  at(m_now, 30 * k_minute), at(m_now, 10 * k_minute)));
  Json doc = audit({"--layout", "camel-jdbc", "--consumer", "billing"});
  EXPECT_EQ(doc.at("summary").at("expiring"), 3) << doc.at("summary").dump();
  EXPECT_EQ(finding_counts(doc).count("inbox-without-unique-constraint"), 1u) << "as Camel creates it";
}

// NServiceBus's SQL outbox: "<endpoint>_OutboxData", quoted; a row is in progress until Dispatched.
TEST_F(InboxLayouts, NServiceBusOutboxWithDispatchedAsTheInProgressRule) {
  sql("CREATE TABLE \"Billing_OutboxData\" (\"MessageId\" character varying(200) NOT NULL PRIMARY KEY, "
      "\"Dispatched\" boolean NOT NULL DEFAULT false, \"DispatchedAt\" timestamp with time zone, "
      "\"PersistenceVersion\" character varying(23) NOT NULL, \"Operations\" jsonb NOT NULL);" +
      fmt::format("INSERT INTO \"Billing_OutboxData\" VALUES ('e-2', true, {0}, '8.0', '[]'), ('e-3', true, {0}, "
                  "'8.0', '[]'), ('e-4', false, NULL, '8.0', '[]'), ('e-6', true, {1}, '8.0', '[]'), ('e-8', false, "
                  "NULL, '8.0', '[]');",
                  at(m_now, 30 * k_minute), at(m_now, 10 * k_minute)));
  auto refused = run_dedupctl(
      {"audit", "-b", m_broker.bootstrap(), "--topic", "pay", "--store", m_pg.conninfo(), "--layout", "nservicebus"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--inbox-table"), std::string::npos) << refused.err;
  Json doc = audit({"--layout", "nservicebus", "--inbox-table", "\"Billing_OutboxData\""});
  const auto& s = doc.at("summary");
  EXPECT_EQ(s.at("expiring"), 3) << s.dump();
  EXPECT_EQ(s.at("orphaned"), 1);    // e-4: not dispatched, below the committed offset
  EXPECT_EQ(s.at("in_progress"), 1); // e-8
}

// MassTransit's inbox ("InboxState", uuid ids) and Wolverine's (status Incoming/Handled, keep_until):
// events of their own, with uuid ids.
TEST_F(InboxLayouts, MassTransitAndWolverineWithUuidIds) {
  const std::string a = "5f0c3e8e-0000-4000-8000-00000000000a", b = "5f0c3e8e-0000-4000-8000-00000000000b",
                    c = "5f0c3e8e-0000-4000-8000-00000000000c";
  m_broker.seed("pay", envelope(10, m_now - 20 * k_minute, a, "PaymentCharged") +
                           envelope(11, m_now - 20 * k_minute, b, "PaymentCharged") +
                           envelope(12, m_now - 20 * k_minute, c, "PaymentCharged"));
  m_broker.commit("billing", "pay", "0=13");
  const std::string consumer = "9a1c0000-0000-4000-8000-000000000001";
  sql("CREATE TABLE \"InboxState\" (\"Id\" bigint GENERATED BY DEFAULT AS IDENTITY, \"MessageId\" uuid NOT NULL, "
      "\"ConsumerId\" uuid NOT NULL, \"LockId\" uuid NOT NULL, \"RowVersion\" bytea, \"Received\" timestamp with time "
      "zone NOT NULL, \"ReceiveCount\" integer NOT NULL, \"ExpirationTime\" timestamp with time zone, \"Consumed\" "
      "timestamp with time zone, \"Delivered\" timestamp with time zone, \"LastSequenceNumber\" bigint, CONSTRAINT "
      "\"PK_InboxState\" PRIMARY KEY (\"Id\"), CONSTRAINT \"AK_InboxState_MessageId_ConsumerId\" UNIQUE "
      "(\"MessageId\", \"ConsumerId\"));" +
      fmt::format("INSERT INTO \"InboxState\" (\"MessageId\", \"ConsumerId\", \"LockId\", \"Received\", "
                  "\"ReceiveCount\", \"Consumed\") VALUES ('{0}', '{2}', gen_random_uuid(), {3}, 1, {3}), "
                  "('{1}', '{2}', gen_random_uuid(), {3}, 1, NULL);",
                  a, b, consumer, at(m_now, 20 * k_minute)));
  auto window = [&](const Json& doc, const char* state) { return doc.at("summary").at(state).get<int>(); };
  Json masstransit = audit({"--layout", "masstransit", "--consumer", consumer}, "10");
  EXPECT_EQ(window(masstransit, "expiring"), 1) << masstransit.at("summary").dump(); // a: consumed
  EXPECT_EQ(window(masstransit, "orphaned"), 1);                                     // b: Consumed is NULL

  sql("CREATE TABLE wolverine_incoming_envelopes (id uuid NOT NULL PRIMARY KEY, status varchar NOT NULL, owner_id "
      "integer NOT NULL, execution_time timestamptz, attempts integer DEFAULT 0, body bytea NOT NULL, message_type "
      "varchar NOT NULL, received_at varchar, keep_until timestamptz);" +
      fmt::format("INSERT INTO wolverine_incoming_envelopes VALUES ('{0}', 'Handled', 0, NULL, 1, '\\x00', 'Charge', "
                  "'kafka://pay', {3}), ('{1}', 'Incoming', 0, NULL, 1, '\\x00', 'Charge', 'kafka://pay', NULL), "
                  "('{2}', 'Handled', 0, NULL, 1, '\\x00', 'Charge', 'kafka://pay', {4});",
                  a, b, c, at(m_now, -5 * k_minute), at(m_now, 1 * k_minute)));
  Json wolverine = audit({"--layout", "wolverine"}, "10");
  EXPECT_EQ(window(wolverine, "expiring"), 1) << wolverine.at("summary").dump(); // a: kept 5 more minutes
  EXPECT_EQ(window(wolverine, "orphaned"), 1);                                   // b: Incoming, consumed past
  EXPECT_EQ(window(wolverine, "expired"), 1 + 2) << "c: its keep_until passed, and e-0 and e-4 as before";
  // keep_until says when a row lapses, not when it was processed: the oldest row's age says nothing of
  // the retention, which is estimated from the rows' remaining times as Redis TTLs are.
  auto estimated = run_dedupctl({"audit", "-b", m_broker.bootstrap(), "--topic", "pay", "--store", m_pg.conninfo(),
                                 "--layout", "wolverine", "--retention", "7d", "-o", "json"});
  EXPECT_EQ(Json::parse(estimated.out).at("placement").at("ttl_source"), "estimate") << estimated.err;
  EXPECT_EQ(estimated.err.find("estimated from the oldest row"), std::string::npos) << estimated.err;
}
