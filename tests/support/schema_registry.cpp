#include "tests/support/schema_registry.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>

namespace dedupctl::testing {

namespace {
const std::string k_dir = std::string(DEDUPCTL_SOURCE_DIR) + "/tests/support/registry";

std::string from_hex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}
} // namespace

std::string registry_python(std::string& why) {
  const char* python = std::getenv("DEDUPCTL_REGISTRY_PYTHON");
  if (!python || !*python || !std::filesystem::exists(python)) {
    why = "no Python with confluent-kafka's serializers: run tests/support/registry/setup and set "
          "DEDUPCTL_REGISTRY_PYTHON (scripts/test does)";
    return {};
  }
  return python;
}

SchemaRegistry::SchemaRegistry(const std::vector<std::string>& extra) {
  std::string python = find_program("python3");
  if (python.empty()) {
    m_why = "python3 is not installed";
    return;
  }
  std::vector<std::string> argv{python, k_dir + "/registry.py", "--first-id", "1000"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  SpawnOptions options;
  options.pipe_stdout = true;
  options.stderr_file = m_dir.file("registry.log");
  m_process = std::make_unique<Process>(argv, options);
  auto line = m_process->read_line(std::chrono::seconds(10));
  if (!line || line->empty()) {
    m_why = "the test registry did not start";
    m_process.reset();
    return;
  }
  m_port = std::stoi(*line);
}

int SchemaRegistry::requests(const std::string& method_and_path) const {
  std::string log = read_file(m_dir.file("registry.log"));
  std::string wanted = "\"" + method_and_path + " HTTP/1.1\"";
  int count = 0;
  for (auto at = log.find(wanted); at != std::string::npos; at = log.find(wanted, at + 1)) {
    ++count;
  }
  return count;
}

std::vector<Serialized> serialize_records(const std::string& url, const nlohmann::json& plan) {
  std::string why;
  std::string python = registry_python(why);
  if (python.empty()) {
    throw std::runtime_error(why);
  }
  auto result = run_command({python, k_dir + "/serialize.py", "--registry", url}, plan.dump());
  if (result.exit_code != 0) {
    throw std::runtime_error("serialize.py failed: " + result.err);
  }
  std::vector<Serialized> out;
  std::size_t start = 0;
  while (start < result.out.size()) {
    auto end = result.out.find('\n', start);
    auto line = result.out.substr(start, end == std::string::npos ? std::string::npos : end - start);
    start = end == std::string::npos ? result.out.size() : end + 1;
    if (line.empty()) {
      continue;
    }
    auto doc = nlohmann::json::parse(line);
    Serialized s;
    if (!doc["key"].is_null()) {
      s.key = from_hex(doc["key"]);
    }
    if (!doc["value"].is_null()) {
      s.value = from_hex(doc["value"]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

} // namespace dedupctl::testing
