#include "connectors/http/server.hpp"

#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <arpa/inet.h>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace dedupctl::connectors::http {

namespace {

constexpr std::size_t k_max_request = 8192;
constexpr int k_io_timeout_ms = 5000;
constexpr int k_accept_poll_ms = 100; // how soon the thread sees it must stop

std::string_view reason(int status) {
  switch (status) {
  case 200:
    return "OK";
  case 400:
    return "Bad Request";
  case 404:
    return "Not Found";
  case 405:
    return "Method Not Allowed";
  case 503:
    return "Service Unavailable";
  default:
    return "Error";
  }
}

// Waits until `fd` is ready for `events` or the deadline passed.
bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      return false;
    }
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n > 0) {
      return true;
    }
    if (n < 0 && errno != EINTR) {
      return false;
    }
  }
}

void send_all(int fd, std::string_view data) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(k_io_timeout_ms);
  while (!data.empty()) {
    if (!wait_for(fd, POLLOUT, deadline)) {
      return;
    }
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    data.remove_prefix(static_cast<std::size_t>(n));
  }
}

} // namespace

Server::Server(const std::string& listen, Handler handler) : m_handler(std::move(handler)) {
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
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    throw UsageError(
        fmt::format("--listen {}: {} is not an address of this host ({})", listen, host, ::gai_strerror(rc)));
  }
  std::string failure;
  for (addrinfo* a = found; a && m_fd < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      failure = std::strerror(errno);
      continue;
    }
    int on = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
      failure = std::strerror(errno);
      ::close(fd);
      continue;
    }
    m_fd = fd;
  }
  ::freeaddrinfo(found);
  if (m_fd < 0) {
    throw UsageError(
        fmt::format("--listen {}: cannot listen there ({}); choose another address or port", listen, failure));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(m_fd, reinterpret_cast<sockaddr*>(&bound), &length);
  m_port = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                             : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  m_thread = std::thread([this] { run(); });
}

Server::~Server() {
  m_stop = true;
  if (m_thread.joinable()) {
    m_thread.join();
  }
  if (m_fd >= 0) {
    ::close(m_fd);
  }
}

void Server::run() {
  while (!m_stop.load()) {
    pollfd p{m_fd, POLLIN, 0};
    if (::poll(&p, 1, k_accept_poll_ms) <= 0) {
      continue;
    }
    int fd = ::accept4(m_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      continue;
    }
    try {
      serve(fd);
    } catch (const std::exception&) {
      // A handler that failed answers nothing; the scraper sees the connection close.
    }
    ::close(fd);
  }
}

void Server::serve(int fd) {
  std::string request;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(k_io_timeout_ms);
  char buffer[2048];
  while (request.find("\r\n\r\n") == std::string::npos) {
    if (request.size() > k_max_request || !wait_for(fd, POLLIN, deadline)) {
      return;
    }
    ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
      continue;
    }
    if (n <= 0) {
      return;
    }
    request.append(buffer, static_cast<std::size_t>(n));
  }
  std::string_view head(request);
  std::string_view line = head.substr(0, head.find("\r\n"));
  auto sp1 = line.find(' ');
  auto sp2 = line.find(' ', sp1 == std::string_view::npos ? sp1 : sp1 + 1);
  Response response;
  bool head_only = false;
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos) {
    response = {400, "text/plain; charset=utf-8", "bad request\n"};
  } else {
    std::string_view method = line.substr(0, sp1);
    std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    target = target.substr(0, target.find('?'));
    head_only = method == "HEAD";
    if (method != "GET" && method != "HEAD") {
      response = {405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
    } else {
      std::string_view accept;
      std::size_t at = head.find("\r\n");
      while (at != std::string_view::npos && at + 2 < head.size()) {
        std::size_t end = head.find("\r\n", at + 2);
        std::string_view header = head.substr(at + 2, end - at - 2);
        auto colon = header.find(':');
        if (colon != std::string_view::npos && core::ascii_lower(header.substr(0, colon)) == "accept") {
          accept = core::trim(header.substr(colon + 1));
        }
        at = end;
      }
      response = m_handler(target, accept);
    }
  }
  std::string out = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                                response.status, reason(response.status), response.content_type, response.body.size());
  if (!head_only) {
    out += response.body;
  }
  send_all(fd, out);
  ++m_served;
}

} // namespace dedupctl::connectors::http
