// PostgreSQL as production secures it, kept under test: an inbox reached over TLS only (hostssl),
// sslmode=verify-full with the CA, a client certificate the server requires, the password from
// PGPASSWORD or a .pgpass file; a clear-text connection or an untrusted CA is exit 3 with libpq's
// reason, and no password appears in any output.
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <set>

using namespace dedupctl::testing;

namespace {

constexpr const char* k_password = "Pg-s3cret-pw";

class PostgresTls : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_certs.available(), m_certs.why_unavailable());
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    long long now = wall_ms();
    write_file(m_dir.file("dump.json"), planted(now, now - 30 * k_minute));
    write_file(m_dir.file("committed.csv"), "pay,0,8\n");
    auto created = m_pg.psql(
        fmt::format("CREATE TABLE processed_events (event_id text NOT NULL, consumer_name text NOT NULL, processed_at "
                    "timestamptz NOT NULL, PRIMARY KEY (consumer_name, event_id));"
                    "INSERT INTO processed_events VALUES ('e-2', 'billing', now()), ('e-3', 'billing', now());"
                    "CREATE ROLE auditor LOGIN PASSWORD '{}'; GRANT SELECT ON processed_events TO auditor;",
                    k_password));
    ASSERT_EQ(created.exit_code, 0) << created.err;
  }

  std::vector<std::string> audit(const std::string& store) const {
    return {"audit",
            "--input",
            m_dir.file("dump.json"),
            "--committed",
            m_dir.file("committed.csv"),
            "--group",
            "billing",
            "--seek",
            "2",
            "--store",
            store,
            "--consumer",
            "billing",
            "--inbox-retention",
            "1h",
            "-o",
            "json",
            "--timeout",
            "20s"};
  }

  // A libpq conninfo to 127.0.0.1 as auditor, with `extra` keywords.
  std::string tcp(const std::string& extra) const {
    return fmt::format("host=127.0.0.1 port={} user=auditor dbname=postgres {}", m_pg.port(), extra);
  }

  std::string client_cert() const {
    return fmt::format("sslcert={} sslkey={}", m_certs.client_cert(), m_certs.client_key());
  }

  TestCertificates m_certs;
  PostgresServer m_pg{&m_certs};
  TempDir m_dir;
};

TEST_F(PostgresTls, VerifyFullWithAClientCertificateReadsTheInbox) {
  auto local = run_dedupctl(audit(m_pg.conninfo())); // the Unix socket, trusted: the reference
  ASSERT_EQ(local.exit_code, 1) << local.err;
  auto expected = parse(local).at("summary");
  ASSERT_EQ(expected.at("covered"), 2);
  std::string store = tcp("sslmode=verify-full sslrootcert=" + m_certs.ca() + " " + client_cert());
  auto result = run_dedupctl(audit(store), {}, {{"PGPASSWORD", k_password}});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), true) << result.err;
  EXPECT_EQ(doc.at("summary"), expected);

  // The password from a .pgpass file (0600, as libpq demands) instead of the environment.
  write_file(m_dir.file("pgpass"), fmt::format("127.0.0.1:{}:postgres:auditor:{}\n", m_pg.port(), k_password));
  ::chmod(m_dir.file("pgpass").c_str(), 0600);
  auto pgpass = run_dedupctl(audit(store), {}, {{"PGPASSFILE", m_dir.file("pgpass")}});
  EXPECT_EQ(pgpass.exit_code, 1) << pgpass.err;
  EXPECT_EQ(parse(pgpass).at("summary"), expected);
  for (const auto* text : {&result.out, &result.err, &pgpass.out, &pgpass.err}) {
    EXPECT_EQ(text->find(k_password), std::string::npos) << *text;
  }

  // An inbox layout reads through the same session: Eventuate's table, its times in epoch ms.
  auto created = m_pg.psql(
      fmt::format("CREATE SCHEMA eventuate; CREATE TABLE eventuate.received_messages (consumer_id VARCHAR(1000), "
                  "message_id VARCHAR(1000), creation_time BIGINT, PRIMARY KEY(consumer_id, message_id)); INSERT INTO "
                  "eventuate.received_messages VALUES ('billing', 'e-2', {0}), ('billing', 'e-3', {0}); GRANT USAGE "
                  "ON SCHEMA eventuate TO auditor; GRANT SELECT ON eventuate.received_messages TO auditor;",
                  wall_ms()));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  auto args = audit(store);
  args.insert(args.end(), {"--layout", "eventuate"});
  auto layout = run_dedupctl(args, {}, {{"PGPASSWORD", k_password}});
  EXPECT_EQ(layout.exit_code, 1) << layout.err;
  EXPECT_EQ(parse(layout).at("summary"), expected) << layout.out;
  EXPECT_EQ((layout.out + layout.err).find(k_password), std::string::npos);

  // discover reads the catalog and the rows through the same TLS session: it finds Eventuate's
  // table with the password written into the conninfo, and never shows it; a wrong one is exit 3.
  auto discover = [&](const std::string& password) {
    return run_dedupctl(
        {"discover", "--input", m_dir.file("dump.json"), "--store", store + " password=" + password, "-o", "json"});
  };
  auto found = discover(k_password);
  ASSERT_EQ(found.exit_code, 0) << found.err;
  nlohmann::json candidates = parse(found).at("candidates");
  ASSERT_FALSE(candidates.empty()) << found.out;
  std::set<std::string> layouts; // the generic inbox the audit above read, and Eventuate's table
  for (const auto& c : candidates) {
    layouts.insert(c.at("layout").get<std::string>());
  }
  EXPECT_EQ(layouts.count("eventuate"), 1u) << found.out;
  EXPECT_EQ((found.out + found.err).find(k_password), std::string::npos) << found.out << found.err;
  auto refused = discover("not-the-password");
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("password authentication failed"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("not-the-password"), std::string::npos) << refused.err;
}

TEST_F(PostgresTls, ClearTextAnUntrustedCaOrNoClientCertificateIsExit3WithTheReason) {
  struct Case {
    std::string store;
    std::string says;
  };
  for (const Case& c : {
           Case{tcp("sslmode=disable"), "no pg_hba.conf entry"},
           Case{tcp("sslmode=verify-full sslrootcert=" + m_certs.other_ca() + " " + client_cert()),
                "certificate verify failed"},
           Case{tcp("sslmode=verify-full sslrootcert=" + m_certs.ca()), "requires a valid client certificate"},
       }) {
    SCOPED_TRACE(c.store);
    auto result = run_dedupctl(audit(c.store), {}, {{"PGPASSWORD", k_password}});
    EXPECT_EQ(result.exit_code, 3) << result.err;
    auto doc = parse(result);
    EXPECT_EQ(doc.value("complete", true), false);
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find(k_password), std::string::npos) << result.err;
    EXPECT_EQ(result.out.find(k_password), std::string::npos) << result.out;
  }
}

} // namespace
