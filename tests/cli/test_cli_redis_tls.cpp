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
#include <csignal>
#include <thread>

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
  // The effects' Redis, named as the flag that gave it.
  RedisServer plain;
  DEDUPCTL_REQUIRE_SERVER(plain.available(), plain.why_unavailable());
  auto args = audit(plain.uri());
  args.insert(args.end(), {"--effects", redis.tls_uri("sslrootcert=" + m_certs.other_ca()), "--effects-key-template",
                           "charged:{event_id}"});
  auto effects = run_dedupctl(args);
  EXPECT_EQ(effects.exit_code, 3) << effects.err;
  EXPECT_NE(effects.err.find("check sslrootcert in --effects"), std::string::npos) << effects.err;
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

// The password from a file or a command, as a rotating token is handed out (a file a sidecar
// rewrites, a CLI that prints the token), for an ACL user named in the URI (rediss://app:@…).
TEST_F(RedisTls, ThePasswordFromAFileOrACommandNeverPrinted) {
  TlsRedisServer redis(m_certs, false);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_EQ(redis.command("ACL SETUSER app on >T0ken-right ~* +@all"), "+OK\r\n");
  ASSERT_EQ(redis.command("ACL SETUSER default off"), "+OK\r\n");
  std::string store = "rediss://app:@127.0.0.1:" + std::to_string(redis.tls_port()) + "?sslrootcert=" + m_certs.ca();
  write_file(m_dir.file("token"), "T0ken-right\n");
  write_file(m_dir.file("wrong"), "T0ken-wrong\n");
  write_file(m_dir.file("leaky.sh"), "echo T0ken-leaked; exit 7\n");
  auto with = [&](std::vector<std::string> extra) {
    auto args = audit(store);
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };
  std::vector<CommandResult> results;
  auto from_file = run_dedupctl(with({"--redis-password-file", m_dir.file("token")}));
  EXPECT_EQ(from_file.exit_code, 1) << from_file.err;
  EXPECT_EQ(parse(from_file).at("complete"), true);
  std::string counted = "echo run >> " + m_dir.file("runs") + "; cat ";
  auto from_command = run_dedupctl(with({"--redis-password-command", counted + m_dir.file("token")}));
  EXPECT_EQ(from_command.exit_code, 1) << from_command.err;
  auto from_env = run_dedupctl(audit(store), {}, {{"DEDUPCTL_REDIS_PASSWORD_COMMAND", "cat " + m_dir.file("token")}});
  EXPECT_EQ(from_env.exit_code, 1) << from_env.err;
  EXPECT_EQ(parse(from_env).at("summary"), parse(from_file).at("summary"));
  results.insert(results.end(), {from_file, from_command, from_env});

  // Refused: the command is asked once more (the token may have rotated between), then exit 3.
  write_file(m_dir.file("runs"), "");
  auto wrong_command = failing(store, {{"DEDUPCTL_REDIS_PASSWORD_COMMAND", counted + m_dir.file("wrong")}});
  EXPECT_NE(wrong_command.err.find("refused the credentials (WRONGPASS"), std::string::npos) << wrong_command.err;
  EXPECT_NE(wrong_command.err.find("what the password command prints"), std::string::npos) << wrong_command.err;
  EXPECT_EQ(read_file(m_dir.file("runs")), "run\nrun\n");
  auto wrong_file = failing(store, {{"DEDUPCTL_REDIS_PASSWORD_FILE", m_dir.file("wrong")}});
  EXPECT_NE(wrong_file.err.find("the password in " + m_dir.file("wrong")), std::string::npos) << wrong_file.err;
  // A command that fails names itself and its status, never what it printed.
  auto failed = failing(store, {{"DEDUPCTL_REDIS_PASSWORD_COMMAND", "sh " + m_dir.file("leaky.sh")}});
  EXPECT_NE(failed.err.find("the Redis password command 'sh " + m_dir.file("leaky.sh") +
                            "' failed: it exited with status 7; run it by hand to see why"),
            std::string::npos)
      << failed.err;
  results.insert(results.end(), {wrong_command, wrong_file, failed});
  // Every report format, and librdkafka's and our diagnostics at -vv.
  for (const char* format : {"text", "markdown", "html", "sarif", "junit", "github", "gitlab"}) {
    auto args = with({"--redis-password-file", m_dir.file("wrong"), "-vv"});
    *std::find(args.begin(), args.end(), "json") = format;
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 3) << format << ": " << result.err;
    results.push_back(result);
  }

  // Two sources of one password are a usage error, before anything is contacted.
  auto both = run_dedupctl(
      with({"--redis-password-file", m_dir.file("token"), "--redis-password-command", "cat " + m_dir.file("token")}));
  EXPECT_EQ(both.exit_code, 2) << both.err;
  auto uri_and_file = run_dedupctl(audit_args_on_dump(
      m_dir.file("dump.json"), m_dir.file("committed.csv"),
      "rediss://app:T0ken-right@127.0.0.1:" + std::to_string(redis.tls_port()) + "?sslrootcert=" + m_certs.ca(),
      {"--redis-password-file", m_dir.file("token")}));
  EXPECT_EQ(uri_and_file.exit_code, 2) << uri_and_file.err;
  EXPECT_NE(uri_and_file.err.find("has a password and --redis-password-file gives another"), std::string::npos)
      << uri_and_file.err;
  auto missing = run_dedupctl(with({"--redis-password-file", m_dir.file("absent")}));
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find("--redis-password-file"), std::string::npos) << missing.err;
  results.insert(results.end(), {both, uri_and_file, missing});
  for (const auto& result : results) {
    for (const auto* secret : {"T0ken-right", "T0ken-wrong", "T0ken-leaked"}) {
      EXPECT_EQ(result.out.find(secret), std::string::npos) << result.out;
      EXPECT_EQ(result.err.find(secret), std::string::npos) << result.err;
    }
  }
}

// snapshot, trace and check --live reach Redis as audit does: TLS, an ACL user named in the URI,
// its password from a file; without it the server says NOAUTH and each is exit 3.
TEST_F(RedisTls, EveryCommandTakesThePasswordTheSameWay) {
  TlsRedisServer redis(m_certs, false);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  for (const auto& command : planted_record_commands()) {
    ASSERT_EQ(redis.command(command), "+OK\r\n") << command;
  }
  ASSERT_EQ(redis.command("ACL SETUSER app on >T0ken-right ~* +@all"), "+OK\r\n");
  ASSERT_EQ(redis.command("ACL SETUSER default off"), "+OK\r\n");
  std::string store = "rediss://app:@127.0.0.1:" + std::to_string(redis.tls_port()) + "?sslrootcert=" + m_certs.ca();
  write_file(m_dir.file("token"), "T0ken-right\n");
  write_file(m_dir.file("d.toml"),
             "[[consumer]]\nname = \"billing\"\ntopic = \"pay\"\nplacement = \"redis\"\nstore = \"" + store +
                 "\"\nkey_template = \"dedup:pay:{event_id}\"\nttl = \"9d\"\nretention = \"7d\"\n");
  std::vector<std::vector<std::string>> commands{
      {"snapshot", "--store", store, "--match", "dedup:pay:*", "--output", m_dir.file("keys.tsv")},
      {"trace", "--input", m_dir.file("dump.json"), "--store", store, "--key-template", "dedup:pay:{event_id}", "--ttl",
       "1h", "--event-id", "e-1"},
      {"check", "--live", m_dir.file("d.toml")},
      {"discover", "--input", m_dir.file("dump.json"), "--store", store},
      // replay through a library's records: Powertools' JSON claims and Spring's hash fields.
      {"replay", "--input", m_dir.file("dump.json"), "--via", store, "--layout", "powertools-python", "--key-prefix",
       "f", "--ttl", "1h", "--sink", "file:" + m_dir.file("powertools.ndjson"), "--execute"},
      {"replay", "--input", m_dir.file("dump.json"), "--via", store, "--layout", "spring-hash", "--sink",
       "file:" + m_dir.file("spring.ndjson"), "--execute"}};
  for (auto args : commands) {
    SCOPED_TRACE(args[0]);
    args.insert(args.end(), {"-o", "json", "--timeout", "20s"});
    auto with = run_dedupctl(args, {}, {{"DEDUPCTL_REDIS_PASSWORD_FILE", m_dir.file("token")}});
    EXPECT_LE(with.exit_code, 1) << with.err;
    if (args[0] != "snapshot" && args[0] != "discover") { // the file is its report; discover writes its own
      EXPECT_EQ(parse(with).value("complete", true), true) << with.out;
    }
    if (args[0] == "replay") { // the library's records written over TLS
      EXPECT_GT(parse(with).at("summary").at("replayed").get<long long>(), 0) << with.out;
    }
    auto without = run_dedupctl(args);
    EXPECT_EQ(without.exit_code, 3) << without.err;
    EXPECT_NE((without.err + without.out).find("NOAUTH"), std::string::npos) << without.err << without.out;
    EXPECT_EQ((with.out + with.err + without.out + without.err).find("T0ken-right"), std::string::npos);
  }
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

// watch over TLS with a client certificate and the password from REDISCLI_AUTH: the keyspace probe
// and the lookups go through the same secured connection; an untrusted CA and a wrong password are
// dedupctl_up{system="redis"} 0 with the cause on stderr, no coverage gauge, and no password anywhere.
TEST_F(RedisTls, WatchOverTlsAndItsBadTwins) {
  TlsRedisServer redis(m_certs, true);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  for (const auto& command : planted_record_commands()) {
    ASSERT_EQ(redis.command(command), "+OK\r\n") << command;
  }
  ASSERT_EQ(redis.command("CONFIG SET requirepass Corr3ct-horse"), "+OK\r\n");
  MockBroker broker{{"pay:1"}};
  long long now = wall_ms();
  broker.seed("pay", planted(now, now - 30 * k_minute));
  broker.commit("billing", "pay", "0=8");
  std::string client = "&sslcert=" + m_certs.client_cert() + "&sslkey=" + m_certs.client_key();
  struct Case {
    std::string store;
    std::string password;
    std::string says; // on stderr; empty: the watch sees everything
  };
  for (const Case& c :
       {Case{redis.tls_uri("sslrootcert=" + m_certs.ca() + client), "Corr3ct-horse", ""},
        Case{redis.tls_uri("sslrootcert=" + m_certs.other_ca() + client), "Corr3ct-horse", "certificate verify failed"},
        Case{redis.tls_uri("sslrootcert=" + m_certs.ca() + client), "Wr0ng-battery", "refused the credentials"}}) {
    SCOPED_TRACE(c.store + " " + c.says);
    int port = free_port();
    auto watch = spawn_watch(watch_args(broker.bootstrap(), "pay", c.store, port, {"--timeout", "5s"}),
                             m_dir.file("watch.err"), {{"REDISCLI_AUTH", c.password}});
    std::string expected = c.says.empty() ? "dedupctl_events{topic=\"pay\",partition=\"0\",state=\"covered\"} 2"
                                          : "dedupctl_up{system=\"redis\"} 0";
    auto metrics = poll_http(port, "/metrics", [&](const HttpAnswer& a) {
      return a.body.find(expected) != std::string::npos &&
             (c.says.empty() || read_file(m_dir.file("watch.err")).find(c.says) != std::string::npos);
    });
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find(expected), std::string::npos) << metrics->body;
    if (c.says.empty()) {
      EXPECT_NE(metrics->body.find("dedupctl_up{system=\"redis\"} 1"), std::string::npos) << metrics->body;
    } else {
      EXPECT_EQ(metrics->body.find("\ndedupctl_events{"), std::string::npos) << metrics->body;
    }
    watch->signal(SIGTERM);
    EXPECT_EQ(watch->wait(), 0);
    std::string err = read_file(m_dir.file("watch.err"));
    if (!c.says.empty()) {
      EXPECT_NE(err.find(c.says), std::string::npos) << err;
    }
    for (const auto& text : {metrics->body, err}) {
      EXPECT_EQ(text.find("Corr3ct-horse"), std::string::npos) << text;
      EXPECT_EQ(text.find("Wr0ng-battery"), std::string::npos) << text;
    }
  }
}

// A version guard's projection on a TLS-only Redis (issue 63): the audit's preview and a replay through
// the guard read it over verified TLS as in clear text, the guide's figures.
TEST_F(RedisTls, AVersionGuardsProjectionIsReadOverVerifiedTls) {
  TlsRedisServer redis(m_certs, false);
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_NO_FATAL_FAILURE(plant_guide_projection(redis));
  const std::string examples = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/versions.ndjson";
  const std::string store = redis.tls_uri("sslrootcert=" + m_certs.ca());
  const std::vector<std::string> guard{
      "--entity",       "json:/order_id", "--version", "json:/version", "--layout", "version-guard",
      "--key-template", "order:{entity}", "--fail-on", "none",          "-o",       "json"};
  std::vector<std::string> audit{"audit", "--input", examples, "--store", store, "--retention", "7d"};
  audit.insert(audit.end(), guard.begin(), guard.end());
  auto audited = run_dedupctl(audit);
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  auto doc = parse(audited);
  EXPECT_EQ(doc.at("summary").at("missing"), 5) << doc.at("summary");
  EXPECT_EQ(doc.at("replay").at("would_reapply"), 5) << doc.at("replay");
  std::vector<std::string> replay{"replay", "--input", examples, "--via", store};
  replay.insert(replay.end(), guard.begin(), guard.end());
  auto planned = run_dedupctl(replay);
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  EXPECT_EQ(parse(planned).at("summary").at("would_replay"), 5) << planned.out;
}
