#pragma once

// moto's server mode as the tests' DynamoDB (with STS and IAM), and a fault-injecting proxy in
// front of it (tests/support/dynamodb). moto rather than dynalite: its IAM authentication checks
// every request's SigV4 signature against the access keys it issued, so a request libcurl signed
// wrongly cannot pass; and it serves STS's AssumeRoleWithWebIdentity for the web identity path.
#include "tests/support/fixtures.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dedupctl::testing {

// The interpreter of tests/support/dynamodb/setup's environment (DEDUPCTL_DYNAMODB_PYTHON), or "" with `why`.
std::string dynamodb_python(std::string& why);

class DynamoServer {
public:
  static constexpr const char* k_region = "eu-west-1";
  // `authenticated`: IAM authentication on (after the user is made, every request must be signed by its key).
  explicit DynamoServer(bool authenticated = false);
  bool available() const { return m_process != nullptr; }
  const std::string& why_unavailable() const { return m_why; }
  int port() const { return m_port; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(m_port); }
  // dynamodb://TABLE?region=eu-west-1&endpoint=http://127.0.0.1:PORT (or another port: a proxy's).
  std::string uri(const std::string& table, int port = 0) const;
  // The access key and secret every request is signed with (the IAM user's when authenticated).
  const std::string& key_id() const { return m_key_id; }
  const std::string& secret() const { return m_secret; }
  // AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_DEFAULT_REGION for a child process.
  std::map<std::string, std::string> env() const;
  // tests/support/dynamodb/admin.py COMMAND ARGS… with endpoint and credentials; its stdout. Throws on failure.
  std::string admin(const std::vector<std::string>& args) const;
  void create_table(const std::string& table, const std::string& sort_key = {}) const;
  const std::string& python() const { return m_python; }

private:
  TempDir m_dir;
  std::string m_python;
  int m_port = 0;
  std::string m_key_id = "AKIADEDUPCTLTEST0001";
  std::string m_secret = "dedupctl-test-secret";
  std::unique_ptr<Process> m_process;
  std::string m_why;
};

// tests/support/dynamodb/fault_proxy.py in front of `upstream`.
class FaultProxy {
public:
  FaultProxy(const DynamoServer& upstream, const std::vector<std::string>& faults);
  int port() const { return m_port; }
  // What it saw and did: requests, throttled, unprocessed, expired, batch_gets.
  std::map<std::string, int> stats() const;

private:
  TempDir m_dir;
  int m_port = 0;
  std::unique_ptr<Process> m_process;
};

} // namespace dedupctl::testing
