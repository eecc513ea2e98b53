#include "connectors/redis/redis.hpp"

#include "core/errors.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <sys/time.h>

namespace dedupctl::connectors::redis {

namespace {

// The first bytes of a value are enough to see claim markers ("processing:<run>").
constexpr std::size_t k_value_prefix = 64;
constexpr const char* k_scan_count = "1000";

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using Context = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

timeval to_timeval(std::int64_t ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms % 1000) * 1000);
  return tv;
}

// Commands in the Redis protocol, written straight into one buffer: a batch goes to hiredis as one
// preformatted append, not a formatted command (with its allocations) a key.
class CommandBuffer {
public:
  void clear() {
    m_text.clear();
    m_count = 0;
  }
  void add(std::initializer_list<std::string_view> args) { add(args.begin(), args.end(), args.size()); }
  void add(const std::vector<std::string>& args) { add(args.begin(), args.end(), args.size()); }
  // NAME followed by every one of `args`.
  void add_command(std::string_view name, const std::vector<std::string>& args) {
    m_text += '*';
    number(args.size() + 1);
    argument(name);
    for (const auto& arg : args) {
      argument(arg);
    }
    ++m_count;
  }
  const std::string& text() const { return m_text; }
  std::size_t count() const { return m_count; }

private:
  template <typename It> void add(It begin, It end, std::size_t n) {
    m_text += '*';
    number(n);
    for (It it = begin; it != end; ++it) {
      argument(*it);
    }
    ++m_count;
  }

  void argument(std::string_view arg) {
    m_text += '$';
    number(arg.size());
    m_text.append(arg);
    m_text += "\r\n";
  }

  // The digits and their CRLF go in with one append: GCC 12 at -O3 takes an append of a literal
  // after an append of a local buffer for an overlapping copy (-Wrestrict, a false positive).
  void number(std::size_t n) {
    char digits[24];
    char* end = std::to_chars(digits, digits + sizeof digits - 2, n).ptr;
    *end++ = '\r';
    *end++ = '\n';
    m_text.append(digits, static_cast<std::size_t>(end - digits));
  }

  std::string m_text;
  std::size_t m_count = 0;
};

std::string_view text_of(const redisReply& reply) { return {reply.str, reply.len}; }

class Connection {
public:
  explicit Connection(const RedisSettings& settings) : m_settings(settings) {
    timeval tv = to_timeval(settings.timeout_ms);
    const auto& uri = settings.uri;
    m_ctx.reset(uri.unix_path.empty() ? redisConnectWithTimeout(uri.host.c_str(), uri.port, tv)
                                      : redisConnectUnixWithTimeout(uri.unix_path.c_str(), tv));
    if (!m_ctx) {
      throw UnreachableError(fmt::format("cannot reach Redis at {} (out of memory)", where()));
    }
    if (m_ctx->err) {
      fail("connect");
    }
    if (redisSetTimeout(m_ctx.get(), tv) != REDIS_OK) {
      fail("set timeout");
    }
    if (uri.password) {
      std::vector<std::string> auth{"AUTH"};
      if (!uri.user.empty()) {
        auth.push_back(uri.user);
      }
      auth.push_back(*uri.password);
      Reply reply = command(auth);
      if (reply->type == REDIS_REPLY_ERROR) {
        throw UnreachableError(fmt::format("Redis at {} refused the credentials ({}); check the user and password "
                                           "in --store",
                                           where(), std::string(reply->str, reply->len)));
      }
    }
    if (uri.db != 0) {
      Reply reply = command({"SELECT", std::to_string(uri.db)});
      if (reply->type == REDIS_REPLY_ERROR) {
        throw UnreachableError(fmt::format("Redis at {} refused SELECT {} ({}); check the database in --store", where(),
                                           uri.db, std::string(reply->str, reply->len)));
      }
    }
  }

  std::string where() const {
    const auto& uri = m_settings.uri;
    return uri.unix_path.empty() ? fmt::format("{}:{}", uri.host, uri.port) : uri.unix_path;
  }

  [[noreturn]] void fail(std::string_view during) {
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
    throw UnreachableError(fmt::format("cannot reach Redis at {} during {} ({}); check --store and that the server "
                                       "is up, or raise --timeout",
                                       where(), during, cause));
  }

  Reply command(const std::vector<std::string>& args) {
    CommandBuffer one;
    one.add(args);
    send(one);
    return read("command");
  }

  // Queues a batch; its replies are read in order with read().
  void send(const CommandBuffer& commands) {
    if (redisAppendFormattedCommand(m_ctx.get(), commands.text().data(), commands.text().size()) != REDIS_OK) {
      fail("a pipelined write");
    }
  }

  Reply read(std::string_view during) {
    void* raw = nullptr;
    if (redisGetReply(m_ctx.get(), &raw) != REDIS_OK || !raw) {
      fail(during);
    }
    Reply reply(static_cast<redisReply*>(raw));
    if (reply->type == REDIS_REPLY_ERROR && std::string_view(reply->str, reply->len).starts_with("LOADING")) {
      throw UnreachableError(
          fmt::format("Redis at {} is loading its dataset into memory; try again when it is done", where()));
    }
    return reply;
  }

  // A PTTL for each key and one MGET for all their values, in one round trip: one command a key, not
  // two (PTTL says whether the key exists and for how long; the value only matters for claim
  // markers, and a value longer than k_value_prefix bytes is cut there).
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
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
      Reply ttl = read("a lookup");
      if (ttl->type == REDIS_REPLY_ERROR) {
        throw UnreachableError(
            fmt::format("Redis at {} answered PTTL with an error ({})", where(), std::string(ttl->str, ttl->len)));
      }
      long long ms = ttl->type == REDIS_REPLY_INTEGER ? ttl->integer : -2;
      if (ms == -2) {
        continue; // absent
      }
      out[i].kind = core::RecordState::Kind::Present;
      if (ms >= 0) {
        out[i].pttl_ms = ms;
      }
    }
    Reply mget = read("a lookup");
    if (mget->type != REDIS_REPLY_ARRAY || mget->elements != keys.size()) {
      throw UnreachableError(fmt::format("Redis at {} answered MGET of {} keys with {}", where(), keys.size(),
                                         mget->type == REDIS_REPLY_ERROR ? std::string(mget->str, mget->len)
                                                                         : std::string("something else")));
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

private:
  const RedisSettings& m_settings;
  Context m_ctx;
  CommandBuffer m_buffer;
};

class RedisStore final : public core::DedupStore {
public:
  explicit RedisStore(const RedisSettings& settings) : m_settings(settings), m_connection(m_settings) {}

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    m_connection.lookup(keys, out, m_values);
  }

  std::string kind() const override { return "redis"; }

private:
  RedisSettings m_settings;
  Connection m_connection;
  std::vector<std::string> m_values;
};

class RedisReplayPlacement final : public core::ReplayPlacement {
public:
  RedisReplayPlacement(const RedisSettings& settings, const core::Span& ttl, std::int64_t lease_ms,
                       std::vector<std::string> markers, ClaimForm form)
      : m_settings(settings), m_connection(m_settings), m_ttl(ttl), m_lease(std::to_string(lease_ms)),
        m_markers(std::move(markers)), m_set_get(form == ClaimForm::Auto) {}

  std::string kind() const override { return "redis"; }

  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override {
    check_stop();
    m_connection.lookup(keys, m_states, m_values);
    out.clear();
    for (const auto& state : m_states) {
      out.push_back(core::plan_claim(state, m_markers));
    }
  }

  void claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<core::Claim>& out) override {
    check_stop();
    std::string mine = "processing:" + run_id;
    if (m_set_get && claim_with_set_get(keys, mine, out)) {
      return;
    }
    m_set_get = false;
    m_buffer.clear();
    for (const auto& key : keys) {
      m_buffer.add({"SET", key, mine, "NX", "PX", m_lease});
      m_buffer.add({"GET", key});
    }
    m_connection.send(m_buffer);
    out.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      Reply set = m_connection.read("a claim");
      Reply get = m_connection.read("a claim");
      if (set->type == REDIS_REPLY_ERROR) {
        refused("SET NX", *set);
      }
      if (set->type == REDIS_REPLY_STATUS) {
        out.push_back(core::Claim::Claimed);
      } else {
        out.push_back(held(*get, mine, "GET"));
      }
    }
  }

  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims,
              const std::vector<bool>& delivered) override {
    auto ttl_ms = m_ttl.finite_ms();
    bool expires = ttl_ms.has_value();
    std::string ttl = expires ? std::to_string(std::max<std::int64_t>(1, *ttl_ms)) : "";
    m_buffer.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (claims[i] != core::Claim::Claimed && claims[i] != core::Claim::OwnStale) {
        continue;
      }
      if (!delivered[i]) {
        m_buffer.add({"DEL", keys[i]});
      } else if (expires) {
        m_buffer.add({"SET", keys[i], "done", "PX", ttl});
      } else {
        m_buffer.add({"SET", keys[i], "done"});
      }
    }
    if (m_buffer.count() == 0) {
      return;
    }
    m_connection.send(m_buffer);
    for (std::size_t i = 0; i < m_buffer.count(); ++i) {
      Reply reply = m_connection.read("settling claims");
      if (reply->type == REDIS_REPLY_ERROR) {
        throw UnreachableError(
            fmt::format("Redis at {} refused to settle a claim ({})", m_connection.where(), text_of(*reply)));
      }
    }
  }

private:
  // SET key mine NX PX lease GET per key. False when the server refuses the form (before Redis 7:
  // a syntax error, and none of the batch ran); `out` is then to be filled by the pair.
  bool claim_with_set_get(const std::vector<std::string>& keys, const std::string& mine,
                          std::vector<core::Claim>& out) {
    m_buffer.clear();
    for (const auto& key : keys) {
      m_buffer.add({"SET", key, mine, "NX", "PX", m_lease, "GET"});
    }
    m_connection.send(m_buffer);
    out.clear();
    std::size_t syntax_errors = 0;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      Reply reply = m_connection.read("a claim");
      if (reply->type == REDIS_REPLY_ERROR && text_of(*reply).find("syntax error") != std::string_view::npos) {
        ++syntax_errors;
        continue;
      }
      if (syntax_errors > 0) {
        continue; // read to the end; refused below
      }
      out.push_back(reply->type == REDIS_REPLY_NIL ? core::Claim::Claimed : held(*reply, mine, "SET NX GET"));
    }
    if (syntax_errors == 0) {
      return true;
    }
    if (syntax_errors != keys.size()) {
      throw UnreachableError(fmt::format("Redis at {} refused only some of a batch of SET … NX … GET as a syntax error",
                                         m_connection.where()));
    }
    return false;
  }

  // What a key that was there holds: this run's claim, another's, or a record (a value that is not
  // a claim, or a key of another type).
  core::Claim held(const redisReply& value, std::string_view mine, std::string_view command) const {
    if (value.type == REDIS_REPLY_ERROR) {
      if (text_of(value).starts_with("WRONGTYPE")) {
        return core::Claim::Done;
      }
      refused(command, value);
    }
    std::string_view text = value.type == REDIS_REPLY_STRING ? text_of(value) : std::string_view();
    if (text == mine) {
      return core::Claim::OwnStale;
    }
    return core::is_in_progress(text, m_markers) ? core::Claim::HeldByOther : core::Claim::Done;
  }

  [[noreturn]] void refused(std::string_view command, const redisReply& reply) const {
    throw UnreachableError(fmt::format("Redis at {} refused {} ({})", m_connection.where(), command, text_of(reply)));
  }

  void check_stop() const {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
  }

  RedisSettings m_settings;
  Connection m_connection;
  core::Span m_ttl;
  std::string m_lease;
  std::vector<std::string> m_markers;
  bool m_set_get; // claims with SET … NX PX … GET until the server refuses it
  CommandBuffer m_buffer;
  std::vector<core::RecordState> m_states;
  std::vector<std::string> m_values;
};

} // namespace

std::unique_ptr<core::ReplayPlacement> open_replay_placement(const RedisSettings& settings, const core::Span& ttl,
                                                             std::int64_t lease_ms,
                                                             std::vector<std::string> in_progress_values,
                                                             ClaimForm form) {
  return std::make_unique<RedisReplayPlacement>(settings, ttl, lease_ms, std::move(in_progress_values), form);
}

std::unique_ptr<core::DedupStore> open_store(const RedisSettings& settings) {
  return std::make_unique<RedisStore>(settings);
}

std::int64_t scan_records(const RedisSettings& settings, const std::string& match,
                          const std::function<void(const SnapshotRecord&)>& each,
                          const std::function<void(std::int64_t)>& progress) {
  Connection connection(settings);
  std::int64_t started = wall_ms();
  std::string cursor = "0";
  std::int64_t seen = 0;
  std::vector<core::RecordState> states;
  std::vector<std::string> values;
  do {
    if (settings.stop && settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    Reply reply = connection.command({"SCAN", cursor, "MATCH", match, "COUNT", k_scan_count});
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
      throw UnreachableError(fmt::format("Redis at {} answered SCAN unexpectedly", connection.where()));
    }
    cursor.assign(reply->element[0]->str, reply->element[0]->len);
    std::vector<std::string> keys;
    for (std::size_t i = 0; i < reply->element[1]->elements; ++i) {
      const redisReply* key = reply->element[1]->element[i];
      keys.emplace_back(key->str, key->len);
    }
    std::int64_t read_at = wall_ms();
    connection.lookup(keys, states, values);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (states[i].kind == core::RecordState::Kind::Absent) {
        continue; // expired between SCAN and PTTL
      }
      SnapshotRecord record{keys[i], states[i].pttl_ms, values[i]};
      if (record.pttl_ms) {
        *record.pttl_ms += read_at - started; // remaining TTL as of the snapshot's time
      }
      each(record);
    }
    seen += static_cast<std::int64_t>(keys.size());
    if (progress) {
      progress(seen);
    }
  } while (cursor != "0");
  return started;
}

ServerFacts inspect_server(const RedisSettings& settings, const std::string& match, std::int64_t sample) {
  Connection connection(settings);
  ServerFacts facts;
  auto config = [&](const std::string& name) -> std::optional<std::string> {
    Reply reply = connection.command({"CONFIG", "GET", name});
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 || reply->element[1]->type != REDIS_REPLY_STRING) {
      return std::nullopt;
    }
    return std::string(reply->element[1]->str, reply->element[1]->len);
  };
  facts.maxmemory_policy = config("maxmemory-policy");
  auto save = config("save");
  auto appendonly = config("appendonly");
  if (save && appendonly) {
    facts.persistence = !save->empty() || *appendonly == "yes";
  }
  std::string cursor = "0";
  std::vector<std::string> keys;
  for (int round = 0; round < 100 && static_cast<std::int64_t>(keys.size()) < sample; ++round) {
    Reply reply = connection.command({"SCAN", cursor, "MATCH", match, "COUNT", k_scan_count});
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
      break;
    }
    cursor.assign(reply->element[0]->str, reply->element[0]->len);
    for (std::size_t i = 0; i < reply->element[1]->elements && static_cast<std::int64_t>(keys.size()) < sample; ++i) {
      keys.emplace_back(reply->element[1]->element[i]->str, reply->element[1]->element[i]->len);
    }
    if (cursor == "0") {
      break;
    }
  }
  std::vector<core::RecordState> states;
  std::vector<std::string> values;
  connection.lookup(keys, states, values);
  for (const auto& state : states) {
    if (state.kind == core::RecordState::Kind::Present) {
      ++facts.sampled_keys;
      facts.sampled_without_expiry += state.pttl_ms ? 0 : 1;
      if (state.pttl_ms) {
        facts.max_pttl_ms = std::max(facts.max_pttl_ms.value_or(0), *state.pttl_ms);
      }
    }
  }
  return facts;
}

} // namespace dedupctl::connectors::redis
