#include "connectors/http/server.hpp"

#include "connectors/http/tls.hpp"
#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <crypt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/resource.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <set>

namespace dedupctl::connectors::http {

namespace {

// A connection's thread waits this long for each read (a request's bytes, a TLS handshake's) and
// write; a scraper sends its request at once.
constexpr int k_io_timeout_s = 2;
// Connections served at once, each on a thread of its own with a small stack; beyond them,
// connections wait, newest first.
constexpr std::size_t k_max_threads = 2048;
constexpr std::size_t k_thread_stack = 256 * 1024;
// How long a stopping server waits for its connections' threads.
constexpr auto k_stop_wait = std::chrono::seconds(1);
// A hash of bcrypt's usual cost, checked when a user is unknown, so that an unknown user takes as
// long as a wrong password (exporter-toolkit does the same).
constexpr const char* k_unknown_user_hash = "$2y$10$Miy9mClqouqONTh.6cjoYeWMsuK387TlI5TAYkr8IaDNiMsaX9Oe2";
constexpr std::size_t k_max_verified = 64;
constexpr int k_listen_queue = 4096; // capped by net.core.somaxconn

// A thread per connection up to k_max_threads; more wait, and a thread that finishes takes the
// newest waiting one (a flood of held connections cannot hold a fresh scrape behind it for more
// than one read timeout). Nothing here touches the TaskQueue object after shutdown(): httplib
// deletes it then; what threads use is shared.
class ConnectionThreads final : public httplib::TaskQueue {
public:
  explicit ConnectionThreads(std::shared_ptr<void> keep_alive)
      : m_pool(std::make_shared<Pool>()), m_keep_alive(std::move(keep_alive)) {}

  void enqueue(std::function<void()> job) override {
    std::unique_lock lock(m_pool->mutex);
    if (m_pool->running < k_max_threads && spawn(job)) {
      ++m_pool->running;
      return;
    }
    m_pool->waiting.push_back(std::move(job));
  }

  void shutdown() override {
    std::unique_lock lock(m_pool->mutex);
    m_pool->done.wait_for(lock, k_stop_wait, [&] { return m_pool->running == 0 && m_pool->waiting.empty(); });
  }

private:
  struct Pool {
    std::mutex mutex;
    std::condition_variable done;
    std::deque<std::function<void()>> waiting;
    std::size_t running = 0;
  };
  struct Start {
    std::shared_ptr<Pool> pool;
    std::shared_ptr<void> keep_alive;
    std::function<void()> job;
  };

  static void* run(void* arg) {
    std::unique_ptr<Start> start(static_cast<Start*>(arg));
    std::function<void()> job = std::move(start->job);
    for (;;) {
      try {
        job();
      } catch (...) {
        // A connection that failed is closed; the server goes on.
      }
      std::unique_lock lock(start->pool->mutex);
      if (start->pool->waiting.empty()) {
        --start->pool->running;
        start->pool->done.notify_all();
        return nullptr;
      }
      job = std::move(start->pool->waiting.back());
      start->pool->waiting.pop_back();
    }
  }

  // Under the pool's mutex. false when the system gives no more threads: the job waits.
  bool spawn(std::function<void()>& job) {
    auto* start = new Start{m_pool, m_keep_alive, std::move(job)};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, k_thread_stack);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, &ConnectionThreads::run, start);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      job = std::move(start->job);
      delete start;
      return false;
    }
    return true;
  }

  std::shared_ptr<Pool> m_pool;
  std::shared_ptr<void> m_keep_alive;
};

std::string sha256_hex(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) {
    hex += fmt::format("{:02x}", byte);
  }
  return hex;
}

// "Basic BASE64(user:password)" -> (user, password).
std::optional<std::pair<std::string, std::string>> basic_credentials(const std::string& header) {
  constexpr std::string_view scheme = "Basic ";
  if (header.size() <= scheme.size() || strncasecmp(header.c_str(), scheme.data(), scheme.size()) != 0 ||
      header.size() > 4096) {
    return std::nullopt;
  }
  std::string decoded;
  if (!core::base64_decode(std::string_view(header).substr(scheme.size()), core::Base64::Standard, decoded)) {
    return std::nullopt;
  }
  auto colon = decoded.find(':');
  if (colon == std::string::npos) {
    return std::nullopt;
  }
  return std::make_pair(decoded.substr(0, colon), decoded.substr(colon + 1));
}

// The open-file limit raised to its hard limit (as Go's runtime does): each held connection is a
// descriptor, and a server at the soft limit (often 1024) would leave a scraper in the listen queue.
void raise_open_file_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

// httplib listens with a queue of 5 connections and keeps its socket to itself: under a flood of
// connections the kernel then drops new ones (a scraper's too) until their SYN is sent again, a
// second or more later. listen() on a listening socket sets its queue anew; the socket is this
// process's listening one on `port`.
void deepen_listen_queue(std::uint16_t port) {
  for (int fd = 0; fd < 4096; ++fd) {
    int listening = 0;
    socklen_t size = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening) {
      continue;
    }
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      continue;
    }
    std::uint16_t bound = ntohs(address.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&address)->sin6_port
                                                              : reinterpret_cast<sockaddr_in*>(&address)->sin_port);
    if (bound == port) {
      ::listen(fd, k_listen_queue);
    }
  }
}

} // namespace

struct Server::State : std::enable_shared_from_this<Server::State> {
  Handler handler;
  std::map<std::string, std::string> users;
  std::unique_ptr<httplib::Server> http;
  std::atomic<std::int64_t> served{0};
  std::mutex verified_mutex;
  std::set<std::string> verified; // user NUL sha256(password) of logins bcrypt accepted

  bool authorized(const httplib::Request& request) {
    if (users.empty()) {
      return true;
    }
    auto credentials = basic_credentials(request.get_header_value("Authorization"));
    if (!credentials) {
      return false;
    }
    auto user = users.find(credentials->first);
    std::string remembered = credentials->first + '\0' + sha256_hex(credentials->second);
    if (user != users.end()) {
      std::lock_guard lock(verified_mutex);
      if (verified.count(remembered)) {
        return true;
      }
    }
    const std::string& hash = user != users.end() ? user->second : std::string(k_unknown_user_hash);
    auto data = std::make_unique<crypt_data>();
    const char* computed = crypt_r(credentials->second.c_str(), hash.c_str(), data.get());
    // crypt(3) reads the password up to its first NUL; bcrypt as exporter-toolkit runs it (Go's) reads
    // every byte, so a password with a NUL in it is never the one hashed.
    bool whole = credentials->second.find('\0') == std::string::npos;
    bool match = computed && std::strlen(computed) == hash.size() &&
                 CRYPTO_memcmp(computed, hash.data(), hash.size()) == 0 && user != users.end() && whole;
    if (match) {
      std::lock_guard lock(verified_mutex);
      if (verified.size() >= k_max_verified) {
        verified.clear();
      }
      verified.insert(remembered);
    }
    return match;
  }
};

namespace {

// --listen HOST:PORT: the host without brackets ("" for every address) and the port, checked.
struct ListenAddress {
  std::string host;
  int port = 0;
};

ListenAddress parse_listen(const std::string& listen) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    throw UsageError(fmt::format("--listen {}: give HOST:PORT (127.0.0.1:9464, :9464 for every address)", listen));
  }
  std::string host = listen.substr(0, colon);
  std::string port = listen.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  bool numeric_port = !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!numeric_port || std::stoi(port) > 65535) {
    throw UsageError(fmt::format("--listen {}: the port must be a number from 0 to 65535", listen));
  }
  if (!host.empty()) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      throw UsageError(
          fmt::format("--listen {}: {} is not an address of this host ({})", listen, host, ::gai_strerror(rc)));
    }
    ::freeaddrinfo(found);
  }
  return {host, std::stoi(port)};
}

// The server the web config asks for: TLS (tls_server_config), its users and its headers.
std::unique_ptr<httplib::Server> make_http(const WebConfig* web, std::map<std::string, std::string>& users) {
  std::unique_ptr<httplib::Server> http;
  if (web && web->tls) {
    TlsServerConfig tls = *web->tls;
    auto server =
        std::make_unique<httplib::SSLServer>([tls](SSL_CTX& ctx) { return configure_tls(&ctx, tls).empty(); });
    if (!server->is_valid()) {
      throw UsageError(fmt::format("--web-config {}: tls_server_config: {}", web->path, tls_setup_error(tls)));
    }
    http = std::move(server);
  } else {
    http = std::make_unique<httplib::Server>();
  }
  if (web) {
    users = web->basic_auth_users;
    httplib::Headers headers;
    for (const auto& [name, value] : web->headers) {
      headers.emplace(name, value);
    }
    http->set_default_headers(headers);
  }
  return http;
}

// Who may ask (basic auth before any route), GET and HEAD through the handler, every other method 405.
void add_routes(httplib::Server& http, Server::State* self) {
  http.set_pre_routing_handler([self](const httplib::Request& request, httplib::Response& response) {
    ++self->served;
    if (!self->authorized(request)) {
      response.status = 401;
      response.set_header("WWW-Authenticate", "Basic");
      response.set_content("Unauthorized\n", "text/plain; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  auto serve = [self](const httplib::Request& request, httplib::Response& response) {
    Response answer;
    try {
      answer = self->handler(request.path, request.get_header_value("Accept"));
    } catch (const std::exception&) {
      answer = {500, "text/plain; charset=utf-8", "internal error\n"};
    }
    response.status = answer.status;
    response.set_content(std::move(answer.body), answer.content_type.c_str());
  };
  auto refuse = [](const httplib::Request&, httplib::Response& response) {
    response.status = 405;
    response.set_header("Allow", "GET, HEAD");
    response.set_content("only GET and HEAD\n", "text/plain; charset=utf-8");
  };
  http.Get(".*", serve);
  http.Post(".*", refuse);
  http.Put(".*", refuse);
  http.Patch(".*", refuse);
  http.Delete(".*", refuse);
  http.Options(".*", refuse);
}

// The port bound: the one asked for, or any (0); every address is IPv6's and IPv4's, else IPv4's.
std::uint16_t bind_listen(httplib::Server& http, const ListenAddress& address, const std::string& listen) {
  auto bind = [&](const std::string& host) {
    errno = 0;
    if (address.port == 0) {
      int bound = http.bind_to_any_port(host);
      return bound > 0 ? bound : -1;
    }
    return http.bind_to_port(host, address.port) ? address.port : -1;
  };
  int bound = address.host.empty() ? bind("::") : bind(address.host);
  if (bound < 0 && address.host.empty()) {
    bound = bind("0.0.0.0");
  }
  if (bound < 0) {
    std::string why = errno ? std::strerror(errno) : "the address cannot be bound";
    throw UsageError(fmt::format("--listen {}: cannot listen there ({}); choose another address or port", listen, why));
  }
  return static_cast<std::uint16_t>(bound);
}

} // namespace

Server::Server(const std::string& listen, Handler handler, const WebConfig* web) : m_state(std::make_shared<State>()) {
  ListenAddress address = parse_listen(listen);
  State& state = *m_state;
  state.handler = std::move(handler);
  state.http = make_http(web, state.users);
  std::weak_ptr<State> weak = m_state;
  state.http->new_task_queue = [weak] { return new ConnectionThreads(weak.lock()); };
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, with which a second watch on the same
  // port would bind too and take half the scrapes.
  state.http->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  state.http->set_read_timeout(k_io_timeout_s, 0);
  state.http->set_write_timeout(k_io_timeout_s, 0);
  state.http->set_keep_alive_timeout(k_io_timeout_s);
  state.http->set_payload_max_length(8192);
  add_routes(*state.http, m_state.get());
  raise_open_file_limit();
  m_port = bind_listen(*state.http, address, listen);
  deepen_listen_queue(m_port);
  m_thread = std::thread([state = m_state] { state->http->listen_after_bind(); });
  // httplib's stop() does nothing until its loop runs, and its accept() would then wait for ever.
  for (int i = 0; i < 2000 && !state.http->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

Server::~Server() {
  m_state->http->stop();
  if (m_thread.joinable()) {
    m_thread.join();
  }
}

std::int64_t Server::served() const { return m_state->served.load(); }

} // namespace dedupctl::connectors::http
