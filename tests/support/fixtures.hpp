#pragma once

// Throwaway servers and processes for integration and cli tests. Every fixture cleans up in its
// destructor (so a failed assertion still stops its server), and child processes die with the
// test process (PR_SET_PDEATHSIG) even when it crashes.

#include "tests/support/paths.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

namespace dedupctl::testing {

// CI=true or DEDUPCTL_REQUIRE_SERVERS=1: a missing server fails the test instead of skipping it.
bool servers_required();

// Skips the test locally, fails it in CI, when a server it needs is not available.
#define DEDUPCTL_REQUIRE_SERVER(available, why)                                                                        \
  do {                                                                                                                 \
    if (!(available)) {                                                                                                \
      if (::dedupctl::testing::servers_required()) {                                                                   \
        FAIL() << "required server missing (CI): " << (why);                                                           \
      } else {                                                                                                         \
        GTEST_SKIP() << (why);                                                                                         \
      }                                                                                                                \
    }                                                                                                                  \
  } while (0)

class TempDir {
public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return m_path; }
  std::string file(const std::string& name) const { return m_path + "/" + name; }

private:
  std::string m_path;
};

void write_file(const std::string& path, const std::string& content);
std::string read_file(const std::string& path);
// The file's lines, empty ones left out (an NDJSON file's records); none for a file that is absent.
std::vector<std::string> lines_of_file(const std::string& path);

// A free TCP port on 127.0.0.1 (bound and released; fine for tests).
int free_port();

// Looks for an executable in PATH (and a few fixed directories); empty when absent.
std::string find_program(const std::string& name, const std::vector<std::string>& extra_dirs = {});

struct SpawnOptions {
  bool pipe_stdin = false;
  bool pipe_stdout = false;
  bool silence = false;     // send stdout and stderr to /dev/null (when not piped)
  std::string stderr_file;  // when set, stderr goes to this file instead
  std::string stdout_file;  // when set (and not piped), stdout goes to this file instead
  std::optional<uid_t> uid; // run as this user (servers that refuse root)
  std::optional<gid_t> gid;
  std::map<std::string, std::string> env; // added to the environment
};

// A child process, terminated (SIGTERM, then SIGKILL) when destroyed.
class Process {
public:
  Process(const std::vector<std::string>& argv, const SpawnOptions& options = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return m_pid; }
  // One line of the child's stdout (without the newline); nullopt on EOF or timeout.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = std::chrono::seconds(10));
  void write_line(const std::string& line);
  void signal(int signo);
  // Waits for the exit; returns the exit code (128+signal when killed).
  int wait();
  bool running();

private:
  pid_t m_pid = -1;
  int m_stdin = -1;
  int m_stdout = -1;
  std::string m_buffer;
  std::optional<int> m_status;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs a command to completion, capturing stdout and stderr; kills it after `timeout`.
CommandResult run_command(const std::vector<std::string>& argv, const std::string& input = {},
                          std::chrono::milliseconds timeout = std::chrono::seconds(120),
                          const std::map<std::string, std::string>& env = {});

// The dedupctl binary built with the tests.
CommandResult run_dedupctl(const std::vector<std::string>& args, const std::string& input = {},
                           const std::map<std::string, std::string>& env = {});

// tests/support/mockbroker: librdkafka's mock cluster in a process of its own.
class MockBroker {
public:
  explicit MockBroker(const std::vector<std::string>& topics, int brokers = 1);
  const std::string& bootstrap() const { return m_bootstrap; }
  // Sends a fault-injection command (see mockbroker.cpp) and returns its answer.
  std::string command(const std::string& line);
  // Produces kcat -J envelopes (with their timestamps) into a topic with the seeder.
  void seed(const std::string& topic, const std::string& ndjson);
  // Commits offsets ("0=8,1=3") for a group with the seeder.
  void commit(const std::string& group, const std::string& topic, const std::string& offsets);

private:
  std::unique_ptr<Process> m_process;
  std::string m_bootstrap;
};

// Sends one inline command to a Redis on 127.0.0.1:port; the raw reply, empty when none.
std::string redis_command(int port, const std::string& line);

// Throwaway certificates made with the openssl tool (P-256 keys, PKCS#8, valid two days): a CA; a
// server certificate for localhost and 127.0.0.1 and one for another name, both signed by it; a
// client certificate signed by it; and a second CA that signs nothing and nobody trusts.
class TestCertificates {
public:
  TestCertificates();
  bool available() const { return m_why.empty(); }
  const std::string& why_unavailable() const { return m_why; }
  std::string ca() const { return m_dir.file("ca.pem"); }
  std::string other_ca() const { return m_dir.file("other-ca.pem"); }
  std::string server_cert() const { return m_dir.file("server.pem"); }
  std::string server_key() const { return m_dir.file("server.key"); }
  std::string wrong_name_cert() const { return m_dir.file("elsewhere.pem"); }
  std::string wrong_name_key() const { return m_dir.file("elsewhere.key"); }
  std::string client_cert() const { return m_dir.file("client.pem"); }
  std::string client_key() const { return m_dir.file("client.key"); }

private:
  TempDir m_dir;
  std::string m_why;
};

// A throwaway redis-server on 127.0.0.1: no persistence, its own temp dir.
class RedisServer {
public:
  // `extra` are more redis-server arguments ("--cluster-enabled", "yes", …).
  explicit RedisServer(const std::vector<std::string>& extra = {});
  // `extra_per_attempt` gives them afresh for each port tried: arguments naming more ports
  // (--tls-port, --cluster-port) pick those again, so a port taken meanwhile is not retried.
  explicit RedisServer(const std::function<std::vector<std::string>()>& extra_per_attempt);
  bool available() const { return m_process != nullptr; }
  const std::string& why_unavailable() const { return m_why; }
  int port() const { return m_port; }
  std::string uri() const { return "redis://127.0.0.1:" + std::to_string(m_port); }
  // Sends one inline command and returns the raw reply ("+PONG\r\n").
  std::string command(const std::string& line) const;
  // Kills the server at once (SIGKILL), as a crash would.
  void kill();
  // Kills it and starts it again on the same port, empty (nothing is persisted); false when it does
  // not answer again.
  bool restart();

private:
  TempDir m_dir;
  std::vector<std::string> m_argv;
  int m_port = 0;
  std::unique_ptr<Process> m_process;
  std::string m_why;
};

// A Redis Sentinel on loopback (redis-server --sentinel, as Debian's redis-sentinel runs it)
// monitoring the master at `master_port` as `name`, quorum 1, down after 1 s.
class RedisSentinel {
public:
  // With `tls`: the sentinel also listens on tls_port() and reaches the master over TLS
  // (tls-replication yes), so `master_port` is then the master's TLS port.
  RedisSentinel(int master_port, const std::string& name, const TestCertificates* tls = nullptr);
  int tls_port() const { return m_tls_port; }
  bool available() const { return m_process != nullptr; }
  const std::string& why_unavailable() const { return m_why; }
  int port() const { return m_port; }
  std::string command(const std::string& line) const;
  // The port of the master the sentinel names now (0: none).
  int master_port() const;

private:
  TempDir m_dir;
  int m_port = 0;
  int m_tls_port = 0;
  std::string m_name;
  std::unique_ptr<Process> m_process;
  std::string m_why;
};

// A Redis Cluster on loopback: `masters` redis-servers with --cluster-enabled, `replicas` replicas
// each, joined by redis-cli --cluster create, ready when every node says cluster_state:ok.
// cluster-node-timeout is 1 s so that a replica takes over a killed master within seconds.
class RedisCluster {
public:
  // With `tls`: every node also speaks TLS (no client certificates asked), the cluster bus and
  // replication too (tls-cluster yes), so the cluster announces the TLS ports; seed_uri() is then
  // rediss+cluster:// with the CA, cli() speaks TLS, and the clear-text ports stay the fixture's.
  RedisCluster(int masters, int replicas, const TestCertificates* tls = nullptr);
  bool available() const { return m_why.empty(); }
  const std::string& why_unavailable() const { return m_why; }
  // Every node, masters first as created (the replicas' masters are assigned by redis-cli).
  std::vector<RedisServer*> nodes();
  // redis+cluster://127.0.0.1:P1,… of the first `seeds` nodes (0: all).
  std::string seed_uri(std::size_t seeds = 0) const;
  // The node serving each slot now, per CLUSTER NODES of a live node; nullptr where none does.
  std::vector<RedisServer*> slot_owners();
  RedisServer* master_of(int slot) { return slot_owners().at(static_cast<std::size_t>(slot)); }
  // Runs redis-cli -c … against node 0 (cluster mode: follows redirects).
  CommandResult cli(const std::vector<std::string>& args) const;
  // Waits until every live node says cluster_state:ok and agrees on the slot owners; false on timeout.
  bool wait_ok(std::chrono::milliseconds timeout = std::chrono::seconds(20));
  // The port the cluster announces for `node` (its TLS port with `tls`): where MIGRATE goes.
  int announced_port(const RedisServer* node) const;

private:
  int announced_port(std::size_t i) const;

  std::vector<std::unique_ptr<RedisServer>> m_nodes;
  std::vector<int> m_tls_ports; // with `tls`, per node
  std::vector<std::string> m_tls_cli_args;
  std::string m_ca;
  std::string m_cli;
  std::string m_why;
};

// An unsigned JWT (alg none, as Kafka's unsecured OAUTHBEARER validator takes them) for `sub`,
// issued now and expiring at `exp_s` (epoch seconds).
std::string unsigned_jwt(const std::string& sub, long long exp_s);

// A one-route HTTP/1.1 server on 127.0.0.1 for clients under test (an OIDC token endpoint): every
// request gets `respond(request)` as a 200 application/json body, one connection at a time, on a
// thread of its own until destroyed. requests() counts what it answered.
class HttpResponder {
public:
  explicit HttpResponder(std::function<std::string(const std::string& request)> respond);
  ~HttpResponder();
  HttpResponder(const HttpResponder&) = delete;
  HttpResponder& operator=(const HttpResponder&) = delete;
  int port() const { return m_port; }
  int requests() const { return m_requests.load(); }

private:
  std::function<std::string(const std::string&)> m_respond;
  int m_listen = -1;
  int m_port = 0;
  std::atomic<int> m_requests{0};
  std::atomic<bool> m_stop{false};
  std::thread m_thread;
};

// A redis-server that speaks TLS on tls_port() with `certs`' server certificate (or the one for
// another name), client certificates required when `require_client_cert`. Its clear-text port
// (port(), command()) is the fixture's own, for seeding keys and CONFIG SET: the tool under test is
// only ever given tls_uri().
class TlsRedisServer {
public:
  TlsRedisServer(const TestCertificates& certs, bool require_client_cert, bool wrong_name = false);
  bool available() const { return m_server && m_server->available(); }
  std::string why_unavailable() const { return m_server ? m_server->why_unavailable() : "no certificates"; }
  int port() const { return m_server->port(); }
  int tls_port() const { return m_tls_port; }
  std::string command(const std::string& line) const { return m_server->command(line); }
  // rediss://127.0.0.1:TLSPORT?QUERY (the query as given, without the '?').
  std::string tls_uri(const std::string& query = {}) const;

private:
  int m_tls_port = 0;
  std::unique_ptr<RedisServer> m_server;
};

// A throwaway PostgreSQL: initdb + pg_ctl into a temp dir, as an unprivileged user when we are
// root (PostgreSQL refuses to run as root): DEDUPCTL_PG_USER, default "dedupctl".
class PostgresServer {
public:
  // With `tls`: ssl=on with its server certificate, and TCP connections only over TLS with a client
  // certificate its CA signed as well as the password (hostssl … scram-sha-256 clientcert=verify-ca).
  explicit PostgresServer(const TestCertificates* tls = nullptr);
  ~PostgresServer();
  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;
  bool available() const { return m_running; }
  const std::string& why_unavailable() const { return m_why; }
  int port() const { return m_port; }
  // libpq conninfo over the Unix socket, as the superuser, database "postgres" (trusted). TCP
  // connections on 127.0.0.1:port() need a password (scram-sha-256).
  std::string conninfo() const;
  // Runs SQL with psql; returns its result.
  CommandResult psql(const std::string& sql) const;
  void stop();
  // Starts it again on the same port and data after stop(); false when pg_ctl fails.
  bool start();

private:
  std::string m_bin;
  std::string m_dir;
  std::string m_user;
  std::optional<uid_t> m_uid;
  std::optional<gid_t> m_gid;
  int m_port = 0;
  bool m_running = false;
  std::string m_why;
};

// A TCP connection to 127.0.0.1:port (blocking), or -1.
int connect_loopback(int port);

// An HTTP/1.1 GET of `target` ("/metrics", "/api/v1/query?query=…") on 127.0.0.1:port, the whole
// answer read until the server closes; nullopt when nothing answers within `timeout`.
struct HttpAnswer {
  int status = 0;
  std::string headers;
  std::string body;
};
std::optional<HttpAnswer> http_get(int port, const std::string& target, const std::string& accept = {},
                                   std::chrono::milliseconds timeout = std::chrono::seconds(5));
// Asks GET `target` every 100 ms until `done(answer)` or `timeout`; the last answer (nullopt when
// nothing ever answered).
std::optional<HttpAnswer> poll_http(int port, const std::string& target,
                                    const std::function<bool(const HttpAnswer&)>& done,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(20));
// Percent-encodes a query parameter's value.
std::string url_encode(std::string_view text);

// Debian's Prometheus on 127.0.0.1, scraping 127.0.0.1:PORT of each target every second (job
// "dedupctl"), its TSDB in a temp dir of its own.
class PrometheusServer {
public:
  // `job` are more lines of the scrape job (each indented four spaces: scheme, tls_config,
  // basic_auth, its own scrape_interval …); promtool checks the config before Prometheus starts.
  explicit PrometheusServer(const std::vector<int>& target_ports, const std::string& job = {});
  explicit PrometheusServer(int target_port, const std::string& job = {})
      : PrometheusServer(std::vector<int>{target_port}, job) {}
  bool available() const { return m_process != nullptr; }
  const std::string& why_unavailable() const { return m_why; }
  int port() const { return m_port; }
  // The instant query's samples, by the value of label `by` (or "" for one sample without it);
  // empty when there are none. Throws when Prometheus refuses the query.
  std::map<std::string, double> query(const std::string& promql, const std::string& by = {}) const;
  // Asks `promql` until `done(samples)` or `timeout` passed; returns the last samples.
  std::map<std::string, double> wait_for(const std::string& promql,
                                         const std::function<bool(const std::map<std::string, double>&)>& done,
                                         std::chrono::milliseconds timeout = std::chrono::seconds(30),
                                         const std::string& by = {}) const;
  std::string log() const { return read_file(m_dir.file("prometheus.log")); }

private:
  TempDir m_dir;
  int m_port = 0;
  std::unique_ptr<Process> m_process;
  std::string m_why;
};

} // namespace dedupctl::testing
