// Kafka as production secures it, end to end against a real Apache Kafka 4.x broker with secured
// listeners (tests/support/kafka_broker.hpp): SASL_SSL with SCRAM-SHA-256, SCRAM-SHA-512 and PLAIN,
// SSL with a client certificate; and each one's bad twins (a wrong password, an untrusted CA, no
// client certificate), exit 3 within seconds whatever --timeout says, with the cause in words and
// the secret in no output.
#include "tests/cli/report_json.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/planted.hpp"

#include <gtest/gtest.h>

#include <chrono>

using namespace dedupctl::testing;

namespace {

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

} // namespace
