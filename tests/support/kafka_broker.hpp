#pragma once

// A real Apache Kafka broker for the `real-kafka` tests: KRaft, one node that is broker and
// controller, on free loopback ports, in a temp dir. Its jars come from Maven Central through the
// pinned tests/support/kafka/pom.xml (tests/support/kafka/fetch; scripts/test fetches them first) and
// run on the machine's Java 17. The broker is a child process stopped by SIGTERM, then SIGKILL after
// a bound, when the fixture goes, and killed with the test process if that crashes
// (PR_SET_PDEATHSIG). Its log stays in the temp dir; log() gives it for a failing test.

#include "tests/support/fixtures.hpp"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace dedupctl::testing {

// Secured listeners beside the plaintext one, as managed services run them: SASL_SSL (SCRAM-SHA-256,
// SCRAM-SHA-512 and PLAIN for user `k_kafka_user`), SSL with client certificates required, and
// SASL_PLAINTEXT OAUTHBEARER with Kafka's unsecured validator (any unsigned JWT with a `sub`), all
// with `certs`' server certificate.
inline constexpr const char* k_kafka_user = "app";
inline constexpr const char* k_kafka_password = "Kafka-s3cret-pw";
struct SecuredListeners {
  std::string sasl_ssl;
  std::string ssl;
  std::string oauthbearer;
};

class KafkaBroker {
public:
  explicit KafkaBroker(const TestCertificates* secured = nullptr);
  ~KafkaBroker();
  KafkaBroker(const KafkaBroker&) = delete;
  KafkaBroker& operator=(const KafkaBroker&) = delete;

  bool available() const { return m_process != nullptr; }
  const std::string& why_unavailable() const { return m_why; }
  const std::string& bootstrap() const { return m_bootstrap; }
  // The secured listeners' host:port (empty without `secured`).
  const SecuredListeners& secured() const { return m_secured; }

  // Stops the broker (SIGTERM, SIGKILL after 20 s) and starts it again on the same log dir and ports.
  void stop();
  bool start();

  // Runs a Kafka command-line tool by the main class its bin/kafka-*.sh script names, e.g.
  // k_consumer_groups with {"--bootstrap-server", …, "--describe", …}.
  CommandResult tool(const std::string& main_class, const std::vector<std::string>& args) const;
  // The same tool left running (a console consumer that stays a member), its stdout piped.
  std::unique_ptr<Process> spawn_tool(const std::string& main_class, const std::vector<std::string>& args) const;

  // The broker's own log (server.log), for a failing test.
  std::string log() const;

private:
  TempDir m_dir;
  std::string m_java;
  std::string m_libs;
  std::string m_bootstrap;
  std::string m_why;
  int m_port = 0;
  int m_controller_port = 0;
  SecuredListeners m_secured;
  std::unique_ptr<Process> m_process;
};

// Main classes of the tools, as Kafka 4.3's bin scripts run them.
inline constexpr const char* k_consumer_groups = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
inline constexpr const char* k_delete_records = "org.apache.kafka.tools.DeleteRecordsCommand";
inline constexpr const char* k_configs = "kafka.admin.ConfigCommand";
inline constexpr const char* k_console_consumer = "org.apache.kafka.tools.consumer.ConsoleConsumer";
inline constexpr const char* k_console_share_consumer = "org.apache.kafka.tools.consumer.ConsoleShareConsumer";
inline constexpr const char* k_share_groups = "org.apache.kafka.tools.consumer.group.ShareGroupCommand";

// A fresh KRaft cluster id as kafka-storage random-uuid prints it (22 base64url characters), never
// one that starts with '-'.
std::string kraft_cluster_id();

// The jars of the pinned broker and tools (tests/support/kafka/fetch); empty with `why` when they
// cannot be had.
std::string kafka_libs(std::string& why);

// The broker every test of a binary shares (started on first use, stopped at exit).
KafkaBroker& shared_kafka_broker();
// A broker with the secured listeners above, shared the same way, and its certificates.
KafkaBroker& shared_secured_kafka_broker();
const TestCertificates& shared_test_certificates();

// A topic of a test's own, for tests parameterised over the brokers: `name` on a mock cluster of its
// own ("mock"), or `name-N` on the shared real broker ("kafka"); seeded with `events` (kcat -J lines)
// and, when `group` is given, committed by it at `commits` (partition, offset). `bootstrap` is empty
// with `why` when the real broker is not available.
struct TestTopic {
  std::unique_ptr<MockBroker> mock;
  std::string bootstrap;
  std::string topic;
  std::string why;
};
TestTopic fresh_topic(const std::string& kind, const std::string& name, int partitions, const std::string& events,
                      const std::string& group = {},
                      const std::vector<std::pair<std::int32_t, std::int64_t>>& commits = {});

// Produces kcat -J envelopes (NDJSON; partition and timestamp as each line says) into an existing
// topic with the seeder. Throws std::runtime_error.
void seed_topic(const std::string& bootstrap, const std::string& topic, const std::string& events);

// Another topic on the same cluster (on the real broker a name of its own, returned), holding
// `events` when given.
std::string add_topic(TestTopic& cluster, const std::string& name, int partitions, const std::string& events = {});

// For tests parameterised over the brokers: the bootstrap of a cluster of `kind` ("mock": a
// MockBroker of its own; "kafka": the shared real broker) holding `topics` ("NAME:PARTITIONS"),
// which `seed` fills once per process. Empty with `why` when the real broker is not available.
std::string seeded_cluster(const std::string& kind, const std::vector<std::string>& topics,
                           const std::function<void(const std::string& bootstrap)>& seed, std::string& why);

} // namespace dedupctl::testing
