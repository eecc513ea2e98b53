// connectors/http: the endpoint watch serves its metrics on, as a scraper, a probe and a stalled
// client meet it.
#include "connectors/http/server.hpp"
#include "core/util/errors.hpp"
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

using namespace dedupctl;
using namespace dedupctl::testing;

namespace {

connectors::http::Response echo(std::string_view path, std::string_view accept) {
  if (path == "/missing") {
    return {404, "text/plain", "no\n"};
  }
  return {200, "text/plain", std::string(path) + "|" + std::string(accept)};
}

// Sends `raw` on a new connection and returns everything the server answers.
std::string exchange(int port, const std::string& raw) {
  int fd = connect_loopback(port);
  if (fd < 0) {
    return "";
  }
  (void)::send(fd, raw.data(), raw.size(), MSG_NOSIGNAL);
  std::string out;
  char chunk[4096];
  for (ssize_t n; (n = ::recv(fd, chunk, sizeof chunk, 0)) > 0;) {
    out.append(chunk, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

} // namespace

TEST(HttpServer, AnswersGetWithPathAndAcceptHeadWithoutBodyAndRefusesOtherMethods) {
  connectors::http::Server server("127.0.0.1:0", echo);
  ASSERT_GT(server.port(), 0);
  auto got = http_get(server.port(), "/metrics?x=1", "application/openmetrics-text");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->status, 200);
  EXPECT_EQ(got->body, "/metrics|application/openmetrics-text");
  EXPECT_NE(got->headers.find("Content-Length: " + std::to_string(got->body.size())), std::string::npos)
      << got->headers;
  EXPECT_EQ(http_get(server.port(), "/missing")->status, 404);
  std::string head = exchange(server.port(), "HEAD /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(head.starts_with("HTTP/1.1 200 OK\r\n")) << head;
  EXPECT_TRUE(head.ends_with("\r\n\r\n")) << "no body after a HEAD: " << head;
  std::string post =
      exchange(server.port(), "POST /metrics HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(post.starts_with("HTTP/1.1 405")) << post;
  EXPECT_TRUE(exchange(server.port(), "garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
}

// A client that connects and never sends its request holds only its own connection (for the read
// timeout); a request line longer than 8 KiB is refused.
TEST(HttpServer, AStalledOrHugeRequestIsDroppedAndTheNextOneServed) {
  connectors::http::Server server("127.0.0.1:0", echo);
  int stalled = connect_loopback(server.port());
  ASSERT_GE(stalled, 0);
  (void)::send(stalled, "GET /", 5, MSG_NOSIGNAL);
  auto got = http_get(server.port(), "/after", {}, std::chrono::seconds(15));
  ASSERT_TRUE(got) << "the request after a stalled client was never answered";
  EXPECT_EQ(got->body, "/after|");
  ::close(stalled);
  std::string huge = exchange(server.port(), "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n");
  EXPECT_TRUE(huge.starts_with("HTTP/1.1 414")) << huge;
  EXPECT_EQ(http_get(server.port(), "/again")->body, "/again|");
}

TEST(HttpServer, AnAddressThatCannotBeListenedOnIsAUsageError) {
  connectors::http::Server first("127.0.0.1:0", echo);
  try {
    connectors::http::Server second("127.0.0.1:" + std::to_string(first.port()), echo);
    FAIL() << "a second server on the same port";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot listen there"), std::string::npos) << e.what();
  }
  for (const char* bad : {"9464", "host:", "127.0.0.1:99999", "no.such.host.invalid:9464", "[::1:9"}) {
    EXPECT_THROW(connectors::http::Server(bad, echo), UsageError) << bad;
  }
  connectors::http::Server v6("[::1]:0", echo);
  EXPECT_GT(v6.port(), 0);
}
