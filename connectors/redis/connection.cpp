#include "connectors/redis/connection.hpp"

#include "connectors/process/shell.hpp"
#include "core/util/text.hpp"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <hiredis/hiredis_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <sys/time.h>

namespace dedupctl::connectors::redis {

namespace {

timeval to_timeval(std::int64_t ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

} // namespace

void CommandBuffer::add_command(std::string_view name, std::span<const std::string> args) {
  m_text += '*';
  number(args.size() + 1);
  argument(name);
  for (const auto& arg : args) {
    argument(arg);
  }
  ++m_count;
}

void CommandBuffer::argument(std::string_view arg) {
  m_text += '$';
  number(arg.size());
  m_text.append(arg);
  m_text += "\r\n";
}

// The digits and their CRLF go in with one append: GCC 12 at -O3 takes an append of a literal
// after an append of a local buffer for an overlapping copy (-Wrestrict, a false positive).
void CommandBuffer::number(std::size_t n) {
  char digits[24];
  char* end = std::to_chars(digits, digits + sizeof digits - 2, n).ptr;
  *end++ = '\r';
  *end++ = '\n';
  m_text.append(digits, static_cast<std::size_t>(end - digits));
}

Connection::Connection(const RedisSettings& settings, Endpoint endpoint)
    : m_settings(settings), m_endpoint(std::move(endpoint)) {
  timeval tv = to_timeval(settings.timeout_ms);
  m_ctx.reset(m_endpoint.unix_path.empty()
                  ? redisConnectWithTimeout(m_endpoint.node.host.c_str(), m_endpoint.node.port, tv)
                  : redisConnectUnixWithTimeout(m_endpoint.unix_path.c_str(), tv));
  if (!m_ctx) {
    throw ConnectionLost(fmt::format("cannot reach Redis at {} (out of memory)", where()));
  }
  if (m_ctx->err) {
    fail("connect");
  }
  if (redisSetTimeout(m_ctx.get(), tv) != REDIS_OK) {
    fail("set timeout");
  }
  if (settings.uri.tls.enabled && m_endpoint.unix_path.empty()) {
    start_tls();
  }
  const auto& uri = settings.uri;
  if (m_endpoint.authenticate) {
    authenticate();
  }
  if (m_endpoint.authenticate && uri.db != 0) {
    Reply reply = command({"SELECT", std::to_string(uri.db)});
    if (reply->type == REDIS_REPLY_ERROR) {
      throw UnreachableError(fmt::format("Redis at {} refused SELECT {} ({}); check the database in {flag}", where(),
                                         uri.db, text_of(*reply), fmt::arg("flag", m_settings.flag)));
    }
  }
  m_ready = true;
}

// AUTH with the URI's password, or one taken now from the password file or command. A command's
// password the server refuses is asked for once more: it may have rotated between the two.
void Connection::authenticate() {
  const auto& uri = m_settings.uri;
  bool from_command = !uri.password && !m_settings.password_command.empty();
  for (int attempt = 0;; ++attempt) {
    std::optional<std::string> password = password_now();
    if (!password) {
      return;
    }
    std::vector<std::string> auth{"AUTH"};
    if (!uri.user.empty()) {
      auth.push_back(uri.user);
    }
    auth.push_back(std::move(*password));
    Reply reply = command(auth);
    if (reply->type != REDIS_REPLY_ERROR) {
      return;
    }
    if (from_command && attempt == 0) {
      continue;
    }
    const std::string& flag = m_settings.flag;
    std::string source = uri.password   ? "the user and password in " + flag
                         : from_command ? "the user in " + flag + " and what the password command prints"
                                        : "the user in " + flag + " and the password in " + m_settings.password_file;
    throw UnreachableError(
        fmt::format("Redis at {} refused the credentials ({}); check {}", where(), text_of(*reply), source));
  }
}

// The password for this connection: the URI's, else the file's (read now) or the command's (run
// now), the line's end trimmed; nullopt when there is none.
std::optional<std::string> Connection::password_now() const {
  if (m_settings.uri.password) {
    return m_settings.uri.password;
  }
  std::string text;
  if (!m_settings.password_file.empty()) {
    std::ifstream file(m_settings.password_file, std::ios::binary);
    std::ostringstream content;
    content << file.rdbuf();
    if (!file) {
      throw UnreachableError(fmt::format("cannot read the Redis password file '{}' ({}) to connect to {}",
                                         m_settings.password_file, std::strerror(errno), where()));
    }
    text = content.str();
  } else if (!m_settings.password_command.empty()) {
    auto run = process::run_shell(m_settings.password_command, m_settings.timeout_ms);
    std::string why = process::failure_of(run, m_settings.timeout_ms);
    if (why.empty() && core::trim(run.out).empty()) {
      why = "it printed nothing";
    }
    if (!why.empty()) {
      throw UnreachableError(fmt::format("the Redis password command '{}' failed: {}; run it by hand to see why",
                                         m_settings.password_command, why));
    }
    text = std::move(run.out);
  } else {
    return std::nullopt;
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
    text.pop_back();
  }
  return text;
}

namespace {

struct SslCtxDeleter {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
struct SslDeleter {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};

bool is_ip_literal(const std::string& host) {
  unsigned char buffer[sizeof(in6_addr)];
  return ::inet_pton(AF_INET, host.c_str(), buffer) == 1 || ::inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

// OpenSSL's reason for the last error on this thread, or `fallback`.
std::string openssl_reason(std::string_view fallback) {
  unsigned long e = ERR_peek_last_error();
  const char* reason = e ? ERR_reason_error_string(e) : nullptr;
  return reason ? reason : std::string(fallback);
}

} // namespace

// The client's TLS context is made for each connection from the URI's files: a handful of
// connections a run (a cluster's masters, a sentinel), and nothing shared between threads.
void Connection::start_tls() {
  static std::once_flag once;
  std::call_once(once, [] { redisInitOpenSSL(); });
  const core::RedisTls& tls = m_settings.uri.tls;
  std::unique_ptr<SSL_CTX, SslCtxDeleter> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) {
    throw UnreachableError(fmt::format("cannot set up TLS for Redis at {}: {}", where(), openssl_reason("no context")));
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  // A file the URI names that cannot be used is the user's to fix: exit 2, before any handshake.
  auto bad_file = [&](std::string_view parameter, const std::string& file) {
    throw UsageError(fmt::format("cannot use {} '{}' of {flag} {}: {}; check the file (PEM)", parameter, file,
                                 m_settings.uri.redacted(), openssl_reason("unreadable"),
                                 fmt::arg("flag", m_settings.flag)));
  };
  if (tls.mode != core::TlsMode::Require) {
    if (!tls.root_cert.empty()) {
      if (SSL_CTX_load_verify_locations(ctx.get(), tls.root_cert.c_str(), nullptr) != 1) {
        bad_file("sslrootcert", tls.root_cert);
      }
    } else if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
      throw UnreachableError(fmt::format("cannot load the system's CA certificates for Redis at {}: {}", where(),
                                         openssl_reason("unreadable")));
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  }
  if (!tls.cert.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), tls.cert.c_str()) != 1) {
      bad_file("sslcert", tls.cert);
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), tls.key.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      bad_file("sslkey", tls.key);
    }
  }
  std::unique_ptr<SSL, SslDeleter> ssl(SSL_new(ctx.get()));
  if (!ssl) {
    throw UnreachableError(fmt::format("cannot set up TLS for Redis at {}: {}", where(), openssl_reason("no session")));
  }
  const std::string& host = m_endpoint.node.host;
  bool ip = is_ip_literal(host);
  if (tls.sni && !ip) {
    SSL_set_tlsext_host_name(ssl.get(), host.c_str());
  }
  if (tls.mode == core::TlsMode::VerifyFull) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl.get());
    if ((ip ? X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str())
            : X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0)) != 1) {
      throw UnreachableError(fmt::format("cannot verify the name of Redis at {}", where()));
    }
  }
  ERR_clear_error();
  errno = 0;
  if (redisInitiateSSL(m_ctx.get(), ssl.get()) == REDIS_OK) {
    ssl.release(); // the connection's now, freed with it
    confirm_tls();
    return;
  }
  int saved = errno;
  long verify = SSL_get_verify_result(ssl.get());
  if (verify != X509_V_OK) {
    std::string hint = verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH
                           ? "connect by a name the certificate holds, or use sslmode=verify-ca"
                       : tls.root_cert.empty() ? "give the CA that signed it as sslrootcert in " + m_settings.flag
                                               : "check sslrootcert in " + m_settings.flag;
    throw UnreachableError(fmt::format("TLS handshake with Redis at {} failed: certificate verify failed ({}); {}",
                                       where(), X509_verify_cert_error_string(verify), hint));
  }
  // A refusal in TLS itself (an alert: no protocol in common) will be the same on the next try; a
  // connection that died on the way may find its node again.
  if (ERR_peek_last_error() != 0) {
    throw UnreachableError(fmt::format("TLS handshake with Redis at {} failed: {}; check the ssl* parameters of "
                                       "{flag}",
                                       where(), openssl_reason(m_ctx->errstr), fmt::arg("flag", m_settings.flag)));
  }
  if (saved == EAGAIN || saved == EWOULDBLOCK || saved == ETIMEDOUT) {
    throw ConnectionLost(fmt::format("TLS handshake with Redis at {} failed: no answer in {} ms; check that {} is "
                                     "the server's TLS port (redis-server --tls-port)",
                                     where(), m_settings.timeout_ms, m_endpoint.node.port));
  }
  throw ConnectionLost(fmt::format("TLS handshake with Redis at {} failed: {}; check {} and that the server "
                                   "speaks TLS on that port",
                                   where(), saved ? std::strerror(saved) : "the server closed the connection",
                                   m_settings.flag));
}

// In TLS 1.3 the server judges the client's certificate after the client's side of the handshake
// is done: a server that requires one and got none closes the connection at the first command.
// One PING now says so as what it is, rather than as a lost connection later (whatever it
// answers, NOAUTH included, the connection holds).
void Connection::confirm_tls() {
  try {
    command({"PING"});
  } catch (const ConnectionLost&) {
    std::string alert = openssl_reason("");
    bool no_cert = m_settings.uri.tls.cert.empty();
    throw UnreachableError(fmt::format(
        "TLS handshake with Redis at {} failed: the server closed the connection after it{}{}", where(),
        alert.empty() ? "" : fmt::format(" ({})", alert),
        no_cert ? "; a server that requires a client certificate (tls-auth-clients yes) needs sslcert and sslkey in " +
                      m_settings.flag
                : std::string("; check that the server trusts the CA of sslcert")));
  }
}

void Connection::fail(std::string_view during) {
  int saved = errno;
  std::string cause;
  if (m_ctx->err == REDIS_ERR_IO && (saved == EAGAIN || saved == EWOULDBLOCK || saved == ETIMEDOUT ||
                                     std::strstr(m_ctx->errstr, "timed out") != nullptr)) {
    // hiredis 0.14 has no REDIS_ERR_TIMEOUT: a timeout is an I/O error with EAGAIN.
    cause = fmt::format("timed out after {} ms", m_settings.timeout_ms);
  } else if (m_ctx->err == REDIS_ERR_EOF) {
    cause = "the server closed the connection";
  } else if (std::strstr(m_ctx->errstr, "refused") != nullptr || saved == ECONNREFUSED) {
    cause = "connection refused";
  } else {
    cause = m_ctx->errstr;
  }
  throw ConnectionLost(fmt::format("cannot reach Redis at {} during {} ({}); check {} and that the server "
                                   "is up, or raise --timeout",
                                   where(), during, cause, m_settings.flag));
}

Reply Connection::command(const std::vector<std::string>& args) {
  CommandBuffer one;
  one.add(args);
  send(one);
  return read("command");
}

// Written to the socket now, not at the first read: hiredis' blocking redisGetReply flushes only
// its own context, so a cluster's masters would otherwise get their batches one after another,
// each only when the previous master's replies had all been read.
void Connection::send(const CommandBuffer& commands) {
  if (redisAppendFormattedCommand(m_ctx.get(), commands.text().data(), commands.text().size()) != REDIS_OK) {
    fail("a pipelined write");
  }
  int done = 0;
  while (!done) {
    if (redisBufferWrite(m_ctx.get(), &done) != REDIS_OK) {
      fail("a pipelined write");
    }
  }
}

Reply Connection::read(std::string_view during) {
  void* raw = nullptr;
  if (redisGetReply(m_ctx.get(), &raw) != REDIS_OK || !raw) {
    fail(during);
  }
  Reply reply(static_cast<redisReply*>(raw));
  // Credentials that lapsed on an open connection (a token's end, a rotated password, a server that
  // restarted with requirepass): the connection is as good as lost.
  if (m_ready && reply->type == REDIS_REPLY_ERROR &&
      (text_of(*reply).starts_with("NOAUTH") || text_of(*reply).starts_with("WRONGPASS"))) {
    throw ConnectionLost(
        fmt::format("Redis at {} no longer accepts this connection's credentials ({})", where(), text_of(*reply)));
  }
  if (reply->type == REDIS_REPLY_ERROR && text_of(*reply).starts_with("LOADING")) {
    throw UnreachableError(
        fmt::format("Redis at {} is loading its dataset into memory; try again when it is done", where()));
  }
  return reply;
}

void read_pttl(const redisReply& reply, core::RecordState& state, std::string_view where) {
  if (reply.type == REDIS_REPLY_ERROR) {
    throw UnreachableError(fmt::format("Redis at {} answered PTTL with an error ({})", where, text_of(reply)));
  }
  long long ms = reply.type == REDIS_REPLY_INTEGER ? reply.integer : -2;
  state = core::RecordState{};
  if (ms == -2) {
    return; // absent
  }
  state.kind = core::RecordState::Kind::Present;
  if (ms >= 0) {
    state.pttl_ms = ms;
  }
}

void keep_value(std::string& into, const char* value, std::size_t size, bool padded) {
  if (padded) {
    into.reserve(size + core::k_record_padding);
  }
  into.assign(value, size);
}

// A PTTL for each key and an MGET of every k_lookup_chunk keys' values, in one round trip (PTTL
// says whether the key exists and for how long; the value only matters for claim markers, and a
// value longer than k_value_prefix bytes is cut there). One MGET of a 4096-key batch cost Redis
// more CPU than eight of 512: the audit's lookups took 2.30 s of it for 1M keys, 1.84 s since
// (tests/bench/audit-redis, interleaved runs). Writing a chunk before reading the last one's
// replies, rather than the batch at once, changed nothing (ten runs a side).
// With `with_ttl` false (a JSON layout whose records carry their own expiration) the PTTLs are left
// out: a key is present when MGET returns a string, and its lapse is the record's own.
bool read_value(const redisReply& reply, bool with_ttl, core::RecordState& state, std::string& value, std::size_t limit,
                bool padded) {
  if (!with_ttl && reply.type == REDIS_REPLY_STRING) {
    state.kind = core::RecordState::Kind::Present;
  }
  if (state.kind != core::RecordState::Kind::Present || reply.type != REDIS_REPLY_STRING) {
    return false;
  }
  keep_value(value, reply.str, std::min<std::size_t>(reply.len, limit), padded);
  return true;
}

void Connection::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
                        std::vector<std::string>& values, std::size_t value_limit, bool with_ttl,
                        const core::RecordLayout* read_as) {
  out.assign(keys.size(), core::RecordState{});
  // Cleared, not made anew: a value's buffer is reused by the next batch's (a kilobyte of JSON a
  // record would be allocated and freed a key otherwise).
  values.resize(keys.size());
  for (auto& value : values) {
    value.clear();
  }
  if (keys.empty()) {
    return;
  }
  auto chunk_end = [&](std::size_t begin) { return std::min(keys.size(), begin + k_lookup_chunk); };
  bool padded = read_as != nullptr && read_as->value == core::RecordValue::Json;
  m_buffer.clear();
  for (std::size_t begin = 0; begin < keys.size(); begin += k_lookup_chunk) {
    std::size_t end = chunk_end(begin);
    for (std::size_t i = begin; with_ttl && i < end; ++i) {
      m_buffer.add({"PTTL", keys[i]});
    }
    m_buffer.add_command("MGET", std::span(keys).subspan(begin, end - begin));
  }
  send(m_buffer);
  for (std::size_t begin = 0; begin < keys.size(); begin += k_lookup_chunk) {
    std::size_t end = chunk_end(begin);
    for (std::size_t i = begin; with_ttl && i < end; ++i) {
      read_pttl(*read("a lookup"), out[i], where());
    }
    Reply mget = read("a lookup");
    if (mget->type != REDIS_REPLY_ARRAY || mget->elements != end - begin) {
      throw UnreachableError(
          fmt::format("Redis at {} answered MGET of {} keys with {}", where(), end - begin,
                      mget->type == REDIS_REPLY_ERROR ? std::string(text_of(*mget)) : std::string("something else")));
    }
    for (std::size_t i = begin; i < end; ++i) {
      if (read_value(*mget->element[i - begin], with_ttl, out[i], values[i], value_limit, padded) && read_as) {
        core::read_record_value(*read_as, values[i], out[i], spare_of(values[i]));
      }
    }
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out[i].value = values[i];
  }
}

} // namespace dedupctl::connectors::redis
