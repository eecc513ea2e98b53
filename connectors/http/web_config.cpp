#include "connectors/http/web_config.hpp"

#include "connectors/http/tls.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <openssl/ssl.h>

#include <set>

namespace dedupctl::connectors::http {

namespace {

[[noreturn]] void bad(const std::string& path, std::string_view field, std::string_view why) {
  throw UsageError(fmt::format("--web-config {}: {}: {}", path, field, why));
}

void only_known(const std::string& path, const YAML::Node& node, std::string_view where,
                const std::set<std::string>& known, const std::set<std::string>& unsupported = {}) {
  if (!node.IsMap()) {
    bad(path, where.empty() ? "the file" : where, "must be a mapping of fields");
  }
  for (const auto& entry : node) {
    auto name = entry.first.as<std::string>();
    std::string field = where.empty() ? name : fmt::format("{}.{}", where, name);
    if (unsupported.count(name)) {
      bad(path, field,
          "is not supported by dedupctl watch (it takes cert_file, key_file, client_ca_file, "
          "client_auth_type, min_version and max_version); remove it");
    }
    if (!known.count(name)) {
      bad(path, field, "unknown field");
    }
  }
}

std::string text(const std::string& path, const YAML::Node& node, const std::string& field) {
  if (!node.IsScalar()) {
    bad(path, field, "must be a string");
  }
  return node.as<std::string>();
}

int tls_version(const std::string& path, const std::string& field, const std::string& value) {
  if (value == "TLS10") {
    return TLS1_VERSION;
  }
  if (value == "TLS11") {
    return TLS1_1_VERSION;
  }
  if (value == "TLS12") {
    return TLS1_2_VERSION;
  }
  if (value == "TLS13") {
    return TLS1_3_VERSION;
  }
  bad(path, field, fmt::format("'{}' is not a TLS version: expected TLS10, TLS11, TLS12 or TLS13", value));
}

ClientAuth client_auth(const std::string& path, const std::string& value) {
  static const std::map<std::string, ClientAuth> names{
      {"NoClientCert", ClientAuth::NoClientCert},
      {"RequestClientCert", ClientAuth::RequestClientCert},
      {"RequireAnyClientCert", ClientAuth::RequireAnyClientCert},
      {"VerifyClientCertIfGiven", ClientAuth::VerifyClientCertIfGiven},
      {"RequireAndVerifyClientCert", ClientAuth::RequireAndVerifyClientCert}};
  auto it = names.find(value);
  if (it == names.end()) {
    bad(path, "tls_server_config.client_auth_type",
        fmt::format("'{}' is not a client auth type: expected NoClientCert, RequestClientCert, RequireAnyClientCert, "
                    "VerifyClientCertIfGiven or RequireAndVerifyClientCert",
                    value));
  }
  return it->second;
}

TlsServerConfig tls_config(const std::string& path, const YAML::Node& node) {
  const std::string where = "tls_server_config";
  only_known(path, node, where,
             {"cert_file", "key_file", "client_ca_file", "client_auth_type", "min_version", "max_version"},
             {"cert", "key", "client_ca", "client_allowed_sans", "cipher_suites", "curve_preferences",
              "prefer_server_cipher_suites"});
  TlsServerConfig tls;
  auto field = [&](const char* name) { return node[name] ? text(path, node[name], where + "." + name) : ""; };
  tls.cert_file = field("cert_file");
  tls.key_file = field("key_file");
  tls.client_ca_file = field("client_ca_file");
  if (tls.cert_file.empty()) {
    bad(path, where + ".cert_file", "missing: the server's certificate (PEM) is required for TLS");
  }
  if (tls.key_file.empty()) {
    bad(path, where + ".key_file", "missing: the certificate's private key (PEM) is required for TLS");
  }
  if (auto type = field("client_auth_type"); !type.empty()) {
    tls.client_auth = client_auth(path, type);
  }
  if (!tls.client_ca_file.empty() && tls.client_auth == ClientAuth::NoClientCert) {
    bad(path, where + ".client_auth_type",
        "client_ca_file is given but client_auth_type is NoClientCert: set RequireAndVerifyClientCert (or "
        "VerifyClientCertIfGiven)");
  }
  bool verifies = tls.client_auth == ClientAuth::VerifyClientCertIfGiven ||
                  tls.client_auth == ClientAuth::RequireAndVerifyClientCert;
  if (verifies && tls.client_ca_file.empty()) {
    bad(path, where + ".client_ca_file", "missing: client_auth_type verifies client certificates against it");
  }
  if (auto v = field("min_version"); !v.empty()) {
    tls.min_version = tls_version(path, where + ".min_version", v);
  }
  if (auto v = field("max_version"); !v.empty()) {
    tls.max_version = tls_version(path, where + ".max_version", v);
  }
  if (tls.min_version && tls.max_version && tls.min_version > tls.max_version) {
    bad(path, where + ".max_version", "is older than min_version");
  }
  return tls;
}

} // namespace

WebConfig load_web_config(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    throw UsageError(fmt::format("--web-config {}: cannot be read; check the path and its permissions", path));
  } catch (const YAML::Exception& e) {
    throw UsageError(
        fmt::format("--web-config {}:{}:{}: not YAML: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  WebConfig config;
  config.path = path;
  if (root.IsNull()) {
    return config; // an empty file: plain HTTP, no auth, as exporter-toolkit serves it
  }
  only_known(path, root, "", {"tls_server_config", "http_server_config", "basic_auth_users"});
  if (root["tls_server_config"] && !root["tls_server_config"].IsNull()) {
    config.tls = tls_config(path, root["tls_server_config"]);
    if (auto why = tls_setup_error(*config.tls); !why.empty()) {
      bad(path, "tls_server_config", why);
    }
  }
  if (const auto& server = root["http_server_config"]; server && !server.IsNull()) {
    only_known(path, server, "http_server_config", {"http2", "headers"});
    static const std::set<std::string> allowed{"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options",
                                               "X-XSS-Protection", "Content-Security-Policy"};
    if (const auto& headers = server["headers"]; headers && !headers.IsNull()) {
      if (!headers.IsMap()) {
        bad(path, "http_server_config.headers", "must be a mapping of header names to values");
      }
      for (const auto& header : headers) {
        auto name = header.first.as<std::string>();
        std::string field = "http_server_config.headers." + name;
        if (!allowed.count(name)) {
          bad(path, field,
              "not a header exporters set: Strict-Transport-Security, X-Content-Type-Options, X-Frame-Options, "
              "X-XSS-Protection or Content-Security-Policy");
        }
        config.headers.emplace_back(name, text(path, header.second, field));
      }
    }
  }
  if (const auto& users = root["basic_auth_users"]; users && !users.IsNull()) {
    if (!users.IsMap()) {
      bad(path, "basic_auth_users", "must be a mapping of user names to bcrypt hashes");
    }
    for (const auto& user : users) {
      auto name = user.first.as<std::string>();
      std::string field = "basic_auth_users." + name;
      if (name.empty() || name.find(':') != std::string::npos) {
        bad(path, "basic_auth_users", "a user name is empty or holds ':'");
      }
      std::string hash = text(path, user.second, field);
      if (!(hash.starts_with("$2a$") || hash.starts_with("$2b$") || hash.starts_with("$2y$")) || hash.size() != 60) {
        bad(path, field, "is not a bcrypt hash ($2y$…, 60 characters; htpasswd -nbB USER PASSWORD makes one)");
      }
      config.basic_auth_users[name] = hash;
    }
  }
  return config;
}

} // namespace dedupctl::connectors::http
