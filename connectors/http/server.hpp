#pragma once

#include "connectors/http/web_config.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

// The HTTP endpoint `dedupctl watch` serves its metrics on, on cpp-httplib (Debian's
// libcpp-httplib, with its OpenSSL support): GET and HEAD, keep-alive as scrapers use it, and with a
// --web-config file TLS (client certificates too) and basic auth as Prometheus' exporters serve
// them. A connection has a thread of its own (a slow or hostile client holds up only itself, for
// the read timeout), up to a bound; past it, connections wait newest first, so a scraper arriving
// during a flood of held connections is served as soon as a thread frees.
namespace dedupctl::connectors::http {

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on a connection's thread with the request's path (without its query) and Accept header;
// several at once.
using Handler = std::function<Response(std::string_view path, std::string_view accept)>;

class Server {
public:
  // Listens on `listen` ("HOST:PORT", "[V6]:PORT" or ":PORT" for every address; port 0 takes a
  // free one, see port()) as `web` says (nullptr: plain HTTP, no auth). Throws UsageError naming
  // --listen when it is malformed or cannot be bound (in use, not an address of this host).
  Server(const std::string& listen, Handler handler, const WebConfig* web = nullptr);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const { return m_port; }
  // How requests were answered so far (401s included).
  std::int64_t served() const;

  struct State;

private:
  std::shared_ptr<State> m_state;
  std::uint16_t m_port = 0;
  std::thread m_thread;
};

} // namespace dedupctl::connectors::http
