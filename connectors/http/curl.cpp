#include "connectors/http/curl.hpp"

#include <curl/curl.h>

#include <mutex>
#include <new>

namespace dedupctl::connectors::http {

namespace {

std::once_flag g_curl_init;

std::size_t append(char* data, std::size_t size, std::size_t count, void* out) {
  static_cast<std::string*>(out)->append(data, size * count);
  return size * count;
}

// The headers' list, freed however the request ends.
struct Headers {
  curl_slist* list = nullptr;
  ~Headers() { curl_slist_free_all(list); }
};

} // namespace

Curl::Curl() {
  std::call_once(g_curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  m_handle = curl_easy_init();
  if (!m_handle) {
    throw std::bad_alloc();
  }
}

Curl::~Curl() { curl_easy_cleanup(static_cast<CURL*>(m_handle)); }

Response Curl::perform(const Request& request) {
  auto* curl = static_cast<CURL*>(m_handle);
  Response out;
  curl_easy_reset(curl);
  curl_easy_setopt(curl, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &append);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &out.body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ms));
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  if (request.post_body) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, request.post_body->c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(request.post_body->size()));
  }
  Headers headers;
  for (const auto& header : request.headers) {
    headers.list = curl_slist_append(headers.list, header.c_str());
  }
  if (headers.list) {
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.list);
  }
  if (!request.basic_auth.empty()) {
    curl_easy_setopt(curl, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(curl, CURLOPT_USERPWD, request.basic_auth.c_str());
  }
  if (!request.aws_sigv4.empty()) {
    curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, request.aws_sigv4.c_str());
    curl_easy_setopt(curl, CURLOPT_USERNAME, request.access_key.c_str());
    curl_easy_setopt(curl, CURLOPT_PASSWORD, request.secret_key.c_str());
  }
  if (!request.ca_file.empty()) {
    curl_easy_setopt(curl, CURLOPT_CAINFO, request.ca_file.c_str());
  }
  CURLcode code = curl_easy_perform(curl);
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &out.status);
  curl_easy_reset(curl); // the secrets' copies on the handle go with the rest
  if (code != CURLE_OK) {
    out.failure = curl_easy_strerror(code);
  }
  return out;
}

} // namespace dedupctl::connectors::http
