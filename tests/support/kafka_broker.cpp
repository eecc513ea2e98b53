#include "tests/support/kafka_broker.hpp"

#include "tests/support/kafka_tools.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <stdexcept>
#include <thread>

namespace dedupctl::testing {

// 16 random bytes, base64url without padding. Like Kafka's Uuid.randomUuid, never one that starts
// with '-': kafka-storage would read it as an option ("argument --cluster-id/-t: expected one
// argument"), one start in 64.
std::string kraft_cluster_id() {
  static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::random_device random;
  std::string id;
  id += alphabet[random() % 62];
  for (int i = 1; i < 21; ++i) {
    id += alphabet[random() % 64];
  }
  id += alphabet[(random() % 4) * 16]; // the last character holds 2 bits
  return id;
}

namespace {

// A file of tests/support/kafka with its @NAME@ placeholders filled in (the broker script fills the
// same files).
std::string from_template(const std::string& name, const std::vector<std::pair<std::string, std::string>>& values) {
  std::string text = read_file(std::string(DEDUPCTL_SOURCE_DIR) + "/tests/support/kafka/" + name);
  for (const auto& [placeholder, value] : values) {
    for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size())) {
      text.replace(at, placeholder.size(), value);
    }
  }
  return text;
}

std::vector<std::string> java_command(const std::string& java, const std::string& libs, const std::string& main_class,
                                      const std::vector<std::string>& args, const std::string& log4j) {
  std::vector<std::string> argv{java,
                                "-Xms128m",
                                "-Xmx512m",
                                "-XX:+UseSerialGC",
                                "-XX:TieredStopAtLevel=1",
                                "-Djava.awt.headless=true",
                                "-Duser.timezone=UTC", // the tools read a zoneless --to-datetime in it
                                "-Dlog4j2.configurationFile=" + log4j,
                                "-cp",
                                libs + "/*",
                                main_class};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

} // namespace

std::string kafka_libs(std::string& why) {
  if (const char* libs = std::getenv("DEDUPCTL_KAFKA_LIBS"); libs && *libs) {
    if (std::filesystem::is_directory(libs)) {
      return libs; // scripts/test fetched them
    }
  }
  auto fetched =
      run_command({std::string(DEDUPCTL_SOURCE_DIR) + "/tests/support/kafka/fetch"}, {}, std::chrono::minutes(10));
  if (fetched.exit_code != 0) {
    why = "cannot fetch the Kafka broker (tests/support/kafka/fetch): " + fetched.err;
    return {};
  }
  std::string libs = fetched.out;
  while (!libs.empty() && (libs.back() == '\n' || libs.back() == '\r')) {
    libs.pop_back();
  }
  return libs;
}

namespace {

// The lines server.properties gets after the template's for the secured listeners (a later key
// wins), and the broker's PEM keystore beside them.
std::string secured_properties(const TestCertificates& certs, const TempDir& dir, int port, int controller_port,
                               const SecuredListeners& listeners) {
  write_file(dir.file("keystore.pem"), read_file(certs.server_key()) + read_file(certs.server_cert()));
  std::string plain = fmt::format("PLAINTEXT://127.0.0.1:{}", port);
  std::string secured =
      fmt::format("SASL_SSL://{},SSL://{},OAUTH://{}", listeners.sasl_ssl, listeners.ssl, listeners.oauthbearer);
  std::string scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;";
  return fmt::format(
      "listeners={0},CONTROLLER://127.0.0.1:{1},{2}\n"
      "advertised.listeners={0},{2}\n"
      "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL,"
      "OAUTH:SASL_PLAINTEXT\n"
      "ssl.keystore.type=PEM\nssl.keystore.location={3}\n"
      "ssl.truststore.type=PEM\nssl.truststore.location={4}\n"
      "listener.name.ssl.ssl.client.auth=required\n"
      "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512,PLAIN\n"
      "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config={5}\n"
      "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config={5}\n"
      "listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
      "required user_{6}=\"{7}\";\n"
      // An authorizer, as a secured cluster has one: what no ACL names stays open to every
      // principal, the broker's own (ANONYMOUS over PLAINTEXT and the controller listener) are
      // super users, and a test sets the ACLs it needs (add_topic_acl).
      "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
      "allow.everyone.if.no.acl.found=true\nsuper.users=User:ANONYMOUS\n"
      "listener.name.oauth.sasl.enabled.mechanisms=OAUTHBEARER\n"
      "listener.name.oauth.oauthbearer.sasl.jaas.config="
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;\n",
      plain, controller_port, secured, dir.file("keystore.pem"), certs.ca(), scram, k_kafka_user, k_kafka_password);
}

} // namespace

KafkaBroker::KafkaBroker(const TestCertificates* secured) {
  if (secured && !secured->available()) {
    m_why = secured->why_unavailable();
    return;
  }
  m_java = find_program("java");
  if (m_java.empty()) {
    m_why = "java is not installed (scripts/install-deps installs openjdk-17-jre-headless)";
    return;
  }
  m_libs = kafka_libs(m_why);
  if (m_libs.empty()) {
    return;
  }
  // A free port can be taken again before the broker binds it (another test's connection): a
  // broker that exits at once is tried again on other ports, with a fresh log dir.
  for (int attempt = 0; attempt < 3 && !m_process; ++attempt) {
    std::filesystem::remove_all(m_dir.file("data"));
    m_port = free_port();
    do {
      m_controller_port = free_port();
    } while (m_controller_port == m_port);
    m_bootstrap = fmt::format("127.0.0.1:{}", m_port);
    write_file(m_dir.file("log4j2.properties"),
               from_template("log4j2.properties.in", {{"@LOG_FILE@", m_dir.file("server.log")}}));
    write_file(m_dir.file("tools-log4j2.properties"), "status = warn\nrootLogger.level = warn\n");
    std::string properties =
        from_template("server.properties.in", {{"@PORT@", std::to_string(m_port)},
                                               {"@CONTROLLER_PORT@", std::to_string(m_controller_port)},
                                               {"@LOG_DIRS@", m_dir.file("data")}});
    std::vector<std::string> format_args{"format", "-t", kraft_cluster_id(), "-c", m_dir.file("server.properties")};
    if (secured) {
      m_secured = {fmt::format("127.0.0.1:{}", free_port()), fmt::format("127.0.0.1:{}", free_port()),
                   fmt::format("127.0.0.1:{}", free_port())};
      properties += secured_properties(*secured, m_dir, m_port, m_controller_port, m_secured);
      // The SCRAM credentials go into the metadata log as it is formatted (kafka-storage --add-scram).
      for (const char* mechanism : {"SCRAM-SHA-256", "SCRAM-SHA-512"}) {
        format_args.insert(format_args.end(), {"--add-scram", fmt::format("{}=[name={},password={}]", mechanism,
                                                                          k_kafka_user, k_kafka_password)});
      }
    }
    write_file(m_dir.file("server.properties"), properties);
    auto format = run_command(
        java_command(m_java, m_libs, "kafka.tools.StorageTool", format_args, m_dir.file("log4j2.properties")), {},
        std::chrono::minutes(2));
    if (format.exit_code != 0) {
      m_why = "kafka-storage format failed: " + format.out + format.err;
      return;
    }
    start();
  }
  if (!m_process) {
    m_why = "the Kafka broker did not start (3 attempts); its log:\n" + log();
  }
}

KafkaBroker::~KafkaBroker() { stop(); }

bool KafkaBroker::start() {
  SpawnOptions options;
  options.silence = true;
  auto process = std::make_unique<Process>(
      java_command(m_java, m_libs, "kafka.Kafka", {m_dir.file("server.properties")}, m_dir.file("log4j2.properties")),
      options);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  while (std::chrono::steady_clock::now() < deadline && process->running()) {
    if (answers_metadata(m_bootstrap, 1000)) {
      m_process = std::move(process);
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return false;
}

void KafkaBroker::stop() {
  if (!m_process) {
    return;
  }
  m_process->signal(SIGTERM);
  for (int i = 0; i < 200 && m_process->running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (m_process->running()) {
    m_process->signal(SIGKILL);
  }
  m_process->wait();
  m_process.reset();
}

CommandResult KafkaBroker::tool(const std::string& main_class, const std::vector<std::string>& args) const {
  return run_command(java_command(m_java, m_libs, main_class, args, m_dir.file("tools-log4j2.properties")), {},
                     std::chrono::minutes(2));
}

std::unique_ptr<Process> KafkaBroker::spawn_tool(const std::string& main_class,
                                                 const std::vector<std::string>& args) const {
  SpawnOptions options;
  options.pipe_stdout = true;
  options.stderr_file = m_dir.file("tools-stderr.log");
  return std::make_unique<Process>(
      java_command(m_java, m_libs, main_class, args, m_dir.file("tools-log4j2.properties")), options);
}

std::string KafkaBroker::log() const { return read_file(m_dir.file("server.log")); }

KafkaBroker& shared_kafka_broker() {
  static KafkaBroker broker;
  return broker;
}

const TestCertificates& shared_test_certificates() {
  static TestCertificates certs;
  return certs;
}

KafkaBroker& shared_secured_kafka_broker() {
  static KafkaBroker broker(&shared_test_certificates());
  return broker;
}

std::string seeded_cluster(const std::string& kind, const std::vector<std::string>& topics,
                           const std::function<void(const std::string& bootstrap)>& seed, std::string& why) {
  static std::map<std::string, std::unique_ptr<MockBroker>> mocks; // kept until exit
  static std::map<std::string, std::string> ready;                 // kind and topics → bootstrap
  std::string key = kind;
  for (const auto& topic : topics) {
    key += " " + topic;
  }
  if (auto it = ready.find(key); it != ready.end()) {
    return it->second;
  }
  std::string bootstrap;
  if (kind == "kafka") {
    KafkaBroker& broker = shared_kafka_broker();
    if (!broker.available()) {
      why = broker.why_unavailable();
      return {};
    }
    bootstrap = broker.bootstrap();
    for (const auto& topic : topics) {
      auto colon = topic.find(':');
      create_topic(bootstrap, topic.substr(0, colon), std::stoi(topic.substr(colon + 1)), {{"retention.ms", "-1"}});
    }
  } else {
    mocks[key] = std::make_unique<MockBroker>(topics);
    bootstrap = mocks[key]->bootstrap();
  }
  seed(bootstrap);
  ready[key] = bootstrap;
  return bootstrap;
}

void seed_topic(const std::string& bootstrap, const std::string& topic, const std::string& events) {
  auto seeded = run_command({DEDUPCTL_SEEDER, "-b", bootstrap, "--topic", topic, "--input", "-"}, events);
  if (seeded.exit_code != 0) {
    throw std::runtime_error("seeder failed: " + seeded.err);
  }
}

TestTopic fresh_topic(const std::string& kind, const std::string& name, int partitions, const std::string& events,
                      const std::string& group, const std::vector<std::pair<std::int32_t, std::int64_t>>& commits) {
  TestTopic out;
  if (kind == "kafka") {
    KafkaBroker& broker = shared_kafka_broker();
    if (!broker.available()) {
      out.why = broker.why_unavailable();
      return out;
    }
    out.bootstrap = broker.bootstrap();
    out.topic = add_topic(out, name, partitions);
  } else {
    out.topic = name;
    out.mock = std::make_unique<MockBroker>(std::vector<std::string>{fmt::format("{}:{}", name, partitions)});
    out.bootstrap = out.mock->bootstrap();
  }
  seed_topic(out.bootstrap, out.topic, events);
  if (!group.empty()) {
    commit_offsets(out.bootstrap, group, out.topic, commits);
  }
  return out;
}

std::string add_topic(TestTopic& cluster, const std::string& name, int partitions, const std::string& events) {
  std::string topic = name;
  if (cluster.mock) {
    if (auto answer = cluster.mock->command(fmt::format("topic {} {}", name, partitions)); answer != "ok") {
      throw std::runtime_error("the mock cluster could not create " + name + ": " + answer);
    }
  } else {
    static int topics = 0;
    topic = fmt::format("{}-{}", name, ++topics);
    create_topic(cluster.bootstrap, topic, partitions, {{"retention.ms", "-1"}});
  }
  if (!events.empty()) {
    seed_topic(cluster.bootstrap, topic, events);
  }
  return topic;
}

} // namespace dedupctl::testing
