// The PostgreSQL connector against a real server: what an operator meets when the inbox cannot be
// read. Every failure is an UnreachableError (exit 3 once it reaches the command) whose message
// names the server and the cause, and never the password.
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/postgres/sqlstate.hpp"
#include "core/store/inbox_snapshot.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <thread>

using namespace dedupctl;
using namespace dedupctl::testing;

namespace {

connectors::postgres::InboxSettings inbox_at(const std::string& conninfo, std::int64_t timeout_ms = 5000) {
  connectors::postgres::InboxSettings settings;
  settings.conninfo = conninfo;
  settings.timeout_ms = timeout_ms;
  settings.lookup = connectors::postgres::InboxLookup::Batches;
  settings.schema.consumer_column.clear();
  return settings;
}

// The UnreachableError's message when opening and reading the inbox fails; "" when nothing failed.
std::string failure_of(const connectors::postgres::InboxSettings& settings) {
  try {
    auto store = connectors::postgres::open_inbox_store(settings);
    std::vector<core::RecordState> out;
    store->lookup({"e-1"}, out);
  } catch (const UnreachableError& e) {
    return e.what();
  }
  return "";
}

class PostgresConnector : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    ASSERT_EQ(m_pg.psql("CREATE TABLE processed_events (event_id text PRIMARY KEY, processed_at timestamptz NOT NULL);"
                        "INSERT INTO processed_events VALUES ('e-1', now());"
                        "CREATE ROLE auditor LOGIN PASSWORD 'right-one'; GRANT SELECT ON processed_events TO auditor")
                  .exit_code,
              0);
  }
  PostgresServer m_pg;
};

} // namespace

TEST_F(PostgresConnector, TheRightPasswordReadsTheInbox) {
  auto uri = fmt::format("postgresql://auditor:right-one@127.0.0.1:{}/postgres", m_pg.port());
  EXPECT_EQ(failure_of(inbox_at(uri)), "");
}

TEST_F(PostgresConnector, NoServerListeningIsUnreachable) {
  auto uri = fmt::format("postgresql://auditor:right-one@127.0.0.1:{}/postgres", free_port());
  auto why = failure_of(inbox_at(uri));
  EXPECT_NE(why.find("cannot reach PostgreSQL at"), std::string::npos) << why;
  EXPECT_NE(why.find("check --store"), std::string::npos) << why;
  EXPECT_EQ(why.find("right-one"), std::string::npos) << why;
}

TEST_F(PostgresConnector, AWrongPasswordIsUnreachableAndNeverPrinted) {
  for (const auto& conninfo :
       {fmt::format("postgresql://auditor:s3cr3t-wrong@127.0.0.1:{}/postgres", m_pg.port()),
        fmt::format("host=127.0.0.1 port={} dbname=postgres user=auditor password = 's3cr3t-wrong'", m_pg.port())}) {
    auto why = failure_of(inbox_at(conninfo));
    EXPECT_NE(why.find("password authentication failed"), std::string::npos) << why;
    EXPECT_EQ(why.find("s3cr3t-wrong"), std::string::npos) << why;
  }
}

TEST_F(PostgresConnector, AStatementPastTheTimeoutIsUnreachable) {
  SpawnOptions hold_options;
  hold_options.pipe_stdin = true;
  Process hold({find_program("psql", {"/usr/lib/postgresql/15/bin"}), "-X", "-q", "-d", m_pg.conninfo()}, hold_options);
  hold.write_line("BEGIN; LOCK TABLE processed_events IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto started = std::chrono::steady_clock::now();
  auto why = failure_of(inbox_at(m_pg.conninfo(), 1000));
  EXPECT_NE(why.find("timed out after 1000 ms"), std::string::npos) << why;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15));
}

// A processed_at finer than a millisecond is the same millisecond whichever way the inbox is read:
// batched lookups, the COPY load, and the snapshot's export (whose text parse_time cuts at the
// millisecond). Each is the millisecond the time falls in: floored, before 1970 too.
TEST_F(PostgresConnector, EveryLookupGivesAProcessedAtInTheMillisecondItFallsIn) {
  ASSERT_EQ(m_pg.psql("CREATE TABLE fine (event_id text PRIMARY KEY, processed_at timestamptz NOT NULL);"
                      "INSERT INTO fine VALUES ('half', '2026-11-26 10:00:00.0125+00'),"
                      "('almost', '2026-11-26 10:00:00.012999+00'), ('whole', '2026-11-26 10:00:00.013+00'),"
                      "('second', '2026-11-26 10:00:00.9995+00'), ('before', '1969-12-31 23:59:59.9995+00')")
                .exit_code,
            0);
  const std::int64_t ten = core::parse_time("2026-11-26T10:00:00Z");
  const std::vector<std::string> ids{"half", "almost", "whole", "second", "before"};
  const std::vector<std::int64_t> expected{ten + 12, ten + 12, ten + 13, ten + 999, -1};
  auto settings = inbox_at(m_pg.conninfo());
  settings.schema.table = "fine";
  for (auto lookup : {connectors::postgres::InboxLookup::Batches, connectors::postgres::InboxLookup::Load}) {
    settings.lookup = lookup;
    auto store = connectors::postgres::open_inbox_store(settings);
    std::vector<core::RecordState> out;
    store->lookup(ids, out);
    ASSERT_EQ(out.size(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(out[i].processed_at_ms, expected[i]) << ids[i] << " by " << store->lookup_method();
    }
  }
  std::map<std::string, std::int64_t> exported;
  connectors::postgres::export_inbox(settings, [&](const std::string& line) {
    core::InboxRow row;
    std::string error;
    ASSERT_TRUE(core::parse_inbox_row(line, row, error)) << error;
    exported[row.event_id] = row.processed_at_ms.value_or(-999);
  });
  for (std::size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(exported[ids[i]], expected[i]) << ids[i] << " exported";
  }
}

namespace {

// What an UnreachableError says before the server's own words (the first " ("): the part that
// dedupctl decides.
std::string decided_part(const std::string& message) { return message.substr(0, message.find(" (")); }

// Three failures an operator meets, each with the connector's message: a statement cut by
// statement_timeout (a lock held elsewhere), a backend an administrator terminates while it waits,
// and a table the role may not read.
std::map<std::string, std::string> failures_seen(const PostgresServer& pg) {
  std::map<std::string, std::string> seen;
  SpawnOptions hold_options;
  hold_options.pipe_stdin = true;
  Process hold({find_program("psql", {"/usr/lib/postgresql/15/bin"}), "-X", "-q", "-d", pg.conninfo()}, hold_options);
  hold.write_line("BEGIN; LOCK TABLE processed_events IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(60);");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  seen["timeout"] = failure_of(inbox_at(pg.conninfo(), 1000));
  std::thread waiting([&] { seen["terminated"] = failure_of(inbox_at(pg.conninfo(), 30000)); });
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto killed =
        pg.psql("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE wait_event_type = 'Lock'");
    if (killed.out.find('1') != std::string::npos) {
      break;
    }
  }
  waiting.join();
  auto settings = inbox_at(fmt::format("postgresql://auditor:right-one@127.0.0.1:{}/postgres", pg.port()));
  settings.schema.table = "secret";
  seen["permission"] = failure_of(settings);
  // The holder's backend would sleep on with its lock after psql is gone.
  pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' "
          "AND pid <> pg_backend_pid()");
  return seen;
}

} // namespace

// The server writes its messages in its lc_messages; what a failure means is decided by its SQLSTATE
// (57014, 42501) or libpq's own state (a lost connection), never by English words, so a server that
// answers in German ends each run the same way as one that answers in English.
TEST_F(PostgresConnector, AFailureMeansTheSameInAnyServerLanguage) {
  ASSERT_EQ(m_pg.psql("CREATE TABLE secret (event_id text PRIMARY KEY, processed_at timestamptz NOT NULL)").exit_code,
            0);
  auto english = failures_seen(m_pg);
  auto set = m_pg.psql("ALTER SYSTEM SET lc_messages = 'de_DE.UTF-8'"); // not in a transaction: a psql of its own
  if (set.exit_code == 0) {
    set = m_pg.psql("SELECT pg_reload_conf()");
  }
  DEDUPCTL_REQUIRE_SERVER(set.exit_code == 0,
                          "the server cannot use the de_DE.UTF-8 locale (scripts/install-deps makes it): " + set.err);
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // the reload reaches new sessions
  auto check = m_pg.psql("SELECT 1/0");
  ASSERT_NE((check.out + check.err).find("Division durch Null"), std::string::npos)
      << "the server does not answer in German: " << check.out << check.err;
  auto german = failures_seen(m_pg);
  EXPECT_NE(english.at("timeout").find("timed out after 1000 ms"), std::string::npos) << english.at("timeout");
  EXPECT_NE(german.at("timeout").find("timed out after 1000 ms"), std::string::npos) << german.at("timeout");
  // libpq notices the terminated backend as a lost connection, whatever the server said.
  EXPECT_NE(english.at("terminated").find("cannot reach PostgreSQL"), std::string::npos) << english.at("terminated");
  EXPECT_NE(english.at("permission").find("refused a query"), std::string::npos) << english.at("permission");
  for (const auto& [what, message] : english) {
    EXPECT_FALSE(message.empty()) << what;
    EXPECT_EQ(decided_part(german.at(what)), decided_part(message)) << what << ": " << german.at(what);
  }
  for (std::string what : {"timeout", "permission"}) { // the server's own words, in its language
    EXPECT_NE(german.at(what), english.at(what)) << what << ": " << german.at(what);
  }
}

// Every class the connector tells apart, by SQLSTATE alone (the server's words may be in any
// language): those a live server gives are run above; these are the rest of each class.
TEST(PostgresErrors, EachSqlstateClassMeansOneFailure) {
  using connectors::postgres::detail::failure_of_sqlstate;
  using connectors::postgres::detail::ServerFailure;
  EXPECT_EQ(failure_of_sqlstate("57014"), ServerFailure::Timeout);
  for (const char* closed : {"08000", "08003", "08006", "57P01", "57P02", "57P03"}) {
    EXPECT_EQ(failure_of_sqlstate(closed), ServerFailure::Closed) << closed;
  }
  for (const char* resources : {"53000", "53100", "53200", "53300", "53400"}) {
    EXPECT_EQ(failure_of_sqlstate(resources), ServerFailure::Resources) << resources;
  }
  for (const char* refused : {"42501", "42P01", "22003", "57000", "", "XX000"}) {
    EXPECT_EQ(failure_of_sqlstate(refused), ServerFailure::Refused) << refused;
  }
}

// replay --repair-lost's release over an inbox: a row deleted only while it reads as it did (the
// whole row, row_to_json), in one statement; a row the consumer rewrote meanwhile is kept.
TEST(PostgresRecordRelease, ARowIsDeletedOnlyWhileItReadsAsItDid) {
  PostgresServer pg;
  DEDUPCTL_REQUIRE_SERVER(pg.available(), pg.why_unavailable());
  ASSERT_EQ(pg.psql("CREATE TABLE processed_events (event_id text PRIMARY KEY, processed_at timestamptz NOT NULL, "
                    "status text, note text);"
                    "INSERT INTO processed_events VALUES ('e-1', now(), 'done', 'a'), ('e-2', now(), 'done', 'b'), "
                    "('e-3', now(), 'done', 'c')")
                .exit_code,
            0);
  auto settings = inbox_at(pg.conninfo());
  settings.schema.status_column = "status";
  auto records = connectors::postgres::open_inbox_release(settings);
  std::vector<core::RecordState> states;
  records->read({"e-1", "e-2", "e-3", "e-9"}, states);
  ASSERT_EQ(states.size(), 4u);
  EXPECT_EQ(states[0].kind, core::RecordState::Kind::Present);
  EXPECT_EQ(states[3].kind, core::RecordState::Kind::Absent);
  // Meanwhile a column the audit does not read changes on e-2.
  ASSERT_EQ(pg.psql("UPDATE processed_events SET note = 'changed' WHERE event_id = 'e-2'").exit_code, 0);
  std::vector<std::uint8_t> released;
  records->release({1, 1, 0, 1}, released);
  EXPECT_EQ(released, (std::vector<std::uint8_t>{1, 0, 0, 0}));
  EXPECT_EQ(pg.psql("SELECT string_agg(event_id, ',' ORDER BY event_id) FROM processed_events").out, "e-2,e-3\n");
}
