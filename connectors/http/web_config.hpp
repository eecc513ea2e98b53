#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// `watch --web-config FILE`: the web configuration file Prometheus' exporters take
// (--web.config.file, exporter-toolkit), with the same field names and meanings: TLS (with client
// certificates) and basic auth for /metrics and /healthz.
namespace dedupctl::connectors::http {

// tls_server_config.client_auth_type, as Go's crypto/tls names them.
enum class ClientAuth {
  NoClientCert,
  RequestClientCert,
  RequireAnyClientCert,
  VerifyClientCertIfGiven,
  RequireAndVerifyClientCert,
};

struct TlsServerConfig {
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;
  ClientAuth client_auth = ClientAuth::NoClientCert;
  int min_version = 0; // OpenSSL's TLS1_2_VERSION … ; 0: TLS 1.2, exporter-toolkit's default
  int max_version = 0; // 0: the newest
};

struct WebConfig {
  std::string path;
  std::optional<TlsServerConfig> tls;
  std::map<std::string, std::string> basic_auth_users; // user -> bcrypt hash
  std::vector<std::pair<std::string, std::string>> headers;
};

// Reads and checks the file: its YAML, every field (an unknown one is refused, as exporter-toolkit
// refuses it), and the TLS files (the certificate, its key, that they match, the client CA), so
// that a file that reads here also serves. Throws UsageError "--web-config FILE: FIELD: why".
// Never says a hash or a key's content.
WebConfig load_web_config(const std::string& path);

} // namespace dedupctl::connectors::http
