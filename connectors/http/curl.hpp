#pragma once

// libcurl's one owner: its global initialisation done once, a handle per Curl (RAII), and the options
// every request sets (http(s) only, no signals, a timeout) set in one place. Only curl.cpp includes
// <curl/curl.h>; the schema registry and the AWS clients ask through this.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::connectors::http {

struct Request {
  std::string url;
  std::int64_t timeout_ms = 0;
  std::vector<std::string> headers;     // "Name: value"
  std::optional<std::string> post_body; // a POST of this body; a GET without one
  std::string ca_file;                  // the CA file that verifies the server (else the system's)
  std::string basic_auth;               // "user:password" (HTTP basic)
  // AWS Signature Version 4 by libcurl ("aws:amz:REGION:SERVICE"), with the access key and secret.
  std::string aws_sigv4;
  std::string access_key;
  std::string secret_key;
};

struct Response {
  std::optional<std::string> failure; // the transport failed (libcurl's reason); no status then
  long status = 0;
  std::string body;
};

class Curl {
public:
  Curl();
  ~Curl();
  Curl(const Curl&) = delete;
  Curl& operator=(const Curl&) = delete;

  // One request on this handle (reset first, so nothing of the last one carries over). The secrets
  // set on the handle (basic auth, the secret key) are cleared from it before it returns.
  Response perform(const Request& request);

private:
  void* m_handle = nullptr; // CURL*
};

} // namespace dedupctl::connectors::http
