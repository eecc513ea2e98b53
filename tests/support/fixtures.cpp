#include "tests/support/fixtures.hpp"

#include "core/util/encoding.hpp"

#include "tests/support/jwt.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <sstream>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace dedupctl::testing {

namespace fs = std::filesystem;

bool servers_required() {
  const char* ci = std::getenv("CI");
  const char* require = std::getenv("DEDUPCTL_REQUIRE_SERVERS");
  return (ci && std::string(ci) == "true") || (require && std::string(require) == "1");
}

TempDir::TempDir() {
  std::string pattern = (fs::temp_directory_path() / "dedupctl-test-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    throw std::runtime_error(fmt::format("mkdtemp: {}", std::strerror(errno)));
  }
  m_path = pattern;
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(m_path, ec);
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary);
  out << content;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<std::string> lines_of_file(const std::string& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) {
      lines.push_back(line);
    }
  }
  return lines;
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::string find_program(const std::string& name, const std::vector<std::string>& extra_dirs) {
  std::vector<std::string> dirs = extra_dirs;
  if (const char* path = std::getenv("PATH")) {
    std::stringstream in(path);
    std::string dir;
    while (std::getline(in, dir, ':')) {
      dirs.push_back(dir);
    }
  }
  dirs.insert(dirs.end(), {"/usr/sbin", "/usr/bin", "/sbin", "/bin"});
  for (const auto& dir : dirs) {
    std::string candidate = dir + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return {};
}

namespace {

[[noreturn]] void exec_child(const std::vector<std::string>& argv, const SpawnOptions& options) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The harness ignores SIGPIPE (a child that exits before reading its input); a child gets the
  // default a shell gives it, so that a test meets what a user's run meets.
  std::signal(SIGPIPE, SIG_DFL);
  for (const auto& [name, value] : options.env) {
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  if (options.gid) {
    ::setgroups(0, nullptr);
    if (::setgid(*options.gid) != 0) {
      _exit(126);
    }
  }
  if (options.uid && ::setuid(*options.uid) != 0) {
    _exit(126);
  }
  std::vector<char*> args;
  for (const auto& arg : argv) {
    args.push_back(const_cast<char*>(arg.c_str()));
  }
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "cannot run %s: %s\n", args[0], std::strerror(errno));
  _exit(127);
}

int decode_status(int status) {
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status);
  }
  if (WIFSIGNALED(status)) {
    return 128 + WTERMSIG(status);
  }
  return -1;
}

} // namespace

Process::Process(const std::vector<std::string>& argv, const SpawnOptions& options) {
  int in_pipe[2] = {-1, -1};
  int out_pipe[2] = {-1, -1};
  if (options.pipe_stdin && ::pipe2(in_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe");
  }
  if (options.pipe_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe");
  }
  m_pid = ::fork();
  if (m_pid < 0) {
    throw std::runtime_error("fork");
  }
  if (m_pid == 0) {
    if (options.pipe_stdin) {
      ::dup2(in_pipe[0], STDIN_FILENO);
    } else {
      int null = ::open("/dev/null", O_RDONLY);
      ::dup2(null, STDIN_FILENO);
    }
    if (options.pipe_stdout) {
      ::dup2(out_pipe[1], STDOUT_FILENO);
    } else if (options.silence) {
      int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, STDOUT_FILENO);
      ::dup2(null, STDERR_FILENO);
    }
    if (!options.stderr_file.empty()) {
      int err = ::open(options.stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(err, STDERR_FILENO);
    }
    if (!options.pipe_stdout && !options.stdout_file.empty()) {
      int out = ::open(options.stdout_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(out, STDOUT_FILENO);
    }
    exec_child(argv, options);
  }
  if (options.pipe_stdin) {
    ::close(in_pipe[0]);
    m_stdin = in_pipe[1];
  }
  if (options.pipe_stdout) {
    ::close(out_pipe[1]);
    m_stdout = out_pipe[0];
  }
}

Process::~Process() {
  if (running()) {
    ::kill(m_pid, SIGTERM);
    for (int i = 0; i < 50 && running(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (running()) {
      ::kill(m_pid, SIGKILL);
    }
    wait();
  }
  if (m_stdin >= 0) {
    ::close(m_stdin);
  }
  if (m_stdout >= 0) {
    ::close(m_stdout);
  }
}

std::optional<std::string> Process::read_line(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    auto newline = m_buffer.find('\n');
    if (newline != std::string::npos) {
      std::string line = m_buffer.substr(0, newline);
      m_buffer.erase(0, newline + 1);
      return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 || m_stdout < 0) {
      return std::nullopt;
    }
    pollfd pfd{m_stdout, POLLIN, 0};
    if (::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) {
      return std::nullopt;
    }
    char chunk[4096];
    ssize_t n = ::read(m_stdout, chunk, sizeof chunk);
    if (n <= 0) {
      return std::nullopt;
    }
    m_buffer.append(chunk, static_cast<std::size_t>(n));
  }
}

void Process::write_line(const std::string& line) {
  std::string data = line + "\n";
  if (::write(m_stdin, data.data(), data.size()) < 0) {
    throw std::runtime_error("write to child");
  }
}

void Process::signal(int signo) { ::kill(m_pid, signo); }

int Process::wait() {
  if (!m_status) {
    int status = 0;
    ::waitpid(m_pid, &status, 0);
    m_status = decode_status(status);
  }
  return *m_status;
}

bool Process::running() {
  if (m_status || m_pid <= 0) {
    return false;
  }
  int status = 0;
  pid_t done = ::waitpid(m_pid, &status, WNOHANG);
  if (done == m_pid) {
    m_status = decode_status(status);
    return false;
  }
  return true;
}

namespace {

// Keeps one report-v1 document in $DEDUPCTL_REPORT_DUMP_DIR (set by ctest for the cli tiers), where
// the cli-report-schema test validates every one against docs/report-v1.schema.json. Text that is
// not one whole JSON document (another format, a report cut by a test on purpose) is not kept: the
// test that asked for it checks it.
void keep_report(const std::string& text) {
  static const char* dir = std::getenv("DEDUPCTL_REPORT_DUMP_DIR");
  if (!dir || !*dir || text.find("\"dedupctl.report/v1\"") == std::string::npos) {
    return;
  }
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || doc.value("schema", "") != "dedupctl.report/v1") {
    return;
  }
  static std::atomic<unsigned> kept{0};
  auto name = fmt::format("{}-{}-{}.json", doc.value("command", "unknown"), ::getpid(), kept++);
  std::ofstream(fs::path(dir) / name, std::ios::binary) << text;
}

// The reports a run of the binary wrote: its stdout, and the file of --output FILE (or --output=FILE).
void keep_reports(const std::vector<std::string>& argv, const CommandResult& result) {
  keep_report(result.out);
  for (std::size_t i = 1; i < argv.size(); ++i) {
    std::string path;
    if (argv[i] == "--output" && i + 1 < argv.size()) {
      path = argv[i + 1];
    } else if (argv[i].starts_with("--output=")) {
      path = argv[i].substr(9);
    }
    std::error_code error;
    if (!path.empty() && path != "-" && fs::is_regular_file(path, error) && fs::file_size(path, error) < (64u << 20)) {
      std::ifstream in(path, std::ios::binary);
      keep_report(std::string(std::istreambuf_iterator<char>(in), {}));
    }
  }
}

} // namespace

CommandResult run_command(const std::vector<std::string>& argv, const std::string& input,
                          std::chrono::milliseconds timeout, const std::map<std::string, std::string>& env) {
  int in_pipe[2];
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw std::runtime_error("pipe");
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    ::dup2(err_pipe[1], STDERR_FILENO);
    SpawnOptions options;
    options.env = env;
    exec_child(argv, options);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  std::signal(SIGPIPE, SIG_IGN);
  std::size_t written = 0;
  if (input.empty()) {
    ::close(in_pipe[1]);
    in_pipe[1] = -1;
  }
  CommandResult result;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  bool out_open = true;
  bool err_open = true;
  while (out_open || err_open) {
    std::vector<pollfd> fds;
    if (out_open) {
      fds.push_back({out_pipe[0], POLLIN, 0});
    }
    if (err_open) {
      fds.push_back({err_pipe[0], POLLIN, 0});
    }
    if (in_pipe[1] >= 0) {
      fds.push_back({in_pipe[1], POLLOUT, 0});
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      result.err += "\n[test harness: killed after timeout]";
      break;
    }
    ::poll(fds.data(), fds.size(), static_cast<int>(std::min<long long>(left.count(), 1000)));
    for (const auto& pfd : fds) {
      if (pfd.revents == 0) {
        continue;
      }
      if (pfd.fd == in_pipe[1]) {
        ssize_t n = ::write(in_pipe[1], input.data() + written, std::min<std::size_t>(65536, input.size() - written));
        written += n > 0 ? static_cast<std::size_t>(n) : 0;
        if (n < 0 || written == input.size()) {
          ::close(in_pipe[1]);
          in_pipe[1] = -1;
        }
        continue;
      }
      char chunk[65536];
      ssize_t n = ::read(pfd.fd, chunk, sizeof chunk);
      bool is_out = pfd.fd == out_pipe[0];
      if (n <= 0) {
        (is_out ? out_open : err_open) = false;
      } else {
        (is_out ? result.out : result.err).append(chunk, static_cast<std::size_t>(n));
      }
    }
  }
  if (in_pipe[1] >= 0) {
    ::close(in_pipe[1]);
  }
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  result.exit_code = decode_status(status);
  if (!argv.empty() && argv.front() == DEDUPCTL_BINARY) {
    keep_reports(argv, result);
  }
  return result;
}

namespace {

// DEDUPCTL_TEST_REPORTS=DIR: every run's exit code and standard output are appended to
// DIR/Suite.Case.txt, so that the documents two trees write can be compared (a refactoring is to
// leave them byte-identical). DEDUPCTL_TEST_BINARY runs another build's dedupctl.
void record_run(const std::vector<std::string>& args, const CommandResult& result) {
  const char* dir = std::getenv("DEDUPCTL_TEST_REPORTS");
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  if (!dir || !*dir || !test) {
    return;
  }
  std::ofstream out(fmt::format("{}/{}.{}.txt", dir, test->test_suite_name(), test->name()), std::ios::app);
  out << "== dedupctl " << (args.empty() ? std::string() : args.front()) << " exit " << result.exit_code << "\n"
      << result.out << "\n";
}

} // namespace

CommandResult run_dedupctl(const std::vector<std::string>& args, const std::string& input,
                           const std::map<std::string, std::string>& env) {
  const char* binary = std::getenv("DEDUPCTL_TEST_BINARY");
  std::vector<std::string> argv{binary && *binary ? binary : DEDUPCTL_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  auto result = run_command(argv, input, std::chrono::seconds(120), env);
  record_run(args, result);
  return result;
}

MockBroker::MockBroker(const std::vector<std::string>& topics, int brokers) {
  std::vector<std::string> argv{DEDUPCTL_MOCKBROKER, "--brokers", std::to_string(brokers)};
  for (const auto& topic : topics) {
    argv.push_back("--topic");
    argv.push_back(topic);
  }
  SpawnOptions options;
  options.pipe_stdin = true;
  options.pipe_stdout = true;
  m_process = std::make_unique<Process>(argv, options);
  auto line = m_process->read_line(std::chrono::seconds(20));
  if (!line || line->empty()) {
    throw std::runtime_error("mockbroker did not print its bootstrap list");
  }
  m_bootstrap = *line;
}

std::string MockBroker::command(const std::string& line) {
  m_process->write_line(line);
  return m_process->read_line().value_or("error: no answer");
}

void MockBroker::seed(const std::string& topic, const std::string& ndjson) {
  auto result = run_command(
      {DEDUPCTL_SEEDER, "-b", m_bootstrap, "--topic", topic, "--input", "-", "--expect-log-start", "0"}, ndjson);
  if (result.exit_code != 0) {
    throw std::runtime_error("seeder failed: " + result.err);
  }
}

void MockBroker::commit(const std::string& group, const std::string& topic, const std::string& offsets) {
  auto result =
      run_command({DEDUPCTL_SEEDER, "-b", m_bootstrap, "--topic", topic, "--commit-group", group, "--commit", offsets});
  if (result.exit_code != 0) {
    throw std::runtime_error("commit failed: " + result.err);
  }
}

// Starts a redis-server (or sentinel) on a free port, trying up to five ports, and waits until it
// answers PING; `argv_for(port)` gives its command line. nullptr when it never answered.
static std::unique_ptr<Process> start_redis_server(const std::function<std::vector<std::string>(int)>& argv_for,
                                                   int& port) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    port = free_port();
    auto process = std::make_unique<Process>(argv_for(port));
    for (int i = 0; i < 100; ++i) {
      if (redis_command(port, "PING").starts_with("+PONG")) {
        return process;
      }
      if (!process->running()) {
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return nullptr;
}

RedisServer::RedisServer(const std::vector<std::string>& extra)
    : RedisServer(std::function<std::vector<std::string>()>([extra] { return extra; })) {}

RedisServer::RedisServer(const std::function<std::vector<std::string>()>& extra_per_attempt) {
  std::string program = find_program("redis-server");
  if (program.empty()) {
    m_why = "redis-server is not installed (apt-get install redis-server)";
    return;
  }
  m_process = start_redis_server(
      [&](int port) {
        std::vector<std::string> argv{program,      "--port",    std::to_string(port),    "--bind",      "127.0.0.1",
                                      "--save",     "",          "--appendonly",          "no",          "--dir",
                                      m_dir.path(), "--logfile", m_dir.file("redis.log"), "--daemonize", "no"};
        auto extra = extra_per_attempt();
        argv.insert(argv.end(), extra.begin(), extra.end());
        m_argv = argv;
        return argv;
      },
      m_port);
  if (!m_process) {
    m_why = "redis-server did not start: " + read_file(m_dir.file("redis.log"));
  }
}

bool RedisServer::restart() {
  kill();
  m_process = std::make_unique<Process>(m_argv);
  for (int i = 0; i < 100; ++i) {
    if (redis_command(m_port, "PING").starts_with("+PONG")) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string RedisServer::command(const std::string& line) const { return redis_command(m_port, line); }

void RedisServer::kill() {
  if (m_process) {
    m_process->signal(SIGKILL);
    m_process->wait();
  }
}

TestCertificates::TestCertificates() {
  std::string openssl = find_program("openssl");
  if (openssl.empty()) {
    m_why = "openssl is not installed (apt-get install openssl)";
    return;
  }
  auto run = [&](std::vector<std::string> args) {
    if (!m_why.empty()) {
      return;
    }
    args.insert(args.begin(), openssl);
    auto result = run_command(args);
    if (result.exit_code != 0) {
      m_why = "openssl " + args[1] + " failed: " + result.err;
    }
  };
  auto key = [&](const std::string& name) {
    run({"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", m_dir.file(name + ".key")});
    ::chmod(m_dir.file(name + ".key").c_str(), 0600); // libpq refuses a client key others can read
  };
  auto self_signed = [&](const std::string& name, const std::string& cn) {
    key(name);
    run({"req", "-x509", "-new", "-key", m_dir.file(name + ".key"), "-out", m_dir.file(name + ".pem"), "-days", "2",
         "-subj", "/CN=" + cn, "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
         "keyUsage=critical,keyCertSign,cRLSign"});
  };
  auto signed_by_ca = [&](const std::string& name, const std::string& cn, const std::string& extensions) {
    key(name);
    run({"req", "-new", "-key", m_dir.file(name + ".key"), "-out", m_dir.file(name + ".csr"), "-subj", "/CN=" + cn});
    write_file(m_dir.file(name + ".ext"), extensions + "\n");
    run({"x509", "-req", "-in", m_dir.file(name + ".csr"), "-CA", m_dir.file("ca.pem"), "-CAkey", m_dir.file("ca.key"),
         "-CAcreateserial", "-out", m_dir.file(name + ".pem"), "-days", "2", "-extfile", m_dir.file(name + ".ext")});
  };
  self_signed("ca", "dedupctl test CA");
  self_signed("other-ca", "a CA nobody trusts");
  signed_by_ca("server", "localhost",
               "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth");
  signed_by_ca("elsewhere", "elsewhere.example",
               "subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth,clientAuth");
  signed_by_ca("client", "app", "extendedKeyUsage=clientAuth");
}

std::string unsigned_jwt(const std::string& sub, long long exp_s) {
  long long now_s =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return unsigned_jwt(fmt::format(R"({{"sub":"{}","iat":{},"exp":{}}})", sub, now_s, exp_s));
}

HttpResponder::HttpResponder(std::function<std::string(const std::string& request)> respond)
    : m_respond(std::move(respond)) {
  m_listen = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(m_listen, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(m_listen, 8) != 0 ||
      ::getsockname(m_listen, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw std::runtime_error("HttpResponder: cannot listen on loopback");
  }
  m_port = ntohs(addr.sin_port);
  m_thread = std::thread([this] {
    while (!m_stop) {
      pollfd pfd{m_listen, POLLIN, 0};
      if (::poll(&pfd, 1, 100) <= 0) {
        continue;
      }
      int fd = ::accept4(m_listen, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        continue;
      }
      // The head, then as much body as Content-Length says.
      std::string request;
      char chunk[4096];
      std::size_t need = std::string::npos;
      while (need == std::string::npos || request.size() < need) {
        pollfd in{fd, POLLIN, 0};
        if (::poll(&in, 1, 2000) <= 0) {
          break;
        }
        ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n <= 0) {
          break;
        }
        request.append(chunk, static_cast<std::size_t>(n));
        auto head_end = request.find("\r\n\r\n");
        if (need == std::string::npos && head_end != std::string::npos) {
          std::size_t body = 0;
          std::string lower = request.substr(0, head_end);
          std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
          if (auto at = lower.find("content-length:"); at != std::string::npos) {
            body = std::stoul(lower.substr(at + 15));
          }
          need = head_end + 4 + body;
        }
      }
      std::string body = m_respond(request);
      std::string response = fmt::format("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                         "{}\r\nConnection: close\r\n\r\n{}",
                                         body.size(), body);
      [[maybe_unused]] ssize_t written = ::write(fd, response.data(), response.size());
      ::close(fd);
      ++m_requests;
    }
  });
}

HttpResponder::~HttpResponder() {
  m_stop = true;
  if (m_thread.joinable()) {
    m_thread.join();
  }
  ::close(m_listen);
}

TlsRedisServer::TlsRedisServer(const TestCertificates& certs, bool require_client_cert, bool wrong_name) {
  if (!certs.available()) {
    return;
  }
  m_server = std::make_unique<RedisServer>(std::function<std::vector<std::string>()>([&] {
    m_tls_port = free_port();
    return std::vector<std::string>{"--tls-port",         std::to_string(m_tls_port),
                                    "--tls-cert-file",    wrong_name ? certs.wrong_name_cert() : certs.server_cert(),
                                    "--tls-key-file",     wrong_name ? certs.wrong_name_key() : certs.server_key(),
                                    "--tls-ca-cert-file", certs.ca(),
                                    "--tls-auth-clients", require_client_cert ? "yes" : "no"};
  }));
}

std::string TlsRedisServer::tls_uri(const std::string& query) const {
  return "rediss://127.0.0.1:" + std::to_string(m_tls_port) + (query.empty() ? "" : "?" + query);
}

std::string redis_command(int port, const std::string& line) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    std::string data = line + "\r\n";
    if (::write(fd, data.data(), data.size()) > 0) {
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, 2000) > 0) {
        char chunk[4096];
        ssize_t n = ::read(fd, chunk, sizeof chunk);
        if (n > 0) {
          reply.assign(chunk, static_cast<std::size_t>(n));
        }
      }
    }
  }
  ::close(fd);
  return reply;
}

PostgresServer::PostgresServer(const TestCertificates* tls) {
  if (tls && !tls->available()) {
    m_why = tls->why_unavailable();
    return;
  }
  std::vector<std::string> candidates;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib/postgresql", ec)) {
    candidates.push_back(entry.path().string() + "/bin");
  }
  std::sort(candidates.rbegin(), candidates.rend());
  for (const auto& dir : candidates) {
    if (::access((dir + "/initdb").c_str(), X_OK) == 0) {
      m_bin = dir;
      break;
    }
  }
  if (m_bin.empty()) {
    m_why = "PostgreSQL is not installed (apt-get install postgresql)";
    return;
  }
  if (::geteuid() == 0) {
    const char* name = std::getenv("DEDUPCTL_PG_USER");
    m_user = name ? name : "dedupctl";
    passwd* pw = ::getpwnam(m_user.c_str());
    if (!pw) {
      m_why = fmt::format("PostgreSQL refuses to run as root and user '{}' does not exist "
                          "(useradd --system {} , or set DEDUPCTL_PG_USER)",
                          m_user, m_user);
      return;
    }
    m_uid = pw->pw_uid;
    m_gid = pw->pw_gid;
  } else {
    passwd* pw = ::getpwuid(::geteuid());
    m_user = pw ? pw->pw_name : "postgres";
  }
  std::string pattern = (fs::temp_directory_path() / "dedupctl-pg-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) {
    m_why = "mkdtemp failed";
    return;
  }
  m_dir = pattern;
  if (m_uid && ::chown(m_dir.c_str(), *m_uid, *m_gid) != 0) {
    m_why = "cannot chown the PostgreSQL directory";
    return;
  }
  SpawnOptions as_user;
  as_user.uid = m_uid;
  as_user.gid = m_gid;
  as_user.silence = true;
  auto run_as_user = [&](const std::vector<std::string>& argv) {
    Process process(argv, as_user);
    return process.wait();
  };
  if (run_as_user({m_bin + "/initdb", "-D", m_dir + "/data", "-U", m_user, "--auth-local=trust",
                   "--auth-host=scram-sha-256", "-E", "UTF8", "--no-sync", "--locale=C"}) != 0) {
    m_why = "initdb failed";
    return;
  }
  if (tls) {
    // The server's files in its data directory, its user's, the key 0600 as PostgreSQL demands.
    std::string data = m_dir + "/data";
    for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
             {tls->server_cert(), "server.pem"}, {tls->server_key(), "server.key"}, {tls->ca(), "ca.pem"}}) {
      write_file(data + "/" + to, read_file(from));
      if ((m_uid && ::chown((data + "/" + to).c_str(), *m_uid, *m_gid) != 0) ||
          ::chmod((data + "/" + to).c_str(), 0600) != 0) {
        m_why = "cannot hand the certificates to PostgreSQL's user";
        return;
      }
    }
    std::ofstream(data + "/postgresql.conf", std::ios::app)
        << "ssl = on\nssl_cert_file = 'server.pem'\nssl_key_file = 'server.key'\nssl_ca_file = 'ca.pem'\n";
    std::istringstream hba(read_file(data + "/pg_hba.conf"));
    std::string rewritten;
    for (std::string line; std::getline(hba, line);) {
      if (line.starts_with("host ")) {
        line = "hostssl" + line.substr(4) + " clientcert=verify-ca";
      }
      rewritten += line + "\n";
    }
    write_file(data + "/pg_hba.conf", rewritten);
  }
  for (int attempt = 0; attempt < 3 && !m_running; ++attempt) {
    m_port = free_port();
    start();
  }
  if (!m_running) {
    m_why = "pg_ctl start failed: " + read_file(m_dir + "/server.log");
  }
}

bool PostgresServer::start() {
  if (m_running) {
    return true;
  }
  SpawnOptions as_user;
  as_user.uid = m_uid;
  as_user.gid = m_gid;
  as_user.silence = true;
  std::string options = fmt::format("-k {} -p {} -c listen_addresses=127.0.0.1 -c fsync=off "
                                    "-c synchronous_commit=off -c full_page_writes=off",
                                    m_dir, m_port);
  Process process(
      {m_bin + "/pg_ctl", "-D", m_dir + "/data", "-l", m_dir + "/server.log", "-o", options, "-w", "-t", "60", "start"},
      as_user);
  m_running = process.wait() == 0;
  return m_running;
}

PostgresServer::~PostgresServer() {
  stop();
  if (!m_dir.empty()) {
    std::error_code ec;
    fs::remove_all(m_dir, ec);
  }
}

void PostgresServer::stop() {
  if (!m_running) {
    return;
  }
  SpawnOptions as_user;
  as_user.uid = m_uid;
  as_user.gid = m_gid;
  as_user.silence = true;
  Process process({m_bin + "/pg_ctl", "-D", m_dir + "/data", "-m", "immediate", "-w", "stop"}, as_user);
  process.wait();
  m_running = false;
}

std::string PostgresServer::conninfo() const {
  return fmt::format("host={} port={} user={} dbname=postgres", m_dir, m_port, m_user);
}

CommandResult PostgresServer::psql(const std::string& sql) const {
  return run_command({m_bin + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", conninfo(), "-c", sql});
}

} // namespace dedupctl::testing

namespace dedupctl::testing {

RedisCluster::RedisCluster(int masters, int replicas, const TestCertificates* tls) {
  m_cli = find_program("redis-cli");
  if (m_cli.empty()) {
    m_why = "redis-cli is not installed (apt-get install redis-tools)";
    return;
  }
  if (tls && !tls->available()) {
    m_why = tls->why_unavailable();
    return;
  }
  if (tls) {
    m_ca = tls->ca();
    m_tls_cli_args = {"--tls", "--cacert", tls->ca()};
  }
  std::vector<std::string> create{m_cli, "--cluster", "create"};
  for (int i = 0; i < masters * (1 + replicas); ++i) {
    int tls_port = 0;
    auto node = std::make_unique<RedisServer>(std::function<std::vector<std::string>()>([&] {
      std::vector<std::string> args{
          "--cluster-enabled", "yes", "--cluster-node-timeout", "1000", "--cluster-port", std::to_string(free_port())};
      if (tls) {
        tls_port = free_port();
        args.insert(args.end(), {"--tls-port", std::to_string(tls_port), "--tls-cert-file", tls->server_cert(),
                                 "--tls-key-file", tls->server_key(), "--tls-ca-cert-file", tls->ca(),
                                 "--tls-auth-clients", "no", "--tls-cluster", "yes", "--tls-replication", "yes"});
      }
      return args;
    }));
    if (!node->available()) {
      m_why = node->why_unavailable();
      return;
    }
    if (tls) {
      m_tls_ports.push_back(tls_port);
    }
    create.push_back("127.0.0.1:" + std::to_string(tls ? tls_port : node->port()));
    m_nodes.push_back(std::move(node));
  }
  create.insert(create.end(), {"--cluster-replicas", std::to_string(replicas), "--cluster-yes"});
  create.insert(create.end(), m_tls_cli_args.begin(), m_tls_cli_args.end());
  auto created = run_command(create);
  if (created.exit_code != 0) {
    m_why = "redis-cli --cluster create failed: " + created.out + created.err;
    return;
  }
  if (!wait_ok()) {
    m_why = "the cluster did not reach cluster_state:ok";
  }
}

int RedisCluster::announced_port(std::size_t i) const {
  return m_tls_ports.empty() ? m_nodes[i]->port() : m_tls_ports[i];
}

int RedisCluster::announced_port(const RedisServer* node) const {
  for (std::size_t i = 0; i < m_nodes.size(); ++i) {
    if (m_nodes[i].get() == node) {
      return announced_port(i);
    }
  }
  return 0;
}

std::vector<RedisServer*> RedisCluster::nodes() {
  std::vector<RedisServer*> out;
  for (auto& node : m_nodes) {
    out.push_back(node.get());
  }
  return out;
}

std::string RedisCluster::seed_uri(std::size_t seeds) const {
  std::string uri = m_ca.empty() ? "redis+cluster://" : "rediss+cluster://";
  for (std::size_t i = 0; i < m_nodes.size() && (seeds == 0 || i < seeds); ++i) {
    uri += (i ? "," : "") + fmt::format("127.0.0.1:{}", announced_port(i));
  }
  return m_ca.empty() ? uri : uri + "?sslrootcert=" + m_ca;
}

CommandResult RedisCluster::cli(const std::vector<std::string>& args) const {
  for (std::size_t i = 0; i < m_nodes.size(); ++i) {
    if (m_nodes[i]->command("PING").starts_with("+PONG")) {
      std::vector<std::string> argv{m_cli, "-c", "-p", std::to_string(announced_port(i))};
      argv.insert(argv.end(), m_tls_cli_args.begin(), m_tls_cli_args.end());
      argv.insert(argv.end(), args.begin(), args.end());
      return run_command(argv);
    }
  }
  return CommandResult{};
}

std::vector<RedisServer*> RedisCluster::slot_owners() {
  std::vector<RedisServer*> owners(16384, nullptr);
  // CLUSTER NODES: "<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot>…"
  std::istringstream lines(cli({"CLUSTER", "NODES"}).out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    for (std::string field; fields >> field;) {
      f.push_back(field);
    }
    if (f.size() < 9 || f[2].find("master") == std::string::npos || f[2].find("fail") != std::string::npos) {
      continue;
    }
    int port = std::stoi(f[1].substr(f[1].find(':') + 1));
    for (std::size_t i = 8; i < f.size(); ++i) {
      if (f[i].starts_with("[")) {
        continue; // a slot being migrated or imported
      }
      auto dash = f[i].find('-');
      int first = std::stoi(f[i].substr(0, dash));
      int last = dash == std::string::npos ? first : std::stoi(f[i].substr(dash + 1));
      for (std::size_t n = 0; n < m_nodes.size(); ++n) {
        if (announced_port(n) == port) {
          for (int slot = first; slot <= last && slot < 16384; ++slot) {
            owners[static_cast<std::size_t>(slot)] = m_nodes[n].get();
          }
        }
      }
    }
  }
  return owners;
}

bool RedisCluster::wait_ok(std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    bool ok = true;
    for (auto& node : m_nodes) {
      if (!node->command("PING").starts_with("+PONG")) {
        continue; // killed
      }
      std::string info = node->command("CLUSTER INFO");
      ok = ok && info.find("cluster_state:ok") != std::string::npos &&
           info.find("cluster_slots_ok:16384") != std::string::npos;
    }
    if (ok) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

} // namespace dedupctl::testing

namespace dedupctl::testing {

RedisSentinel::RedisSentinel(int master_port, const std::string& name, const TestCertificates* tls) : m_name(name) {
  std::string program = find_program("redis-server");
  if (program.empty()) {
    m_why = "redis-server is not installed (apt-get install redis-server)";
    return;
  }
  m_process = start_redis_server(
      [&](int port) {
        // A sentinel rewrites its configuration file: it gets one of its own. Its TLS port is
        // picked again with each port tried, as the plain one is.
        std::string tls_lines;
        if (tls) {
          m_tls_port = free_port();
          tls_lines = fmt::format("tls-port {}\ntls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\n"
                                  "tls-auth-clients no\ntls-replication yes\n",
                                  m_tls_port, tls->server_cert(), tls->server_key(), tls->ca());
        }
        write_file(m_dir.file("sentinel.conf"),
                   fmt::format("port {}\nbind 127.0.0.1\ndir {}\nlogfile {}\n{}"
                               "sentinel monitor {} 127.0.0.1 {} 1\n"
                               "sentinel down-after-milliseconds {} 1000\nsentinel failover-timeout {} 5000\n",
                               port, m_dir.path(), m_dir.file("sentinel.log"), tls_lines, name, master_port, name,
                               name));
        return std::vector<std::string>{program, m_dir.file("sentinel.conf"), "--sentinel"};
      },
      m_port);
  if (!m_process) {
    m_why = "redis-server --sentinel did not start: " + read_file(m_dir.file("sentinel.log"));
  }
}

std::string RedisSentinel::command(const std::string& line) const { return redis_command(m_port, line); }

int RedisSentinel::master_port() const {
  // *2\r\n$9\r\n127.0.0.1\r\n$4\r\n6379\r\n
  std::string reply = command("SENTINEL get-master-addr-by-name " + m_name);
  auto last = reply.rfind("\r\n", reply.size() - 3);
  if (!reply.starts_with("*2") || last == std::string::npos) {
    return 0;
  }
  return std::stoi(reply.substr(last + 2));
}

int connect_loopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::optional<HttpAnswer> http_get(int port, const std::string& target, const std::string& accept,
                                   std::chrono::milliseconds timeout) {
  int fd = connect_loopback(port);
  if (fd < 0) {
    return std::nullopt;
  }
  std::string request = "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
  if (!accept.empty()) {
    request += "Accept: " + accept + "\r\n";
  }
  request += "\r\n";
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    ::close(fd);
    return std::nullopt;
  }
  std::string raw;
  char chunk[8192];
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    pollfd in{fd, POLLIN, 0};
    if (left <= 0 || ::poll(&in, 1, static_cast<int>(left)) <= 0) {
      ::close(fd);
      return std::nullopt;
    }
    ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
    if (n <= 0) {
      break;
    }
    raw.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  auto end = raw.find("\r\n\r\n");
  if (end == std::string::npos || raw.size() < 12) {
    return std::nullopt;
  }
  HttpAnswer answer;
  answer.status = std::atoi(raw.c_str() + 9);
  answer.headers = raw.substr(0, end);
  answer.body = raw.substr(end + 4);
  // Prometheus answers its API chunked: put the chunks together.
  if (answer.headers.find("Transfer-Encoding: chunked") != std::string::npos) {
    std::string body;
    std::size_t at = 0;
    while (at < answer.body.size()) {
      std::size_t line = answer.body.find("\r\n", at);
      if (line == std::string::npos) {
        break;
      }
      std::size_t size = std::stoul(answer.body.substr(at, line - at), nullptr, 16);
      if (size == 0) {
        break;
      }
      body += answer.body.substr(line + 2, size);
      at = line + 2 + size + 2;
    }
    answer.body = body;
  }
  return answer;
}

std::optional<HttpAnswer> poll_http(int port, const std::string& target,
                                    const std::function<bool(const HttpAnswer&)>& done,
                                    std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::optional<HttpAnswer> last;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto answer = http_get(port, target)) {
      last = std::move(answer);
      if (done(*last)) {
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return last;
}

std::string url_encode(std::string_view text) { return core::percent_encode(text); }

PrometheusServer::PrometheusServer(const std::vector<int>& target_ports, const std::string& job) {
  std::string program = find_program("prometheus");
  if (program.empty()) {
    m_why = "prometheus is not installed (apt-get install prometheus)";
    return;
  }
  std::string targets;
  for (int port : target_ports) {
    targets += fmt::format("{}'127.0.0.1:{}'", targets.empty() ? "" : ", ", port);
  }
  write_file(m_dir.file("prometheus.yml"), fmt::format("global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n"
                                                       "  evaluation_interval: 1s\n"
                                                       "scrape_configs:\n  - job_name: dedupctl\n{}"
                                                       "    static_configs:\n      - targets: [{}]\n",
                                                       job, targets));
  if (std::string promtool = find_program("promtool"); !promtool.empty()) {
    auto checked = run_command({promtool, "check", "config", m_dir.file("prometheus.yml")});
    if (checked.exit_code != 0) {
      m_why = "promtool check config refused the scrape config: " + checked.out + checked.err;
      return;
    }
  }
  m_port = free_port();
  SpawnOptions options;
  options.stderr_file = m_dir.file("prometheus.log");
  options.silence = true;
  m_process =
      std::make_unique<Process>(std::vector<std::string>{program, "--config.file=" + m_dir.file("prometheus.yml"),
                                                         "--storage.tsdb.path=" + m_dir.file("data"),
                                                         fmt::format("--web.listen-address=127.0.0.1:{}", m_port)},
                                options);
  for (int i = 0; i < 200; ++i) {
    if (auto ready = http_get(m_port, "/-/ready"); ready && ready->status == 200) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  m_why = "prometheus did not become ready: " + log();
  m_process.reset();
}

std::map<std::string, double> PrometheusServer::query(const std::string& promql, const std::string& by) const {
  auto answer = http_get(m_port, "/api/v1/query?query=" + url_encode(promql));
  if (!answer || answer->status != 200) {
    throw std::runtime_error("prometheus refused " + promql + ": " + (answer ? answer->body : "no answer"));
  }
  auto doc = nlohmann::json::parse(answer->body);
  std::map<std::string, double> out;
  for (const auto& sample : doc.at("data").at("result")) {
    std::string key = by.empty() ? "" : sample.at("metric").value(by, "");
    std::string value = sample.at("value").at(1);
    out[key] = value == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(value);
  }
  return out;
}

std::map<std::string, double>
PrometheusServer::wait_for(const std::string& promql,
                           const std::function<bool(const std::map<std::string, double>&)>& done,
                           std::chrono::milliseconds timeout, const std::string& by) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::map<std::string, double> last;
  while (std::chrono::steady_clock::now() < deadline) {
    last = query(promql, by);
    if (done(last)) {
      return last;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return last;
}

} // namespace dedupctl::testing
