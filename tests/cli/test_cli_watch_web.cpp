// watch's /metrics as exporters serve it (--web-config, exporter-toolkit's file): Debian's Prometheus
// scrapes it over TLS with basic auth and a client certificate (promtool checks that scrape config);
// a wrong password, an untrusted or missing client certificate and plain HTTP are refused; held,
// slow and oversized connections do not keep Prometheus from its scrapes; SIGHUP reads the file
// again; a bad file is exit 2 naming the field; no password or hash is ever printed.
#include "core/util/encoding.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <thread>

using namespace dedupctl::testing;

namespace {

constexpr const char* k_user = "prometheus";
constexpr const char* k_password = "Scrape-s3cret-pw";

class WatchWeb : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    DEDUPCTL_REQUIRE_SERVER(m_certs.available(), m_certs.why_unavailable());
    for (const char* program : {"prometheus", "promtool", "htpasswd", "curl", "openssl"}) {
      DEDUPCTL_REQUIRE_SERVER(!find_program(program).empty(),
                              fmt::format("{} is not installed (scripts/install-deps installs it)", program));
    }
    long long now = wall_ms();
    m_cluster = fresh_topic("mock", "web", 1, planted(now, now - 30 * k_minute), "billing", {{0, 8}});
    ASSERT_FALSE(m_cluster.bootstrap.empty()) << m_cluster.why;
    plant_records(m_redis);
    m_port = free_port();
    write_file(m_dir.file("password"), k_password);
  }

  // A bcrypt hash as operators make one (Apache's htpasswd, not our code).
  std::string bcrypt(const std::string& password) {
    auto made = run_command({"htpasswd", "-nbB", "-C", "5", k_user, password});
    EXPECT_EQ(made.exit_code, 0) << made.err;
    auto line = made.out.substr(0, made.out.find('\n'));
    return line.substr(line.find(':') + 1);
  }

  std::string web_config(const std::string& password, const std::string& client_auth = "RequireAndVerifyClientCert") {
    m_hash = bcrypt(password);
    return fmt::format("tls_server_config:\n  cert_file: {}\n  key_file: {}\n  client_auth_type: {}\n"
                       "  client_ca_file: {}\nbasic_auth_users:\n  {}: {}\nhttp_server_config:\n  headers:\n"
                       "    X-Content-Type-Options: nosniff\n",
                       m_certs.server_cert(), m_certs.server_key(), client_auth, m_certs.ca(), k_user, m_hash);
  }

  void start(const std::string& config) {
    write_file(m_dir.file("web.yml"), config);
    m_watch = spawn_watch(watch_args(m_cluster.bootstrap, m_cluster.topic, m_redis.uri(), m_port,
                                     {"--web-config", m_dir.file("web.yml")}),
                          m_dir.file("watch.err"));
    for (int i = 0; i < 100 && err().find("serving /metrics") == std::string::npos; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_NE(err().find("(port " + std::to_string(m_port) + ", TLS, basic auth)"), std::string::npos) << err();
  }

  // curl's answer to GET /metrics: its status ("000" when the connection was refused).
  CommandResult curl(const std::vector<std::string>& extra, const std::string& scheme = "https") {
    std::vector<std::string> args{"curl",         "-s",         "-o", m_dir.file("body"), "-w",
                                  "%{http_code}", "--max-time", "10", "--cacert",         m_certs.ca()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(fmt::format("{}://127.0.0.1:{}/metrics", scheme, m_port));
    return run_command(args);
  }
  std::vector<std::string> client_cert() const {
    return {"--cert", m_certs.client_cert(), "--key", m_certs.client_key()};
  }
  std::vector<std::string> login(const std::string& password) const {
    return {"-u", std::string(k_user) + ":" + password};
  }
  std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) const {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  }

  // The scrape job Prometheus' own documentation gives for such an exporter.
  std::string secured_job(const std::string& interval = "1s", const std::string& timeout = "900ms") const {
    return fmt::format("    scrape_interval: {}\n    scrape_timeout: {}\n    scheme: https\n    tls_config:\n"
                       "      ca_file: {}\n      cert_file: {}\n      key_file: {}\n    basic_auth:\n"
                       "      username: {}\n      password_file: {}\n",
                       interval, timeout, m_certs.ca(), m_certs.client_cert(), m_certs.client_key(), k_user,
                       m_dir.file("password"));
  }

  std::string err() const { return read_file(m_dir.file("watch.err")); }

  TempDir m_dir;
  TestCertificates m_certs;
  RedisServer m_redis;
  TestTopic m_cluster;
  int m_port = 0;
  std::string m_hash;
  std::unique_ptr<Process> m_watch;
};

} // namespace

TEST_F(WatchWeb, PrometheusScrapesOverTlsWithBasicAuthAndAClientCertificateAndTheRestIsRefused) {
  start(web_config(k_password));
  PrometheusServer prometheus(m_port, secured_job());
  ASSERT_TRUE(prometheus.available()) << prometheus.why_unavailable();
  auto up = prometheus.wait_for("up", [](const auto& s) { return s.count("") && s.at("") == 1; });
  EXPECT_EQ(up[""], 1) << prometheus.log() << err();
  auto seen = prometheus.wait_for("dedupctl_ttl_seconds", [](const auto& s) { return !s.empty(); });
  EXPECT_EQ(seen[""], 3600) << err();

  auto good = curl(with(client_cert(), login(k_password)));
  EXPECT_EQ(good.out, "200") << good.err;
  auto wrong = curl(with(client_cert(), login("Scrape-s3cret-pX")));
  EXPECT_EQ(wrong.out, "401");
  EXPECT_EQ(read_file(m_dir.file("body")), "Unauthorized\n") << "no detail in a refusal";
  EXPECT_EQ(curl(client_cert()).out, "401") << "no credentials";
  EXPECT_EQ(curl(with(client_cert(), {"-u", "someone:" + std::string(k_password)})).out, "401") << "unknown user";
  // Every byte is compared, as exporter-toolkit does: the password, a NUL and more is another password
  // (crypt(3) would stop at the NUL).
  for (const std::string& tail : {std::string("\0", 1), std::string("\0anything", 9)}) {
    std::string header;
    dedupctl::core::base64_encode(std::string(k_user) + ":" + k_password + tail, dedupctl::core::Base64::Standard, true,
                                  header);
    EXPECT_EQ(curl(with(client_cert(), {"-H", "Authorization: Basic " + header})).out, "401") << header;
  }

  EXPECT_EQ(curl(login(k_password)).out, "000") << "no client certificate";
  auto untrusted_key = m_dir.file("untrusted.key");
  auto untrusted = run_command({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                                "/CN=prometheus", "-keyout", untrusted_key, "-out", m_dir.file("untrusted.pem")});
  ASSERT_EQ(untrusted.exit_code, 0) << untrusted.err;
  EXPECT_EQ(curl(with({"--cert", m_dir.file("untrusted.pem"), "--key", untrusted_key}, login(k_password))).out, "000")
      << "a client certificate no client_ca_file signed";
  EXPECT_EQ(curl(login(k_password), "http").out, "000") << "plain HTTP on the TLS port";
  EXPECT_TRUE(m_watch->running());

  m_watch->signal(SIGTERM);
  m_watch->wait();
  for (const std::string& secret : {std::string(k_password), m_hash, m_hash.substr(7)}) {
    EXPECT_EQ(err().find(secret), std::string::npos) << "a secret in watch's stderr: " << err();
    EXPECT_EQ(prometheus.log().find(secret), std::string::npos);
  }
}

// 10 000 connections opened and held, one TLS handshake that never ends and a request with a 1 MiB
// header, all at once: Prometheus (scraping every 2 s with a 2 s timeout) misses no scrape.
TEST_F(WatchWeb, HeldSlowAndHugeConnectionsDoNotStopPrometheusScrapes) {
  start(web_config(k_password));
  PrometheusServer prometheus(m_port, secured_job("2s", "2s"));
  ASSERT_TRUE(prometheus.available()) << prometheus.why_unavailable();
  prometheus.wait_for("up", [](const auto& s) { return s.count("") && s.at("") == 1; });

  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  std::size_t held_count = std::min<std::size_t>(10'000, limit.rlim_cur > 200 ? limit.rlim_cur - 200 : 0);
  ASSERT_GE(held_count, 10'000u) << "the open-file limit (" << limit.rlim_max << ") cannot hold 10 000 connections";
  std::vector<int> held;
  for (std::size_t i = 0; i < held_count; ++i) {
    int fd = connect_loopback(m_port);
    ASSERT_GE(fd, 0) << "connection " << i;
    held.push_back(fd);
  }
  int slow = connect_loopback(m_port);
  (void)::send(slow, "\x16\x03", 2, MSG_NOSIGNAL); // a TLS record begun and never finished
  int huge = connect_loopback(m_port);
  std::thread big([huge] {
    std::string request = "GET /metrics HTTP/1.1\r\nX-Big: " + std::string(1 << 20, 'a') + "\r\n\r\n";
    (void)::send(huge, request.data(), request.size(), MSG_NOSIGNAL);
  });
  auto flood_start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(16));
  auto lasted = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - flood_start);
  auto scrapes = prometheus.query(fmt::format("count_over_time(up[{}s])", lasted.count() - 1));
  auto worst = prometheus.query(fmt::format("min_over_time(up[{}s])", lasted.count() - 1));
  EXPECT_GE(scrapes[""], 6) << "a scrape every 2 s during the flood";
  EXPECT_EQ(worst[""], 1) << "a scrape failed during the flood: " << prometheus.log();
  big.join();
  for (int fd : held) {
    ::close(fd);
  }
  ::close(slow);
  ::close(huge);
  EXPECT_TRUE(m_watch->running());
}

// SIGHUP reads --web-config again with the config file: a new password is taken; a broken file is
// refused, said, and the watch serves on with the one it had.
TEST_F(WatchWeb, SighupReadsTheWebConfigAgainAndKeepsTheOldOneWhenBroken) {
  start(web_config(k_password));
  EXPECT_EQ(curl(with(client_cert(), login(k_password))).out, "200");
  write_file(m_dir.file("web.yml"), web_config("Rotated-pw-2"));
  m_watch->signal(SIGHUP);
  std::string status;
  for (int i = 0; i < 100 && status != "200"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    status = curl(with(client_cert(), login("Rotated-pw-2"))).out;
  }
  EXPECT_EQ(status, "200") << err();
  EXPECT_EQ(curl(with(client_cert(), login(k_password))).out, "401") << "the old password after the reload";

  write_file(m_dir.file("web.yml"), "tls_server_config:\n  cert_file: /nonexistent/server.pem\n  key_file: x\n");
  m_watch->signal(SIGHUP);
  for (int i = 0; i < 100 && err().find("watching on with the settings it had") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_NE(err().find("watching on with the settings it had"), std::string::npos) << err();
  EXPECT_NE(err().find("tls_server_config: cert_file /nonexistent/server.pem: no such file"), std::string::npos)
      << err();
  EXPECT_EQ(curl(with(client_cert(), login("Rotated-pw-2"))).out, "200");
}

// A file that cannot serve is exit 2 naming the field, before anything is contacted.
TEST_F(WatchWeb, ABadWebConfigIsExit2NamingTheField) {
  struct Case {
    std::string yaml;
    std::string said;
  };
  std::string tls =
      fmt::format("tls_server_config:\n  cert_file: {}\n  key_file: {}\n", m_certs.server_cert(), m_certs.server_key());
  for (const auto& c : std::vector<Case>{
           {"tls_server_config:\n  key_file: k\n", "tls_server_config.cert_file: missing"},
           {fmt::format("tls_server_config:\n  cert_file: /nonexistent/server.pem\n  key_file: {}\n",
                        m_certs.server_key()),
            "cert_file /nonexistent/server.pem: no such file"},
           {fmt::format("tls_server_config:\n  cert_file: {}\n  key_file: /nonexistent/server.key\n",
                        m_certs.server_cert()),
            "key_file /nonexistent/server.key: no such file"},
           {tls + "  client_ca_file: /nonexistent/ca.pem\n  client_auth_type: RequireAndVerifyClientCert\n",
            "client_ca_file /nonexistent/ca.pem: no such file"},
           {fmt::format("tls_server_config:\n  cert_file: {}\n  key_file: {}\n", m_dir.path(), m_certs.server_key()),
            "cert_file " + m_dir.path() + ": is a directory, not a PEM file"},
           {tls + "  client_auth_type: RequireAndVerify\n", "tls_server_config.client_auth_type: 'RequireAndVerify'"},
           {tls + "  client_auth_type: RequireAndVerifyClientCert\n", "tls_server_config.client_ca_file: missing"},
           {tls + "  client_ca_file: " + m_certs.ca() + "\n", "tls_server_config.client_auth_type: client_ca_file"},
           {tls + "  min_version: TLS14\n", "tls_server_config.min_version: 'TLS14' is not a TLS version"},
           {tls + "  cipher_suites: [TLS_AES_128_GCM_SHA256]\n", "tls_server_config.cipher_suites: is not supported"},
           {fmt::format("tls_server_config:\n  cert_file: {}\n  key_file: {}\n", m_certs.server_cert(),
                        m_certs.client_key()),
            "is not the key of cert_file"},
           {"basic_auth_users:\n  prometheus: plaintext-password\n",
            "basic_auth_users.prometheus: is not a bcrypt hash"},
           {"basic_auth_user:\n  a: b\n", "basic_auth_user: unknown field"},
           {"http_server_config:\n  headers:\n    Server: x\n", "http_server_config.headers.Server: not a header"},
           {"tls_server_config: [\n", "not YAML"},
       }) {
    write_file(m_dir.file("bad.yml"), c.yaml);
    auto args = watch_args(m_cluster.bootstrap, m_cluster.topic, m_redis.uri(), m_port,
                           {"--web-config", m_dir.file("bad.yml")});
    args.erase(args.begin());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << c.yaml << result.err;
    EXPECT_NE(result.err.find("--web-config " + m_dir.file("bad.yml") + ":"), std::string::npos) << result.err;
    EXPECT_NE(result.err.find(c.said), std::string::npos) << c.yaml << "\n" << result.err;
    EXPECT_EQ(result.err.find("plaintext-password"), std::string::npos) << result.err;
  }
}
