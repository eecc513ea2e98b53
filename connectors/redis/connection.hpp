#pragma once

// One hiredis connection and the Redis protocol written straight into a buffer; shared by the
// one-server and the cluster paths (connectors/redis/nodes.hpp). Internal to connectors/redis.

#include "connectors/redis/redis.hpp"
#include "core/audit/coverage.hpp"
#include "core/store/layout.hpp"
#include "core/util/errors.hpp"

#include <hiredis/hiredis.h>

#include <initializer_list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dedupctl::connectors::redis {

// The first bytes of a value are enough to see claim markers ("processing:<run>").
inline constexpr std::size_t k_value_prefix = 64;
// Keeps a value a lookup read in `into` (a buffer reused batch after batch); `padded`: with the spare
// bytes a JSON record is parsed in place with (core::k_record_padding). Not for a claim marker: a
// short value stays inside its string, no buffer of its own to touch.
void keep_value(std::string& into, const char* value, std::size_t size, bool padded);
// The spare bytes of a value kept so, for core::read_record_value.
inline std::size_t spare_of(const std::string& kept) { return kept.capacity() - kept.size(); }

// Keys whose values one MGET of a lookup reads (a batch sends one MGET a chunk).
inline constexpr std::size_t k_lookup_chunk = 512;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

inline std::string_view text_of(const redisReply& reply) { return {reply.str, reply.len}; }

// The connection itself failed (refused, timed out, closed): the cluster path may find the slot's
// new master; everywhere else it is an UnreachableError like any other.
class ConnectionLost : public UnreachableError {
public:
  using UnreachableError::UnreachableError;
};

// Commands in the Redis protocol, written straight into one buffer: a batch goes to hiredis as one
// preformatted append, not a formatted command (with its allocations) a key.
class CommandBuffer {
public:
  void clear() {
    m_text.clear();
    m_count = 0;
  }
  // While on, every command is preceded by ASKING (a cluster's ASK redirect: the next command may
  // touch a slot the node is importing); count() counts the commands only.
  void asking(bool on) { m_asking = on; }
  void add(std::initializer_list<std::string_view> args) { add(args.begin(), args.end(), args.size()); }
  void add(const std::vector<std::string>& args) { add(args.begin(), args.end(), args.size()); }
  // NAME followed by every one of `args`.
  void add_command(std::string_view name, std::span<const std::string> args);
  const std::string& text() const { return m_text; }
  std::size_t count() const { return m_count; }

private:
  template <typename It> void add(It begin, It end, std::size_t n) {
    if (m_asking) {
      m_text += "*1\r\n$6\r\nASKING\r\n";
    }
    m_text += '*';
    number(n);
    for (It it = begin; it != end; ++it) {
      argument(*it);
    }
    ++m_count;
  }
  void argument(std::string_view arg);
  void number(std::size_t n);

  std::string m_text;
  std::size_t m_count = 0;
  bool m_asking = false;
};

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};

// Where a connection goes: a TCP node or a Unix socket, with or without the store's AUTH and
// SELECT (a sentinel gets neither).
struct Endpoint {
  core::HostPort node;
  std::string unix_path;
  bool authenticate = true;
  std::string text() const { return unix_path.empty() ? node.text() : unix_path; }
};

class Connection {
public:
  // Connects, then AUTH and SELECT as the store's URI says. Throws ConnectionLost, or
  // UnreachableError when the server refuses the credentials or the database.
  Connection(const RedisSettings& settings, Endpoint endpoint);

  std::string where() const { return m_endpoint.text(); }
  const core::HostPort& node() const { return m_endpoint.node; }

  Reply command(const std::vector<std::string>& args);
  // Writes a batch to the socket (all of it, before returning); its replies are read in order with
  // read().
  void send(const CommandBuffer& commands);
  Reply read(std::string_view during);

  // A PTTL for each key and an MGET for every k_lookup_chunk of their values, in one round trip
  // (one server only: a cluster refuses an MGET across slots).
  // Values are kept up to `value_limit` bytes (k_value_prefix for claim markers; all of a JSON record).
  // `read_as`: each value is read as that layout's record as soon as it is kept, in place, while its
  // bytes are still in the cache (a kilobyte of JSON a key).
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
              std::vector<std::string>& values, std::size_t value_limit = k_value_prefix, bool with_ttl = true,
              const core::RecordLayout* read_as = nullptr);

  // The connection's endpoint, to open another like it.
  const Endpoint& endpoint() const { return m_endpoint; }

private:
  void authenticate();
  std::optional<std::string> password_now() const;
  // TLS on the connected socket, as the URI's ssl* parameters say (rediss://).
  void start_tls();
  void confirm_tls();
  [[noreturn]] void fail(std::string_view during);

  const RedisSettings& m_settings;
  Endpoint m_endpoint;
  std::unique_ptr<redisContext, ContextDeleter> m_ctx;
  CommandBuffer m_buffer;
  bool m_ready = false; // connected, authenticated, its database selected
};

// A PTTL reply as a record's state (absent, present with or without a TTL); throws on an error.
void read_pttl(const redisReply& reply, core::RecordState& state, std::string_view where);
// A GET's (or an MGET element's) reply into a record's state and value, the one rule for both: nil for
// an absent key and for one holding another type (hash, set), which its PTTL (`with_ttl`) said is
// present without a marker; without PTTLs a string alone makes the record present (a key of another
// type holds no record a library's GET finds either). A present record's string is kept up to `limit`:
// true when one was.
bool read_value(const redisReply& reply, bool with_ttl, core::RecordState& state, std::string& value, std::size_t limit,
                bool padded);

} // namespace dedupctl::connectors::redis
