#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

// The HTTP endpoint `dedupctl watch` serves its metrics on: GET and HEAD, one request a connection
// (Connection: close), one connection at a time on its own thread, each bounded in size (8 KiB of
// request) and time (5 s to send it, 5 s to take the answer), so that a slow or hostile client
// holds it up for seconds at most. That is all a scraper and a probe need; a library server would
// bring threads pools and keep-alive nobody here uses.
namespace dedupctl::connectors::http {

struct Response {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

// Called on the server's thread with the request's path (without its query) and Accept header.
using Handler = std::function<Response(std::string_view path, std::string_view accept)>;

class Server {
public:
  // Listens on `listen` ("HOST:PORT", "[V6]:PORT" or ":PORT" for every address; port 0 takes a
  // free one, see port()). Throws UsageError naming --listen when it is malformed or cannot be
  // bound (in use, not an address of this host).
  Server(const std::string& listen, Handler handler);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  std::uint16_t port() const { return m_port; }
  // How requests were answered so far.
  std::int64_t served() const { return m_served.load(); }

private:
  void run();
  void serve(int fd);

  Handler m_handler;
  int m_fd = -1;
  std::uint16_t m_port = 0;
  std::atomic<bool> m_stop{false};
  std::atomic<std::int64_t> m_served{0};
  std::thread m_thread;
};

} // namespace dedupctl::connectors::http
