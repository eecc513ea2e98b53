#pragma once

#include "connectors/http/web_config.hpp"

#include <openssl/ssl.h>

#include <string>

namespace dedupctl::connectors::http {

// Sets `ctx` up as tls_server_config says: the certificate chain and its key (checked to match),
// the client CA and the verification client_auth_type asks for, the protocol versions. Returns why
// it could not ("cert_file /etc/…/server.pem: no certificate in it (…)"), empty when it could.
std::string configure_tls(SSL_CTX* ctx, const TlsServerConfig& tls);
// The same on a context of its own: what load_web_config checks.
std::string tls_setup_error(const TlsServerConfig& tls);

} // namespace dedupctl::connectors::http
