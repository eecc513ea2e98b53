#include "connectors/http/tls.hpp"

#include <fmt/format.h>

#include <openssl/err.h>
#include <openssl/x509.h>

#include <cerrno>
#include <cstring>
#include <memory>

#include <sys/stat.h>
#include <unistd.h>

namespace dedupctl::connectors::http {

namespace {

// OpenSSL's last error as words, the queue emptied.
std::string openssl_error() {
  unsigned long code = ERR_get_error();
  std::string words =
      code ? ERR_reason_error_string(code) ? ERR_reason_error_string(code) : "unknown error" : "unknown error";
  ERR_clear_error();
  return words;
}

// Why `path` cannot be read, in the words an operator looks for ("no such file"), or "" when it can:
// OpenSSL 3 reports a failed fopen as a system error with no reason string of its own.
std::string unreadable(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? "no such file" : std::strerror(errno);
  }
  if (S_ISDIR(st.st_mode)) {
    return "is a directory, not a PEM file";
  }
  if (::access(path.c_str(), R_OK) != 0) {
    return std::strerror(errno);
  }
  return "";
}

// Go's crypto/tls: RequestClientCert asks without verifying; RequireAnyClientCert insists without
// verifying; VerifyClientCertIfGiven verifies one that is sent; RequireAndVerifyClientCert both.
int accept_any(int, X509_STORE_CTX*) { return 1; }

} // namespace

std::string configure_tls(SSL_CTX* ctx, const TlsServerConfig& tls) {
  ERR_clear_error();
  for (const auto& [field, path] : {std::pair{"cert_file", &tls.cert_file}, std::pair{"key_file", &tls.key_file},
                                    std::pair{"client_ca_file", &tls.client_ca_file}}) {
    if (auto why = path->empty() ? "" : unreadable(*path); !why.empty()) {
      return fmt::format("{} {}: {}", field, *path, why);
    }
  }
  if (SSL_CTX_use_certificate_chain_file(ctx, tls.cert_file.c_str()) != 1) {
    return fmt::format("cert_file {}: {}", tls.cert_file, openssl_error());
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, tls.key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
    if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
      ERR_clear_error();
      return fmt::format("key_file {} is not the key of cert_file {}", tls.key_file, tls.cert_file);
    }
    return fmt::format("key_file {}: {}", tls.key_file, openssl_error());
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return fmt::format("key_file {} is not the key of cert_file {}", tls.key_file, tls.cert_file);
  }
  SSL_CTX_set_min_proto_version(ctx, tls.min_version ? tls.min_version : TLS1_2_VERSION);
  SSL_CTX_set_max_proto_version(ctx, tls.max_version);
  if (!tls.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx, tls.client_ca_file.c_str(), nullptr) != 1) {
      return fmt::format("client_ca_file {}: {}", tls.client_ca_file, openssl_error());
    }
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(tls.client_ca_file.c_str());
    if (!names) {
      return fmt::format("client_ca_file {}: no certificate in it", tls.client_ca_file);
    }
    SSL_CTX_set_client_CA_list(ctx, names);
  }
  switch (tls.client_auth) {
  case ClientAuth::NoClientCert:
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    break;
  case ClientAuth::RequestClientCert:
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, accept_any);
    break;
  case ClientAuth::RequireAnyClientCert:
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any);
    break;
  case ClientAuth::VerifyClientCertIfGiven:
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    break;
  case ClientAuth::RequireAndVerifyClientCert:
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    break;
  }
  return {};
}

std::string tls_setup_error(const TlsServerConfig& tls) {
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) {
    return "OpenSSL could not make a TLS context: " + openssl_error();
  }
  return configure_tls(ctx.get(), tls);
}

} // namespace dedupctl::connectors::http
