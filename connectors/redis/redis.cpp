#include "connectors/redis/redis.hpp"

#include "core/errors.hpp"

#include <fmt/format.h>
#include <hiredis/hiredis.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <sys/time.h>

namespace dedupctl::connectors::redis {

namespace {

// The first bytes of a value are enough to see claim markers ("processing:<run>").
constexpr const char* k_value_prefix_end = "63";
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
    append(args);
    return read("command");
  }

  void append(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<std::size_t> lengths;
    for (const auto& arg : args) {
      argv.push_back(arg.data());
      lengths.push_back(arg.size());
    }
    append_argv(static_cast<int>(argv.size()), argv.data(), lengths.data());
  }

  void append_argv(int argc, const char** argv, const std::size_t* lengths) {
    if (redisAppendCommandArgv(m_ctx.get(), argc, argv, lengths) != REDIS_OK) {
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

  // PTTL and GETRANGE for each key in one round trip.
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
              std::vector<std::string>& values) {
    static const char* pttl = "PTTL";
    static const char* getrange = "GETRANGE";
    static const char* zero = "0";
    static const std::size_t pttl_len = 4;
    static const std::size_t getrange_len = 8;
    for (const auto& key : keys) {
      const char* a[] = {pttl, key.data()};
      std::size_t al[] = {pttl_len, key.size()};
      append_argv(2, a, al);
      const char* b[] = {getrange, key.data(), zero, k_value_prefix_end};
      std::size_t bl[] = {getrange_len, key.size(), 1, 2};
      append_argv(4, b, bl);
    }
    out.assign(keys.size(), core::RecordState{});
    values.assign(keys.size(), std::string());
    for (std::size_t i = 0; i < keys.size(); ++i) {
      Reply ttl = read("a lookup");
      Reply value = read("a lookup");
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
      if (value->type == REDIS_REPLY_STRING) {
        values[i].assign(value->str, value->len); // not a string (hash, set): present, no marker
      }
    }
    for (std::size_t i = 0; i < keys.size(); ++i) {
      out[i].value = values[i];
    }
  }

private:
  const RedisSettings& m_settings;
  Context m_ctx;
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
                       std::vector<std::string> markers)
      : m_settings(settings), m_connection(m_settings), m_ttl(ttl), m_lease(std::to_string(lease_ms)),
        m_markers(std::move(markers)) {}

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
    for (const auto& key : keys) {
      const char* set[] = {"SET", key.data(), mine.data(), "NX", "PX", m_lease.data()};
      std::size_t set_len[] = {3, key.size(), mine.size(), 2, 2, m_lease.size()};
      m_connection.append_argv(6, set, set_len);
      const char* get[] = {"GET", key.data()};
      std::size_t get_len[] = {3, key.size()};
      m_connection.append_argv(2, get, get_len);
    }
    out.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      Reply set = m_connection.read("a claim");
      Reply get = m_connection.read("a claim");
      if (set->type == REDIS_REPLY_ERROR) {
        throw UnreachableError(
            fmt::format("Redis at {} refused SET NX ({})", m_connection.where(), std::string(set->str, set->len)));
      }
      if (set->type == REDIS_REPLY_STATUS) {
        out.push_back(core::Claim::Claimed);
        continue;
      }
      std::string_view value = get->type == REDIS_REPLY_STRING ? std::string_view(get->str, get->len) : "";
      if (value == mine) {
        out.push_back(core::Claim::OwnStale);
      } else if (core::is_in_progress(value, m_markers)) {
        out.push_back(core::Claim::HeldByOther);
      } else {
        out.push_back(core::Claim::Done);
      }
    }
  }

  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims,
              const std::vector<bool>& delivered) override {
    std::size_t sent = 0;
    bool expires = m_ttl.ms && !m_ttl.infinite;
    std::string ttl = expires ? std::to_string(std::max<std::int64_t>(1, *m_ttl.ms)) : "";
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (claims[i] != core::Claim::Claimed && claims[i] != core::Claim::OwnStale) {
        continue;
      }
      const std::string& key = keys[i];
      if (!delivered[i]) {
        const char* del[] = {"DEL", key.data()};
        std::size_t del_len[] = {3, key.size()};
        m_connection.append_argv(2, del, del_len);
      } else {
        const char* set[] = {"SET", key.data(), "done", "PX", ttl.data()};
        std::size_t set_len[] = {3, key.size(), 4, 2, ttl.size()};
        m_connection.append_argv(expires ? 5 : 3, set, set_len);
      }
      ++sent;
    }
    for (std::size_t i = 0; i < sent; ++i) {
      Reply reply = m_connection.read("settling claims");
      if (reply->type == REDIS_REPLY_ERROR) {
        throw UnreachableError(fmt::format("Redis at {} refused to settle a claim ({})", m_connection.where(),
                                           std::string(reply->str, reply->len)));
      }
    }
  }

private:
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
  std::vector<core::RecordState> m_states;
  std::vector<std::string> m_values;
};

} // namespace

std::unique_ptr<core::ReplayPlacement> open_replay_placement(const RedisSettings& settings, const core::Span& ttl,
                                                             std::int64_t lease_ms,
                                                             std::vector<std::string> in_progress_values) {
  return std::make_unique<RedisReplayPlacement>(settings, ttl, lease_ms, std::move(in_progress_values));
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
