#pragma once

#include "tests/support/fixtures.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

// The test schema registry (tests/support/registry/registry.py, the documented Confluent endpoints)
// and confluent-kafka's serializers (tests/support/registry/serialize.py) in the Python environment
// tests/support/registry/setup makes: DEDUPCTL_REGISTRY_PYTHON names its interpreter.
namespace dedupctl::testing {

class SchemaRegistry {
public:
  // `extra`: more registry.py arguments (--user-info U:P, --token T, --cert/--key).
  explicit SchemaRegistry(const std::vector<std::string>& extra = {});
  bool available() const { return m_process != nullptr; }
  const std::string& why_unavailable() const { return m_why; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(m_port); }
  int port() const { return m_port; }
  // How many requests so far had this method and path ("GET /schemas/ids/1001"), from its log.
  int requests(const std::string& method_and_path) const;

private:
  TempDir m_dir;
  std::unique_ptr<Process> m_process;
  int m_port = 0;
  std::string m_why;
};

struct Serialized {
  std::optional<std::string> key;
  std::optional<std::string> value;
};

// The interpreter with confluent-kafka's serializers; empty (and `why` said) when there is none.
std::string registry_python(std::string& why);

// Runs serialize.py over `plan` against the registry at `url`. Throws std::runtime_error.
std::vector<Serialized> serialize_records(const std::string& url, const nlohmann::json& plan);

} // namespace dedupctl::testing
