// Redis over TLS (rediss://) end to end: a redis-server with a TLS port and certificates the
// fixture makes with openssl; the same audit as in clear text when the chain and name verify, and
// each way a secured connection fails (untrusted CA, another name, no client certificate, clear
// text to a TLS port and the reverse, a wrong password) as exit 3 within seconds with its cause,
// never a secret.
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/planted.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

// An audit of the planted events from a kcat -J dump (no broker) against `store`.
class RedisTls : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_certs.available(), m_certs.why_unavailable());
    long long now = wall_ms();
    write_file(m_dir.file("dump.json"), planted(now, now - 30 * k_minute));
    write_file(m_dir.file("committed.csv"), "pay,0,8\n");
  }

  std::vector<std::string> audit(const std::string& store) const {
    return audit_args_on_dump(m_dir.file("dump.json"), m_dir.file("committed.csv"), store, {"--timeout", "20s"});
  }

  // Runs an audit that must fail for a reason of the connection: exit 3, within seconds (not the
  // 20 s timeout), a report marked incomplete, and the cause on stderr.
  CommandResult failing(const std::string& store, const std::map<std::string, std::string>& env = {}) {
    auto started = std::chrono::steady_clock::now();
    auto result = run_dedupctl(audit(store), {}, env);
    auto took = std::chrono::steady_clock::now() - started;
    EXPECT_EQ(result.exit_code, 3) << result.err;
    EXPECT_LT(took, std::chrono::seconds(8)) << result.err;
    auto doc = parse(result);
    EXPECT_EQ(doc.value("complete", true), false) << result.out;
    return result;
  }

  TestCertificates m_certs;
  TempDir m_dir;
};

TEST_F(RedisTls, VerifiedTlsGivesTheSameAuditAsClearText) {
  TlsRedisServer redis(m_certs, false);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  for (const auto& command : planted_record_commands()) {
    ASSERT_EQ(redis.command(command), "+OK\r\n") << command;
  }
  auto clear = run_dedupctl(audit("redis://127.0.0.1:" + std::to_string(redis.port())));
  ASSERT_EQ(clear.exit_code, 1) << clear.err;
  Json expected = parse(clear).at("summary");
  ASSERT_EQ(expected.at("events"), 10);
  ASSERT_GT(expected.at("covered").get<int>(), 0);
  // verify-full by default: the chain to the CA and the name 127.0.0.1 (an IP SAN).
  for (const std::string& query : {"sslrootcert=" + m_certs.ca(), "sslmode=verify-ca&sslrootcert=" + m_certs.ca(),
                                   "sslmode=verify-full&sslrootcert=" + m_certs.ca() + "&sslsni=0"}) {
    SCOPED_TRACE(query);
    auto result = run_dedupctl(audit(redis.tls_uri(query)));
    EXPECT_EQ(result.exit_code, 1) << result.err;
    auto doc = parse(result);
    EXPECT_EQ(doc.at("complete"), true);
    EXPECT_EQ(doc.at("summary"), expected);
    EXPECT_EQ(result.err, "");
  }
  // require: encrypted, the certificate not checked, and said.
  auto unverified = run_dedupctl(audit(redis.tls_uri("sslmode=require")));
  EXPECT_EQ(unverified.exit_code, 1) << unverified.err;
  EXPECT_EQ(parse(unverified).at("summary"), expected);
  EXPECT_NE(unverified.err.find("warning: rediss://127.0.0.1:" + std::to_string(redis.tls_port()) +
                                "?sslmode=require has sslmode=require: the traffic is encrypted, but the server's "
                                "certificate is not verified"),
            std::string::npos)
      << unverified.err;
}

TEST_F(RedisTls, AnUntrustedCaOrAnotherNameIsRefusedWithTheCause) {
  TlsRedisServer redis(m_certs, false);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  auto other = failing(redis.tls_uri("sslrootcert=" + m_certs.other_ca()));
  EXPECT_NE(other.err.find("TLS handshake with Redis at 127.0.0.1:" + std::to_string(redis.tls_port()) +
                           " failed: certificate verify failed"),
            std::string::npos)
      << other.err;
  EXPECT_NE(other.err.find("check sslrootcert in --store"), std::string::npos) << other.err;
  // No sslrootcert: the system's CAs, which do not know the test CA.
  auto system = failing(redis.tls_uri());
  EXPECT_NE(system.err.find("certificate verify failed"), std::string::npos) << system.err;
  EXPECT_NE(system.err.find("give the CA that signed it as sslrootcert"), std::string::npos) << system.err;

  TlsRedisServer elsewhere(m_certs, false, true);
  DEDUPCTL_REQUIRE_SERVER(elsewhere.available(), elsewhere.why_unavailable());
  auto name = failing(elsewhere.tls_uri("sslrootcert=" + m_certs.ca()));
  EXPECT_NE(name.err.find("IP address mismatch"), std::string::npos) << name.err;
  EXPECT_NE(name.err.find("sslmode=verify-ca"), std::string::npos) << name.err;
  // verify-ca checks the chain only: the same server is fine.
  auto chain_only = run_dedupctl(audit(elsewhere.tls_uri("sslmode=verify-ca&sslrootcert=" + m_certs.ca())));
  EXPECT_EQ(chain_only.exit_code, 1) << chain_only.err; // the planted events' findings
  EXPECT_EQ(parse(chain_only).at("complete"), true);
}

TEST_F(RedisTls, AClientCertificateWhenTheServerRequiresOne) {
  TlsRedisServer redis(m_certs, true);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  std::string ca = "sslrootcert=" + m_certs.ca();
  auto with =
      run_dedupctl(audit(redis.tls_uri(ca + "&sslcert=" + m_certs.client_cert() + "&sslkey=" + m_certs.client_key())));
  EXPECT_EQ(with.exit_code, 1) << with.err;
  EXPECT_EQ(parse(with).at("complete"), true);
  auto without = failing(redis.tls_uri(ca));
  EXPECT_NE(without.err.find("127.0.0.1:" + std::to_string(redis.tls_port())), std::string::npos) << without.err;
  EXPECT_NE(without.err.find("sslcert and sslkey"), std::string::npos) << without.err;
  // A key file that is not a key is the user's to fix: exit 2, nothing contacted.
  auto bad_key =
      run_dedupctl(audit(redis.tls_uri(ca + "&sslcert=" + m_certs.client_cert() + "&sslkey=" + m_certs.client_cert())));
  EXPECT_EQ(bad_key.exit_code, 2) << bad_key.err;
  EXPECT_NE(bad_key.err.find("cannot use sslkey '" + m_certs.client_cert() + "'"), std::string::npos) << bad_key.err;
  auto missing_ca = run_dedupctl(audit(redis.tls_uri("sslrootcert=" + m_dir.file("no-such-ca.pem"))));
  EXPECT_EQ(missing_ca.exit_code, 2) << missing_ca.err;
  EXPECT_NE(missing_ca.err.find("cannot use sslrootcert"), std::string::npos) << missing_ca.err;
}

TEST_F(RedisTls, ClearTextAndTlsOnTheWrongPortsFailFast) {
  TlsRedisServer redis(m_certs, false);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  // A clear-text server does not answer a TLS hello at all (it waits for the end of a command
  // line): that takes the --timeout, and says what to check.
  auto args = audit("rediss://127.0.0.1:" + std::to_string(redis.port()) + "?sslrootcert=" + m_certs.ca());
  *(std::find(args.begin(), args.end(), "--timeout") + 1) = "2s";
  auto tls_to_plain = run_dedupctl(args);
  EXPECT_EQ(tls_to_plain.exit_code, 3) << tls_to_plain.err;
  EXPECT_NE(tls_to_plain.err.find("TLS handshake with Redis at 127.0.0.1:" + std::to_string(redis.port()) +
                                  " failed: no answer in 2000 ms; check that " + std::to_string(redis.port()) +
                                  " is the server's TLS port"),
            std::string::npos)
      << tls_to_plain.err;
  auto plain_to_tls = failing("redis://127.0.0.1:" + std::to_string(redis.tls_port()));
  EXPECT_NE(plain_to_tls.err.find("127.0.0.1:" + std::to_string(redis.tls_port())), std::string::npos)
      << plain_to_tls.err;
}

// The password from redis-cli's REDISCLI_AUTH, off the command line; a wrong one is exit 3 and is
// printed nowhere.
TEST_F(RedisTls, ThePasswordFromRedisCliAuthNeverPrinted) {
  TlsRedisServer redis(m_certs, false);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_EQ(redis.command("CONFIG SET requirepass Corr3ct-horse"), "+OK\r\n");
  std::string store = redis.tls_uri("sslrootcert=" + m_certs.ca());
  auto right = run_dedupctl(audit(store), {}, {{"REDISCLI_AUTH", "Corr3ct-horse"}});
  EXPECT_EQ(right.exit_code, 1) << right.err;
  EXPECT_EQ(parse(right).at("complete"), true);
  auto wrong = failing(store, {{"REDISCLI_AUTH", "Wr0ng-battery"}});
  EXPECT_NE(wrong.err.find("refused the credentials"), std::string::npos) << wrong.err;
  for (const auto* text : {&wrong.out, &wrong.err, &right.out, &right.err}) {
    EXPECT_EQ(text->find("Wr0ng-battery"), std::string::npos) << *text;
    EXPECT_EQ(text->find("Corr3ct-horse"), std::string::npos) << *text;
  }
  auto none = failing(store);
  EXPECT_NE(none.err.find("NOAUTH"), std::string::npos) << none.err;
}

// A Redis Cluster over TLS (tls-cluster yes) announces its TLS ports: the audit follows them from
// a rediss+cluster:// seed, and counts exactly as against one clear-text server with the same keys.
TEST_F(RedisTls, AClusterOverTlsIsFollowedToTheTlsPortsItAnnounces) {
  RedisCluster cluster(3, 0, &m_certs);
  DEDUPCTL_REQUIRE_SERVER(cluster.available(), cluster.why_unavailable());
  plant_records(cluster);
  RedisServer single;
  DEDUPCTL_REQUIRE_SERVER(single.available(), single.why_unavailable());
  plant_records(single);
  auto clear = run_dedupctl(audit(single.uri()));
  ASSERT_EQ(clear.exit_code, 1) << clear.err;
  auto result = run_dedupctl(audit(cluster.seed_uri(1)));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), true) << result.err;
  EXPECT_EQ(doc.at("summary"), parse(clear).at("summary"));
  EXPECT_GT(doc.at("summary").at("covered").get<int>(), 0);
}

// Sentinel over TLS: the sentinel is asked over TLS and names a master reached over TLS.
TEST_F(RedisTls, ASentinelOverTlsNamesAMasterReachedOverTls) {
  TlsRedisServer master(m_certs, false);
  DEDUPCTL_REQUIRE_SERVER(master.available(), master.why_unavailable());
  for (const auto& command : planted_record_commands()) {
    ASSERT_EQ(master.command(command), "+OK\r\n") << command;
  }
  RedisSentinel sentinel(master.tls_port(), "pay", &m_certs);
  DEDUPCTL_REQUIRE_SERVER(sentinel.available(), sentinel.why_unavailable());
  auto clear = run_dedupctl(audit("redis://127.0.0.1:" + std::to_string(master.port())));
  ASSERT_EQ(clear.exit_code, 1) << clear.err;
  auto result = run_dedupctl(
      audit("rediss+sentinel://127.0.0.1:" + std::to_string(sentinel.tls_port()) + "/pay?sslrootcert=" + m_certs.ca()));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), true) << result.err;
  EXPECT_EQ(doc.at("summary"), parse(clear).at("summary"));
  EXPECT_NE(result.out.find("master 127.0.0.1:" + std::to_string(master.tls_port()) + " of 'pay'"), std::string::npos)
      << result.out;
}

} // namespace
