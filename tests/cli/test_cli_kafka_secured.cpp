// Kafka as production secures it, end to end against a real Apache Kafka 4.x broker with secured
// listeners (tests/support/kafka_broker.hpp): SASL_SSL with SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN,
// SSL with a client certificate; and each one's bad twins (a wrong password, an untrusted CA, no
// client certificate), exit 3 within seconds whatever --timeout says, with the cause in words and
// the secret in no output.
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>

using namespace dedupctl::testing;

namespace {

// DIR/jwt.sh LIFETIME RUNS: prints an unsigned JWT for Kafka's unsecured validator, made fresh at
// each run, living LIFETIME s, and appends a line to the file RUNS.
void write_jwt_command(const TempDir& dir) {
  write_file(dir.file("jwt.sh"), "#!/bin/sh\n"
                                 "b64() { base64 -w0 | tr '+/' '-_' | tr -d '='; }\n"
                                 "now=$(date +%s)\n"
                                 "h=$(printf '{\"alg\":\"none\"}' | b64)\n"
                                 "p=$(printf '{\"sub\":\"app\",\"iat\":%d,\"exp\":%d}' $now $((now + $1)) | b64)\n"
                                 "echo run >>\"$2\"\n"
                                 "printf '%s.%s.\\n' \"$h\" \"$p\"\n");
}

// Parameterised over "kafka" only, so that the real-kafka tier (*/kafka) runs it.
class SecuredKafka : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    KafkaBroker& broker = shared_secured_kafka_broker();
    DEDUPCTL_REQUIRE_SERVER(broker.available(), broker.why_unavailable());
    m_listeners = broker.secured();
    static std::string topic;
    if (topic.empty()) {
      TestTopic cluster;
      cluster.bootstrap = broker.bootstrap();
      long long now = wall_ms();
      topic = add_topic(cluster, "secured", 1, planted(now, now - 30 * k_minute));
    }
    m_topic = topic;
  }

  std::vector<std::string> scan(const std::string& bootstrap, const std::vector<std::string>& properties) const {
    std::vector<std::string> args{"scan", "-b", bootstrap, "--topic", m_topic, "-o", "json", "--timeout", "60s"};
    for (const auto& property : properties) {
      args.insert(args.end(), {"-X", property});
    }
    return args;
  }

  std::vector<std::string> scram(const std::string& mechanism, const std::string& password) const {
    return {"security.protocol=SASL_SSL", "sasl.mechanisms=" + mechanism, std::string("sasl.username=") + k_kafka_user,
            "sasl.password=" + password, "ssl.ca.location=" + shared_test_certificates().ca()};
  }

  // A scan that must fail on the connection: exit 3 well within the 60 s --timeout, an incomplete
  // report, and no password anywhere.
  CommandResult failing(const std::vector<std::string>& args) const {
    auto started = std::chrono::steady_clock::now();
    auto result = run_dedupctl(args);
    auto took = std::chrono::steady_clock::now() - started;
    EXPECT_EQ(result.exit_code, 3) << result.err;
    EXPECT_LT(took, std::chrono::seconds(15)) << result.err;
    EXPECT_EQ(parse(result).value("complete", true), false) << result.out;
    for (const auto* text : {&result.out, &result.err}) {
      EXPECT_EQ(text->find(k_kafka_password), std::string::npos) << *text;
      EXPECT_EQ(text->find("Wr0ng-pa55"), std::string::npos) << *text;
    }
    return result;
  }

  // A topic of its own on the secured broker with `events`, and ACLs for this principal on it
  // (operation, allowed), in force once this returns.
  static std::string topic_with_acls(const std::string& name, int partitions, const std::string& events,
                                     const std::vector<std::pair<std::string, bool>>& acls) {
    KafkaBroker& broker = shared_secured_kafka_broker();
    TestTopic cluster;
    cluster.bootstrap = broker.bootstrap();
    std::string topic = add_topic(cluster, name, partitions, events);
    for (const auto& [operation, allow] : acls) {
      add_topic_acl(broker.bootstrap(), topic, std::string("User:") + k_kafka_user, operation, allow);
    }
    // The controller commits an ACL before it answers; the broker applies it from the metadata log.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return topic;
  }

  // A replay of the suite's topic over SCRAM-SHA-512/TLS through `store` into the topic `sink`
  // (a JSON report, -q, a 60 s --timeout), with `extra` flags.
  std::vector<std::string> replay_into(const std::string& store, const std::string& sink,
                                       const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> args{"replay",
                                  "-b",
                                  m_listeners.sasl_ssl,
                                  "--topic",
                                  m_topic,
                                  "--via",
                                  store,
                                  "--key-template",
                                  "dedup:{event_id}",
                                  "--ttl",
                                  "1d",
                                  "--execute",
                                  "--sink",
                                  "kafka:" + sink,
                                  "-o",
                                  "json",
                                  "-q",
                                  "--timeout",
                                  "60s"};
    args.insert(args.end(), extra.begin(), extra.end());
    for (const auto& property : scram("SCRAM-SHA-512", k_kafka_password)) {
      args.insert(args.end(), {"-X", property});
    }
    return args;
  }

  SecuredListeners m_listeners;
  std::string m_topic;
};

INSTANTIATE_TEST_SUITE_P(Brokers, SecuredKafka, ::testing::Values("kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(SecuredKafka, ScramPlainAndClientCertificatesReadTheTopic) {
  const auto& certs = shared_test_certificates();
  std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {m_listeners.sasl_ssl, scram("SCRAM-SHA-512", k_kafka_password)},
      {m_listeners.sasl_ssl, scram("SCRAM-SHA-256", k_kafka_password)},
      {m_listeners.sasl_ssl, scram("PLAIN", k_kafka_password)},
      {m_listeners.ssl,
       {"security.protocol=SSL", "ssl.ca.location=" + certs.ca(), "ssl.certificate.location=" + certs.client_cert(),
        "ssl.key.location=" + certs.client_key()}},
  };
  for (const auto& [bootstrap, properties] : cases) {
    SCOPED_TRACE(properties[1]);
    auto result = run_dedupctl(scan(bootstrap, properties));
    EXPECT_EQ(result.exit_code, 0) << result.err;
    auto doc = parse(result);
    EXPECT_EQ(doc.value("complete", false), true) << result.err;
    EXPECT_EQ(doc.at("summary").at("events"), 10) << result.out;
    EXPECT_EQ(result.out.find(k_kafka_password), std::string::npos);
  }
}

TEST_P(SecuredKafka, AWrongPasswordFailsFastSayingSo) {
  for (const char* mechanism : {"SCRAM-SHA-512", "PLAIN"}) {
    SCOPED_TRACE(mechanism);
    auto result = failing(scan(m_listeners.sasl_ssl, scram(mechanism, "Wr0ng-pa55")));
    EXPECT_NE(
        result.err.find(std::string("SASL authentication failed for user '") + k_kafka_user + "' (" + mechanism + ")"),
        std::string::npos)
        << result.err;
  }
}

TEST_P(SecuredKafka, AnUntrustedCaOrNoClientCertificateFailsFastSayingSo) {
  const auto& certs = shared_test_certificates();
  auto untrusted = failing(
      scan(m_listeners.sasl_ssl,
           {"security.protocol=SASL_SSL", "sasl.mechanisms=SCRAM-SHA-512", std::string("sasl.username=") + k_kafka_user,
            std::string("sasl.password=") + k_kafka_password, "ssl.ca.location=" + certs.other_ca()}));
  EXPECT_NE(untrusted.err.find("TLS handshake with " + m_listeners.sasl_ssl + " failed"), std::string::npos)
      << untrusted.err;
  EXPECT_NE(untrusted.err.find("certificate verify failed"), std::string::npos) << untrusted.err;
  EXPECT_NE(untrusted.err.find("check ssl.ca.location"), std::string::npos) << untrusted.err;

  auto no_cert = failing(scan(m_listeners.ssl, {"security.protocol=SSL", "ssl.ca.location=" + certs.ca()}));
  EXPECT_NE(no_cert.err.find("TLS handshake with " + m_listeners.ssl + " failed"), std::string::npos) << no_cert.err;
  EXPECT_NE(no_cert.err.find("ssl.certificate.location"), std::string::npos) << no_cert.err;
}

// The other mistakes of a secured connection librdkafka says plainly, each exit 3 within seconds
// with what to check, not after --timeout: a mechanism the listener does not enable (and the ones it
// does), and clear text to a TLS listener.
TEST_P(SecuredKafka, AMechanismNotEnabledOrClearTextToTlsFailsFastSayingSo) {
  // OAUTHBEARER with librdkafka's own unsecured token, at the listener that enables SCRAM and PLAIN.
  auto mechanism = failing(
      scan(m_listeners.sasl_ssl,
           {"security.protocol=SASL_SSL", "sasl.mechanisms=OAUTHBEARER", "enable.sasl.oauthbearer.unsecure.jwt=true",
            "sasl.oauthbearer.config=principal=app", "ssl.ca.location=" + shared_test_certificates().ca()}));
  EXPECT_NE(mechanism.err.find("does not enable SASL mechanism OAUTHBEARER"), std::string::npos) << mechanism.err;
  EXPECT_NE(mechanism.err.find("SCRAM-SHA-512"), std::string::npos) << mechanism.err;
  EXPECT_NE(mechanism.err.find("check sasl.mechanisms"), std::string::npos) << mechanism.err;

  auto clear_text = failing(scan(m_listeners.sasl_ssl, {}));
  EXPECT_NE(clear_text.err.find("closed the connection at the first request"), std::string::npos) << clear_text.err;
  EXPECT_NE(clear_text.err.find("check security.protocol"), std::string::npos) << clear_text.err;
}

// Secrets off argv: the properties from a file (-F, as kcat's), named by the flag, by
// DEDUPCTL_KAFKA_CONFIG or by the config file, or listed in the config file; -X overrides them.
TEST_P(SecuredKafka, PropertiesFromAFileTheEnvironmentOrTheConfigFile) {
  TempDir dir;
  std::string properties;
  for (const auto& property : scram("SCRAM-SHA-512", k_kafka_password)) {
    properties += property + "\n";
  }
  write_file(dir.file("kafka.conf"), "# the MSK cluster, SCRAM\n\n" + properties);
  write_file(dir.file("wrong.conf"), "# an old password\n" + properties + "sasl.password=Wr0ng-pa55\n");
  write_file(dir.file("file.toml"), "kafka-config = \"" + dir.file("kafka.conf") + "\"\n");
  std::string list;
  for (const auto& property : scram("SCRAM-SHA-512", k_kafka_password)) {
    list += (list.empty() ? "" : ", ") + ("\"" + property + "\"");
  }
  write_file(dir.file("list.toml"), "kafka-property = [" + list + "]\n");

  struct Case {
    std::string name;
    std::vector<std::string> extra;
    std::map<std::string, std::string> env;
  };
  for (const Case& c : {
           Case{"-F", {"-F", dir.file("kafka.conf")}, {}},
           Case{"DEDUPCTL_KAFKA_CONFIG", {}, {{"DEDUPCTL_KAFKA_CONFIG", dir.file("kafka.conf")}}},
           Case{"kafka-config in --config", {"--config", dir.file("file.toml")}, {}},
           Case{"kafka-property in --config", {"--config", dir.file("list.toml")}, {}},
           Case{"-X after -F",
                {"-F", dir.file("wrong.conf"), "-X", std::string("sasl.password=") + k_kafka_password},
                {}},
       }) {
    SCOPED_TRACE(c.name);
    auto args = scan(m_listeners.sasl_ssl, {});
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    auto result = run_dedupctl(args, {}, c.env);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(parse(result).at("summary").at("events"), 10) << result.out;
  }
  // Without the -X, the file's last sasl.password is the wrong one: refused, and said.
  auto args = scan(m_listeners.sasl_ssl, {});
  args.insert(args.end(), {"-F", dir.file("wrong.conf")});
  auto wrong = failing(args);
  EXPECT_NE(wrong.err.find("SASL authentication failed"), std::string::npos) << wrong.err;

  // A bad line names the file and the line, not the text; a property librdkafka does not know names
  // itself, never its value.
  write_file(dir.file("bad.conf"), "security.protocol=SASL_SSL\nsasl.password: Wr0ng-pa55\n");
  args = scan(m_listeners.sasl_ssl, {});
  args.insert(args.end(), {"-F", dir.file("bad.conf")});
  auto bad = run_dedupctl(args);
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find(dir.file("bad.conf") + ":2: expected PROP=VALUE"), std::string::npos) << bad.err;
  write_file(dir.file("typo.conf"), "security.protocol=SASL_SSL\nsasl.pasword=Wr0ng-pa55\n");
  args = scan(m_listeners.sasl_ssl, {});
  args.insert(args.end(), {"-F", dir.file("typo.conf")});
  auto typo = run_dedupctl(args);
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  EXPECT_NE(typo.err.find("invalid property in " + dir.file("typo.conf") + ":2 sasl.pasword"), std::string::npos)
      << typo.err;
  auto missing = run_dedupctl({"scan", "-b", m_listeners.sasl_ssl, "--topic", m_topic, "-F", dir.file("none.conf")});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_NE(missing.err.find(dir.file("none.conf")), std::string::npos) << missing.err;
  for (const auto* text : {&bad.err, &bad.out, &typo.err, &typo.out}) {
    EXPECT_EQ(text->find("Wr0ng-pa55"), std::string::npos) << *text;
  }
}

// OAUTHBEARER with a token command (MSK IAM through a signer, Azure Event Hubs, an OIDC CLI): run
// as the connection needs a token; a bare JWT or JSON; a command that fails, or prints an expired
// token, is exit 3 at once, naming the command and never printing its output.
TEST_P(SecuredKafka, OauthbearerTakesItsTokenFromACommand) {
  TempDir dir;
  write_jwt_command(dir);
  std::string runs = dir.file("runs");
  auto with_command = [&](const std::string& command) {
    auto args = scan(m_listeners.oauthbearer, {"security.protocol=SASL_PLAINTEXT"});
    args.insert(args.end(), {"--kafka-token-command", command});
    return args;
  };
  auto jwt = run_dedupctl(with_command("sh " + dir.file("jwt.sh") + " 3600 " + runs));
  EXPECT_EQ(jwt.exit_code, 0) << jwt.err;
  EXPECT_EQ(parse(jwt).at("summary").at("events"), 10) << jwt.out;
  EXPECT_GE(read_file(runs).size(), 4u) << "the token command never ran";

  // The JSON form, with the token a JWT command made, from the environment.
  write_file(dir.file("json.sh"),
             "#!/bin/sh\n"
             "t=$(sh " +
                 dir.file("jwt.sh") + " 3600 " + runs +
                 ")\n"
                 "printf '{\"token\":\"%s\",\"expires_at_ms\":%d000,\"principal\":\"app\"}' \"$t\" "
                 "$(( $(date +%s) + 3600 ))\n");
  auto args = scan(m_listeners.oauthbearer, {"security.protocol=SASL_PLAINTEXT"});
  auto json = run_dedupctl(args, {}, {{"DEDUPCTL_KAFKA_TOKEN_COMMAND", "sh " + dir.file("json.sh")}});
  EXPECT_EQ(json.exit_code, 0) << json.err;
  EXPECT_EQ(parse(json).at("summary").at("events"), 10) << json.out;

  write_file(dir.file("fail.sh"), "#!/bin/sh\necho eyJhbGciOiJub25lIn0.s3cr3t-token-text.\nexit 4\n");
  auto failed = failing(with_command("sh " + dir.file("fail.sh")));
  EXPECT_NE(failed.err.find("the Kafka token command 'sh " + dir.file("fail.sh") +
                            "' failed: it exited with status 4; run it by hand to see why"),
            std::string::npos)
      << failed.err;
  EXPECT_EQ(failed.err.find("s3cr3t-token-text"), std::string::npos) << failed.err;
  EXPECT_EQ(failed.out.find("s3cr3t-token-text"), std::string::npos) << failed.out;

  auto expired = failing(with_command("sh " + dir.file("jwt.sh") + " -60 " + runs));
  EXPECT_NE(expired.err.find("failed: its token expired 60 s ago"), std::string::npos) << expired.err;
}

// A token is asked for again before it expires (librdkafka asks at 80% of its life): a replay that
// holds its connection for ~5 s (10 events at --max-rate 2) runs a command whose tokens live 3 s
// more often than one whose tokens live an hour, and ends complete.
TEST_P(SecuredKafka, ATokenIsTakenAgainBeforeItExpires) {
  TempDir dir;
  write_jwt_command(dir);
  auto runs_with_lifetime = [&](int seconds) {
    std::string runs = dir.file("runs-" + std::to_string(seconds));
    std::vector<std::string> args{"replay",
                                  "-b",
                                  m_listeners.oauthbearer,
                                  "--topic",
                                  m_topic,
                                  "-X",
                                  "security.protocol=SASL_PLAINTEXT",
                                  "--kafka-token-command",
                                  fmt::format("sh {} {} {}", dir.file("jwt.sh"), seconds, runs),
                                  "--via",
                                  "memory:",
                                  "--execute",
                                  "--sink",
                                  "file:" + dir.file(std::to_string(seconds) + ".ndjson"),
                                  "--max-rate",
                                  "2",
                                  "-o",
                                  "json",
                                  "-q",
                                  "--timeout",
                                  "60s"};
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(parse(result).at("complete"), true) << result.out;
    std::string text = read_file(runs);
    return std::count(text.begin(), text.end(), '\n');
  };
  auto hour = runs_with_lifetime(3600);
  auto short_lived = runs_with_lifetime(3);
  EXPECT_GT(short_lived, hour) << "tokens of 3 s were not taken again during a 5 s run (" << hour
                               << " runs for tokens of an hour)";
}

// librdkafka's own OIDC client (sasl.oauthbearer.method=oidc, which needs libcurl in it): a
// client-credentials request to the token endpoint, the access token handed to the broker.
TEST_P(SecuredKafka, OidcTakesItsTokenFromTheEndpoint) {
  std::atomic<bool> client_credentials{false};
  HttpResponder endpoint([&](const std::string& request) {
    if (request.find("grant_type=client_credentials") != std::string::npos &&
        request.find("Authorization: Basic ") != std::string::npos) {
      client_credentials = true;
    }
    long long exp = wall_ms() / 1000 + 3600;
    return R"({"access_token":")" + unsigned_jwt("app", exp) + R"(","token_type":"bearer","expires_in":3600})";
  });
  auto result = run_dedupctl(
      scan(m_listeners.oauthbearer,
           {"security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=OAUTHBEARER", "sasl.oauthbearer.method=oidc",
            "sasl.oauthbearer.client.id=app", "sasl.oauthbearer.client.secret=Oidc-s3cret",
            "sasl.oauthbearer.token.endpoint.url=http://127.0.0.1:" + std::to_string(endpoint.port()) + "/token"}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(parse(result).at("summary").at("events"), 10) << result.out;
  EXPECT_GE(endpoint.requests(), 1);
  EXPECT_TRUE(client_credentials);
  EXPECT_EQ(result.err.find("Oidc-s3cret"), std::string::npos) << result.err;
}

} // namespace

// The replay's Kafka sink is a producer of its own, on the same -X properties as its reader: over
// SCRAM on TLS it publishes what it replays (read back in the clear), and with a wrong password it
// ends exit 3, incomplete, the password in no output.
TEST_P(SecuredKafka, AReplayPublishesIntoASinkOverScramAndShowsNoSecret) {
  KafkaBroker& broker = shared_secured_kafka_broker();
  TestTopic cluster;
  cluster.bootstrap = broker.bootstrap();
  for (const std::string& password : {std::string(k_kafka_password), std::string("Wr0ng-pa55")}) {
    SCOPED_TRACE(password == k_kafka_password ? "the right password" : "a wrong password");
    std::string sink = add_topic(cluster, "secured-sink", 1);
    std::vector<std::string> args{"replay",    "-b",     m_listeners.sasl_ssl, "--topic", m_topic, "--via", "memory:",
                                  "--execute", "--sink", "kafka:" + sink,      "-o",      "json",  "-q",    "--timeout",
                                  "60s"};
    for (const auto& property : scram("SCRAM-SHA-512", password)) {
      args.insert(args.end(), {"-X", property});
    }
    if (password != k_kafka_password) {
      failing(args);
      continue;
    }
    auto result = run_dedupctl(args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    auto doc = parse(result);
    EXPECT_EQ(doc.at("complete"), true) << result.out;
    long long replayed = doc.at("summary").at("replayed").get<long long>();
    EXPECT_GT(replayed, 0) << result.out;
    auto sunk = run_dedupctl({"scan", "-b", broker.bootstrap(), "--topic", sink, "-o", "json", "-q"});
    ASSERT_EQ(sunk.exit_code, 0) << sunk.err;
    EXPECT_EQ(parse(sunk).at("summary").at("events").get<long long>(), replayed) << sunk.out;
    for (const auto* text : {&result.out, &result.err}) {
      EXPECT_EQ(text->find(k_kafka_password), std::string::npos) << *text;
    }
  }
}

// A principal that may read the source but not write to the sink (ACLs). Not allowed to DESCRIBE
// it either, it does not see the sink: exit 2, naming both causes. Allowed to see it, the broker
// refuses the produce. Exit 3 and an incomplete report naming the sink and what the principal
// needs; Redis still answers, so every claim the run took is released and nothing reached the sink;
// no secret in any output.
TEST_P(SecuredKafka, AReplayIntoASinkThePrincipalMayNotWriteIsExit3AndReleasesItsClaims) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  KafkaBroker& broker = shared_secured_kafka_broker();
  std::string sink = topic_with_acls("denied-sink", 1, "", {{"WRITE", false}});
  std::string principal = std::string("User:") + k_kafka_user;
  auto args = replay_into(redis.uri(), sink);
  // Once a topic has an ACL, a principal no ACL allows to DESCRIBE it does not see it at all.
  auto hidden = run_dedupctl(args);
  EXPECT_EQ(hidden.exit_code, 2) << hidden.err;
  EXPECT_NE(hidden.err.find(fmt::format("topic '{}' does not exist at {}, or this principal may not DESCRIBE it", sink,
                                        m_listeners.sasl_ssl)),
            std::string::npos)
      << hidden.err;
  EXPECT_EQ(redis.command("DBSIZE"), ":0\r\n") << "nothing is claimed before the sink is found";
  add_topic_acl(broker.bootstrap(), sink, principal, "DESCRIBE", true);
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto result = run_dedupctl(args);
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = parse(result);
  EXPECT_EQ(doc.at("complete"), false) << result.out;
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find(
                fmt::format("the sink topic {} refused this run's records (Broker: Topic authorization failed): the "
                            "principal needs WRITE on it",
                            sink)),
            std::string::npos)
      << result.out;
  EXPECT_EQ(doc.at("summary").at("replayed"), 0) << result.out;
  EXPECT_GT(doc.at("summary").at("released").get<long long>(), 0) << result.out;
  EXPECT_EQ(redis.command("DBSIZE"), ":0\r\n") << "no claim is left behind";
  EXPECT_EQ(watermarks(broker.bootstrap(), sink).at(0).second, 0) << "nothing reached the sink";
  for (const auto* text : {&result.out, &result.err, &hidden.out, &hidden.err}) {
    EXPECT_EQ(text->find(k_kafka_password), std::string::npos) << *text;
  }
}

// A rerun with a checkpoint first reads what the run before it published to the sink since that
// checkpoint, so that no event goes there twice. A principal that may WRITE the sink but not READ
// it publishes the first run, and its rerun is exit 3 saying why it must READ the sink, before it
// claims anything.
TEST_P(SecuredKafka, AResumedReplaySaysWhyItMustReadItsSink) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  std::string sink = topic_with_acls("write-only-sink", 1, "", {{"DESCRIBE", true}, {"WRITE", true}, {"READ", false}});
  TempDir dir;
  auto args = replay_into(redis.uri(), sink, {"--checkpoint", dir.file("checkpoint")});
  auto first = run_dedupctl(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  // As a run killed after its records reached the sink and before its checkpoint said so leaves it:
  // the sink's position of the checkpoint before them.
  std::string checkpoint = read_file(dir.file("checkpoint"));
  auto position = checkpoint.find(fmt::format("sink\tkafka:{}\t0:", sink));
  ASSERT_NE(position, std::string::npos) << checkpoint;
  position = checkpoint.find("\t0:", position) + 3;
  checkpoint.replace(position, checkpoint.find('\n', position) - position, "0");
  write_file(dir.file("checkpoint"), checkpoint);
  std::string keys = redis.command("DBSIZE");
  auto rerun = run_dedupctl(args);
  EXPECT_EQ(rerun.exit_code, 3) << rerun.err;
  std::string said = fmt::format("a rerun from a checkpoint reads what was published to kafka:{} since it, so that no "
                                 "event "
                                 "goes there twice: the principal may not READ topic {} (Broker: Topic authorization "
                                 "failed); grant it READ on {}",
                                 sink, sink, sink);
  EXPECT_NE(rerun.err.find(said), std::string::npos) << rerun.err;
  auto doc = parse(rerun);
  EXPECT_EQ(doc.at("complete"), false) << rerun.out;
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find(said), std::string::npos) << rerun.out;
  EXPECT_EQ(redis.command("DBSIZE"), keys) << "nothing claimed by the rerun";
  for (const auto* text : {&first.out, &first.err, &rerun.out, &rerun.err}) {
    EXPECT_EQ(text->find(k_kafka_password), std::string::npos) << *text;
  }
}

// A principal that may DESCRIBE the topic but not READ it: its offsets resolve, and every fetch is
// refused. The scan and the audit end at once with exit 3, naming the topic and the ACL it needs:
// not after the 60 s --timeout advising to raise it, and never a clean verdict over nothing read.
TEST_P(SecuredKafka, ATopicThePrincipalMayNotReadIsExit3SayingSoAtOnce) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  long long now = wall_ms();
  std::string topic =
      topic_with_acls("unreadable", 2, planted(now, now - 30 * k_minute), {{"DESCRIBE", true}, {"READ", false}});
  std::vector<std::string> audit{"audit", "-b",   m_listeners.sasl_ssl, "--topic", topic, "--store", redis.uri(),
                                 "-o",    "json", "--timeout",          "60s"};
  for (const auto& property : scram("SCRAM-SHA-512", k_kafka_password)) {
    audit.insert(audit.end(), {"-X", property});
  }
  auto scan = this->scan(m_listeners.sasl_ssl, scram("SCRAM-SHA-512", k_kafka_password));
  scan[4] = topic;
  for (const auto& args : {scan, audit}) {
    SCOPED_TRACE(args[0]);
    auto result = failing(args);
    std::string said = fmt::format("the principal may not READ topic {} (Broker: Topic authorization failed); "
                                   "grant it READ on {}",
                                   topic, topic);
    EXPECT_NE(result.err.find(said), std::string::npos) << result.err;
    EXPECT_NE(parse(result).at("error").at("message").get<std::string>().find(said), std::string::npos) << result.out;
    if (args[0] == "audit") {
      // Nor may it DESCRIBE_CONFIGS: the retention is unknown, and the note says it was refused, not
      // that the broker did not answer.
      EXPECT_NE(result.err.find(fmt::format("the retention of {} is unknown (the broker refused DescribeConfigs for "
                                            "{} (Broker: Topic authorization failed): the principal needs "
                                            "DESCRIBE_CONFIGS on it); pass --retention",
                                            topic, topic)),
                std::string::npos)
          << result.err;
    }
  }
  // check --live says the same of the consumer that reads it, as a finding on its declaration.
  TempDir dir;
  write_file(dir.file("d.toml"), fmt::format("[[consumer]]\nname = \"billing\"\ntopic = \"{}\"\nplacement = \"redis\"\n"
                                             "store = \"{}\"\nkey_template = \"d:{{event_id}}\"\nttl = \"1h\"\n",
                                             topic, redis.uri()));
  std::vector<std::string> check{"check", "--live", "-b", m_listeners.sasl_ssl, dir.file("d.toml"), "-o", "json"};
  for (const auto& property : scram("SCRAM-SHA-512", k_kafka_password)) {
    check.insert(check.end(), {"-X", property});
  }
  auto checked = run_dedupctl(check);
  std::string title;
  auto checked_doc = parse(checked);
  for (const auto& finding : checked_doc.at("findings")) {
    if (finding.at("id") == "check-unavailable") {
      title = finding.at("title").get<std::string>();
    }
  }
  EXPECT_EQ(title, fmt::format("billing: the retention of topic '{}' could not be checked: the broker refused "
                               "DescribeConfigs for {} (Broker: Topic authorization failed): the principal needs "
                               "DESCRIBE_CONFIGS on it",
                               topic, topic))
      << checked.out << checked.err;
  EXPECT_EQ(checked.exit_code, 0) << checked.err;
  for (const auto* text : {&checked.out, &checked.err}) {
    EXPECT_EQ(text->find(k_kafka_password), std::string::npos) << *text;
  }
}

// A watch whose principal may not DESCRIBE_CONFIGS its topic serves no retention and says why,
// once; when an ACL allows it, a later refresh asks again and serves the topic's retention.
TEST_P(SecuredKafka, WatchAsksAgainForARetentionTheBrokerRefused) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  long long now = wall_ms();
  std::string topic =
      topic_with_acls("configs-later", 1, planted(now, now - 30 * k_minute), {{"DESCRIBE", true}, {"READ", true}});
  int port = free_port();
  TempDir dir;
  auto args = watch_args(m_listeners.sasl_ssl, topic, redis.uri(), port,
                         {"--group", "", "--seek", "", "--retention", "", "--timeout", "20s"});
  for (const auto& property : scram("SCRAM-SHA-512", k_kafka_password)) {
    args.insert(args.end(), {"-X", property});
  }
  auto watch = spawn_watch(args, dir.file("err"));
  std::string gauge = fmt::format("dedupctl_retention_seconds{{topic=\"{}\",source=\"broker\"}} ", topic);
  auto refused = poll_http(port, "/metrics", [](const HttpAnswer& a) {
    return a.body.find("dedupctl_up{system=\"kafka\"} 1") != std::string::npos;
  });
  ASSERT_TRUE(refused && refused->body.find("dedupctl_up{system=\"kafka\"} 1") != std::string::npos)
      << read_file(dir.file("err"));
  EXPECT_EQ(refused->body.find(gauge), std::string::npos) << refused->body;
  add_topic_acl(shared_secured_kafka_broker().bootstrap(), topic, std::string("User:") + k_kafka_user,
                "DESCRIBE_CONFIGS", true);
  auto known =
      poll_http(port, "/metrics", [&](const HttpAnswer& a) { return a.body.find(gauge) != std::string::npos; });
  EXPECT_TRUE(known && known->body.find(gauge) != std::string::npos) << read_file(dir.file("err"));
  watch->signal(SIGTERM);
  EXPECT_EQ(watch->wait(), 0);
  std::string err = read_file(dir.file("err"));
  std::string said = fmt::format("the retention of {} is unknown (the broker refused DescribeConfigs for {} (Broker: "
                                 "Topic authorization failed): the principal needs DESCRIBE_CONFIGS on it); pass "
                                 "--retention",
                                 topic, topic);
  auto first = err.find(said);
  EXPECT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find(said, first + 1), std::string::npos) << "said once, not at every refresh: " << err;
  EXPECT_NE(err.find(fmt::format("the retention of {} is known now: ", topic)), std::string::npos) << err;
  EXPECT_EQ(err.find(k_kafka_password), std::string::npos) << err;
}

// watch over the same secured connections: SCRAM over TLS to Kafka, a Redis with a password; the
// states are served and neither secret appears in the metrics or on stderr. A wrong Kafka password
// is dedupctl_up{system="kafka"} 0, said on stderr without the secret.
TEST_P(SecuredKafka, WatchReadsOverScramAndShowsNoSecret) {
  const std::string redis_password = "R3dis-s3cret-pw";
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_EQ(redis.command("CONFIG SET requirepass " + redis_password), "+OK\r\n");
  for (const std::string& kafka_password : {std::string(k_kafka_password), std::string("Wr0ng-pa55")}) {
    bool right = kafka_password == k_kafka_password;
    int port = free_port();
    TempDir dir;
    auto args =
        watch_args(m_listeners.sasl_ssl, m_topic, fmt::format("redis://:{}@127.0.0.1:{}", redis_password, redis.port()),
                   port, {"--group", "", "--seek", "", "--timeout", "20s"});
    for (const auto& property : scram("SCRAM-SHA-512", kafka_password)) {
      args.insert(args.end(), {"-X", property});
    }
    auto watch = spawn_watch(args, dir.file("err"));
    std::string expected = right ? "dedupctl_up{system=\"kafka\"} 1" : "dedupctl_up{system=\"kafka\"} 0";
    auto metrics = poll_http(
        port, "/metrics",
        [&](const HttpAnswer& a) {
          return a.body.find(expected) != std::string::npos &&
                 (!right || a.body.find("\ndedupctl_events{") != std::string::npos);
        },
        std::chrono::seconds(30));
    ASSERT_TRUE(metrics) << read_file(dir.file("err"));
    EXPECT_NE(metrics->body.find(expected), std::string::npos) << metrics->body << read_file(dir.file("err"));
    if (right) {
      EXPECT_NE(metrics->body.find("dedupctl_up{system=\"redis\"} 1"), std::string::npos) << metrics->body;
      // An empty Redis, no group: e-0 and e-4 are older than the TTL, the seven other ids missing.
      EXPECT_NE(metrics->body.find("state=\"expired\"} 2"), std::string::npos) << metrics->body;
      EXPECT_NE(metrics->body.find("state=\"missing\"} 7"), std::string::npos) << metrics->body;
    } else {
      EXPECT_EQ(metrics->body.find("\ndedupctl_events{"), std::string::npos) << metrics->body;
    }
    watch->signal(SIGTERM);
    EXPECT_EQ(watch->wait(), 0);
    std::string err = read_file(dir.file("err"));
    if (!right) {
      EXPECT_NE(err.find("kafka down"), std::string::npos) << err;
    }
    for (const auto& text : {metrics->body, err}) {
      for (const auto& secret : {kafka_password, redis_password}) {
        EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in:\n" << text;
      }
    }
  }
}

// --effects kafka:TOPIC over SCRAM-SHA-512/TLS: the output topic is read with the same properties as
// the audited one, and the password appears nowhere.
TEST_P(SecuredKafka, EffectsFromAnOutputTopicAreReadOverTheSameSecuredConnection) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  plant_records(redis);
  std::string charges;
  for (const char* id : {"e-0", "e-1", "e-3", "e-4"}) {
    charges += kcat_line(OwnedEvent{.topic = "charges", .timestamp_ms = wall_ms(), .headers = {{"event_id", id}}});
  }
  std::string out = topic_with_acls("charges", 1, charges, {});
  std::vector<std::string> args{"audit",
                                "-b",
                                m_listeners.sasl_ssl,
                                "--topic",
                                m_topic,
                                "--store",
                                redis.uri(),
                                "--key-template",
                                "dedup:pay:{event_id}",
                                "--ttl",
                                "1h",
                                "--retention",
                                "7d",
                                "--effects",
                                "kafka:" + out,
                                "--fail-on",
                                "none",
                                "-o",
                                "json",
                                "--timeout",
                                "60s"};
  for (const auto& property : scram("SCRAM-SHA-512", k_kafka_password)) {
    args.insert(args.end(), {"-X", property});
  }
  auto result = run_dedupctl(args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto effects = parse(result).at("summary").at("effects");
  EXPECT_EQ(effects.at("checked"), 9) << effects;
  EXPECT_EQ(effects.at("applied"), 4) << effects;
  for (const auto* text : {&result.out, &result.err}) {
    EXPECT_EQ(text->find(k_kafka_password), std::string::npos) << *text;
  }
}
