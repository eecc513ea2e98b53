#include "tests/support/dynamodb_server.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace dedupctl::testing {

namespace {
const std::string k_dir = std::string(DEDUPCTL_SOURCE_DIR) + "/tests/support/dynamodb";
} // namespace

std::string dynamodb_python(std::string& why) {
  const char* python = std::getenv("DEDUPCTL_DYNAMODB_PYTHON");
  if (!python || !*python || !std::filesystem::exists(python)) {
    why = "no Python with moto and the AWS CLI: run tests/support/dynamodb/setup and set DEDUPCTL_DYNAMODB_PYTHON "
          "(scripts/test does)";
    return {};
  }
  return python;
}

DynamoServer::DynamoServer(bool authenticated) {
  m_python = dynamodb_python(m_why);
  if (m_python.empty()) {
    return;
  }
  SpawnOptions options;
  options.silence = true;
  options.stderr_file = m_dir.file("moto.log");
  // With authentication on, moto lets this many requests through unsigned (making the IAM user and
  // its key), then checks every signature.
  if (authenticated) {
    options.env["INITIAL_NO_AUTH_ACTION_COUNT"] = "3";
  }
  for (int attempt = 0; attempt < 3 && !m_process; ++attempt) {
    m_port = free_port();
    m_process = std::make_unique<Process>(
        std::vector<std::string>{m_python, "-m", "moto.server", "-H", "127.0.0.1", "-p", std::to_string(m_port)},
        options);
    bool ready = false;
    for (int i = 0; i < 150 && m_process->running(); ++i) {
      if (auto answer = http_get(m_port, "/moto-api/"); answer && answer->status > 0) {
        ready = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!ready) {
      m_process.reset();
    }
  }
  if (!m_process) {
    m_why = "moto's server did not start: " + read_file(m_dir.file("moto.log"));
    return;
  }
  if (authenticated) {
    std::istringstream keys(admin({"create-user", endpoint()}));
    keys >> m_key_id >> m_secret;
  }
}

std::string DynamoServer::uri(const std::string& table, int port) const {
  return fmt::format("dynamodb://{}?region={}&endpoint=http://127.0.0.1:{}", table, k_region, port ? port : m_port);
}

std::map<std::string, std::string> DynamoServer::env() const {
  return {{"AWS_ACCESS_KEY_ID", m_key_id},
          {"AWS_SECRET_ACCESS_KEY", m_secret},
          {"AWS_DEFAULT_REGION", k_region},
          {"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
          {"AWS_CONFIG_FILE", "/nonexistent"}};
}

std::string DynamoServer::admin(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{m_python, k_dir + "/admin.py"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = run_command(argv, "", std::chrono::seconds(60), env());
  if (result.exit_code != 0) {
    throw std::runtime_error(fmt::format("admin.py {} failed: {}", args.empty() ? "" : args[0], result.err));
  }
  return result.out;
}

void DynamoServer::create_table(const std::string& table, const std::string& sort_key) const {
  std::vector<std::string> args{"create-table", endpoint(), k_region, table};
  if (!sort_key.empty()) {
    args.push_back(sort_key);
  }
  admin(args);
}

FaultProxy::FaultProxy(const DynamoServer& upstream, const std::vector<std::string>& faults) {
  std::vector<std::string> argv{upstream.python(), k_dir + "/fault_proxy.py",
                                "--upstream",      std::to_string(upstream.port()),
                                "--stats",         m_dir.file("stats.json")};
  argv.insert(argv.end(), faults.begin(), faults.end());
  SpawnOptions options;
  options.pipe_stdout = true;
  options.stderr_file = m_dir.file("proxy.log");
  m_process = std::make_unique<Process>(argv, options);
  auto line = m_process->read_line(std::chrono::seconds(10));
  if (!line || line->empty()) {
    throw std::runtime_error("the fault proxy did not start: " + read_file(m_dir.file("proxy.log")));
  }
  m_port = std::stoi(*line);
}

std::map<std::string, int> FaultProxy::stats() const {
  std::map<std::string, int> out;
  if (!std::filesystem::exists(m_dir.file("stats.json"))) {
    return out;
  }
  auto json = nlohmann::json::parse(read_file(m_dir.file("stats.json")), nullptr, false);
  if (json.is_object()) {
    for (const auto& [name, value] : json.items()) {
      out[name] = value.get<int>();
    }
  }
  return out;
}

} // namespace dedupctl::testing
