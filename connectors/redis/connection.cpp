#include "connectors/redis/connection.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
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

void CommandBuffer::add_command(std::string_view name, const std::vector<std::string>& args) {
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
  const auto& uri = settings.uri;
  if (m_endpoint.authenticate && uri.password) {
    std::vector<std::string> auth{"AUTH"};
    if (!uri.user.empty()) {
      auth.push_back(uri.user);
    }
    auth.push_back(*uri.password);
    Reply reply = command(auth);
    if (reply->type == REDIS_REPLY_ERROR) {
      throw UnreachableError(fmt::format("Redis at {} refused the credentials ({}); check the user and password "
                                         "in --store",
                                         where(), text_of(*reply)));
    }
  }
  if (m_endpoint.authenticate && uri.db != 0) {
    Reply reply = command({"SELECT", std::to_string(uri.db)});
    if (reply->type == REDIS_REPLY_ERROR) {
      throw UnreachableError(fmt::format("Redis at {} refused SELECT {} ({}); check the database in --store", where(),
                                         uri.db, text_of(*reply)));
    }
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
  throw ConnectionLost(fmt::format("cannot reach Redis at {} during {} ({}); check --store and that the server "
                                   "is up, or raise --timeout",
                                   where(), during, cause));
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

// A PTTL for each key and one MGET for all their values, in one round trip: one command a key, not
// two (PTTL says whether the key exists and for how long; the value only matters for claim
// markers, and a value longer than k_value_prefix bytes is cut there).
void Connection::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
                        std::vector<std::string>& values) {
  out.assign(keys.size(), core::RecordState{});
  values.assign(keys.size(), std::string());
  if (keys.empty()) {
    return;
  }
  m_buffer.clear();
  for (const auto& key : keys) {
    m_buffer.add({"PTTL", key});
  }
  m_buffer.add_command("MGET", keys);
  send(m_buffer);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    read_pttl(*read("a lookup"), out[i], where());
  }
  Reply mget = read("a lookup");
  if (mget->type != REDIS_REPLY_ARRAY || mget->elements != keys.size()) {
    throw UnreachableError(
        fmt::format("Redis at {} answered MGET of {} keys with {}", where(), keys.size(),
                    mget->type == REDIS_REPLY_ERROR ? std::string(text_of(*mget)) : std::string("something else")));
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const redisReply* value = mget->element[i];
    // Nil for an absent key and for one holding another type (hash, set): present, no marker.
    if (out[i].kind == core::RecordState::Kind::Present && value->type == REDIS_REPLY_STRING) {
      values[i].assign(value->str, std::min<std::size_t>(value->len, k_value_prefix));
    }
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out[i].value = values[i];
  }
}

} // namespace dedupctl::connectors::redis
