#include "connectors/redis/redis.hpp"

#include "connectors/redis/connection.hpp"
#include "connectors/redis/nodes.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>

namespace dedupctl::connectors::redis {

namespace {

constexpr const char* k_scan_count = "1000";

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A lookup of one key in a cluster, where an MGET across slots is refused: PTTL (unless the record
// carries its expiration) and GET.
void add_lookup(CommandBuffer& buffer, const std::string& key, bool with_ttl) {
  if (with_ttl) {
    buffer.add({"PTTL", key});
  }
  buffer.add({"GET", key});
}

// How much of a value a lookup keeps: a claim marker's first bytes, or all of a JSON record (its
// status may come after a kilobyte of `data`).
std::size_t value_limit(const core::RecordLayout& layout) {
  return layout.value == core::RecordValue::Json ? std::string::npos : k_value_prefix;
}

void read_lookup(std::span<Reply> replies, core::RecordState& state, std::string& value, std::string_view where,
                 std::size_t limit) {
  bool with_ttl = replies.size() == 2;
  if (with_ttl) {
    read_pttl(*replies[0], state, where);
  } else {
    state = core::RecordState{};
  }
  value.clear();
  const redisReply& get = *replies.back();
  if (get.type == REDIS_REPLY_ERROR && !text_of(get).starts_with("WRONGTYPE")) {
    throw UnreachableError(fmt::format("Redis at {} answered GET with an error ({})", where, text_of(get)));
  }
  // A key of another type (hash, set) is present without a marker (without PTTL: absent, as a
  // library's GET finds no record there either).
  if (!with_ttl && get.type == REDIS_REPLY_STRING) {
    state.kind = core::RecordState::Kind::Present;
  }
  if (state.kind == core::RecordState::Kind::Present && get.type == REDIS_REPLY_STRING) {
    keep_value(value, get.str, std::min<std::size_t>(get.len, limit), limit == std::string::npos);
  }
}

// The members (fields) of a one-key layout's collection: PTTL of the collection, then HMGET,
// SMISMEMBER or ZMSCORE of every k_lookup_chunk ids, one round trip to the master of its slot; never
// a read of the whole collection. A member's record lives as long as the collection does.
void lookup_members(Nodes& nodes, const core::RecordLayout& layout, const std::string& collection,
                    const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
                    std::vector<std::string>& values) {
  out.assign(keys.size(), core::RecordState{});
  values.assign(keys.size(), std::string());
  if (keys.empty()) {
    return;
  }
  const char* command = layout.shape == core::RecordShape::HashField   ? "HMGET"
                        : layout.shape == core::RecordShape::SetMember ? "SMISMEMBER"
                                                                       : "ZMSCORE";
  std::size_t chunks = (keys.size() + k_lookup_chunk - 1) / k_lookup_chunk;
  std::vector<std::string> args;
  auto write = [&](std::size_t, CommandBuffer& buffer) {
    buffer.add({"PTTL", collection});
    for (std::size_t begin = 0; begin < keys.size(); begin += k_lookup_chunk) {
      std::size_t end = std::min(keys.size(), begin + k_lookup_chunk);
      args.assign(1, collection);
      args.insert(args.end(), keys.begin() + static_cast<std::ptrdiff_t>(begin),
                  keys.begin() + static_cast<std::ptrdiff_t>(end));
      buffer.add_command(command, args);
    }
  };
  auto read = [&](std::size_t, std::span<Reply> replies) {
    core::RecordState whole;
    read_pttl(*replies[0], whole, "the collection");
    for (std::size_t c = 0; c < chunks; ++c) {
      std::size_t begin = c * k_lookup_chunk;
      std::size_t end = std::min(keys.size(), begin + k_lookup_chunk);
      const redisReply& reply = *replies[1 + c];
      if (reply.type == REDIS_REPLY_ERROR && text_of(reply).starts_with("WRONGTYPE")) {
        throw UsageError(fmt::format("--collection: the key holds another type than --layout {} keeps its records in "
                                     "({} answered {})",
                                     layout.name, command, text_of(reply)));
      }
      if (reply.type != REDIS_REPLY_ARRAY || reply.elements != end - begin) {
        throw UnreachableError(
            fmt::format("Redis answered {} of {} ids with {}", command, end - begin,
                        reply.type == REDIS_REPLY_ERROR ? std::string(text_of(reply)) : std::string("something else")));
      }
      for (std::size_t i = begin; i < end; ++i) {
        const redisReply& member = *reply.element[i - begin];
        bool present = member.type == REDIS_REPLY_INTEGER
                           ? member.integer == 1
                           : member.type == REDIS_REPLY_STRING || member.type == REDIS_REPLY_DOUBLE;
        if (present) {
          out[i] = whole;
          if (member.type != REDIS_REPLY_INTEGER) {
            values[i].assign(member.str, member.len); // a time or a score: no JSON to parse
          }
        }
      }
    }
  };
  nodes.exchange(std::vector<std::string>{collection}, 1 + chunks, write, read, "a lookup");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out[i].value = values[i];
  }
}

// What the layout reads from each present record's value (`values`, kept by keep_value).
void read_values(const core::RecordLayout& layout, std::vector<core::RecordState>& out,
                 const std::vector<std::string>& values) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].kind == core::RecordState::Kind::Present) {
      core::read_record_value(layout, out[i].value, out[i], spare_of(values[i]));
    }
  }
}

// Whether a lookup may leave PTTL out: a JSON layout whose records carry their expiration, which
// the library reads and from which it sets the key's TTL too (Powertools: SET … EX, the same
// seconds). One PTTL a key cost Redis as much CPU as the MGET of a 1 KiB record (tests/bench/layouts).
bool ttl_in_value(const core::RecordLayout& layout) {
  return layout.value == core::RecordValue::Json && !layout.json.expiration.empty();
}

// The PTTL of each present record whose value named no expiration after all (not JSON, no such
// field): a record the library will take over or that lives as long as its key.
void read_missing_ttls(Nodes& nodes, const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  std::vector<std::string> asked;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (out[i].kind == core::RecordState::Kind::Present && !out[i].expires_at_ms) {
      asked.push_back(keys[i]);
      at.push_back(i);
    }
  }
  if (asked.empty()) {
    return;
  }
  nodes.exchange(
      asked, 1,
      [&](std::size_t i, CommandBuffer& buffer) {
        buffer.add({"PTTL", asked[i]});
      },
      [&](std::size_t i, std::span<Reply> replies) {
        core::RecordState now;
        read_pttl(*replies[0], now, "a lookup");
        out[at[i]].kind = now.kind;
        out[at[i]].pttl_ms = now.pttl_ms;
      },
      "a lookup");
}

// Every key's state and value (its first bytes, or all of a JSON record): one MGET of the batch on
// one server, PTTL + GET a key routed by slot in a cluster (no PTTL where the record carries its
// expiration); a one-key layout's members as above. `whole_values`: every value whole (a repair compares
// them before it deletes).
void lookup_all(Nodes& nodes, const RedisSettings& settings, const std::vector<std::string>& keys,
                std::vector<core::RecordState>& out, std::vector<std::string>& values, bool whole_values = false) {
  const auto& layout = settings.layout;
  std::size_t limit = whole_values ? std::string::npos : value_limit(layout);
  bool with_ttl = !ttl_in_value(layout);
  bool read_already = false; // the values read as they arrived
  if (core::one_key(layout)) {
    lookup_members(nodes, layout, settings.collection, keys, out, values);
  } else if (!nodes.clustered()) {
    // Each value read as it arrives, in place (read_values below would find it out of the cache).
    nodes.on_server([&](Connection& server) {
      server.lookup(keys, out, values, limit, with_ttl, core::reads_value(layout) ? &layout : nullptr);
    });
    read_already = true;
  } else {
    out.assign(keys.size(), core::RecordState{});
    values.assign(keys.size(), std::string());
    nodes.exchange(
        keys, with_ttl ? 2 : 1, [&](std::size_t i, CommandBuffer& buffer) { add_lookup(buffer, keys[i], with_ttl); },
        [&](std::size_t i, std::span<Reply> replies) { read_lookup(replies, out[i], values[i], "the cluster", limit); },
        "a lookup");
    for (std::size_t i = 0; i < keys.size(); ++i) {
      out[i].value = values[i];
    }
  }
  if (core::reads_value(layout) && !read_already) {
    read_values(layout, out, values);
  }
  if (!with_ttl) {
    read_missing_ttls(nodes, keys, out);
  }
}

class RedisStore final : public core::DedupStore {
public:
  explicit RedisStore(const RedisSettings& settings) : m_settings(settings), m_nodes(m_settings) {}

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    lookup_all(m_nodes, m_settings, keys, out, m_values);
  }

  std::string kind() const override { return "redis"; }
  std::string topology() const override { return m_nodes.topology(); }

  std::optional<core::KeyspaceProbe> probe() override {
    core::KeyspaceProbe probe;
    for (Connection* master : m_nodes.masters()) {
      for (const char* section : {"server", "replication", "stats"}) {
        Reply info = master->command({"INFO", section});
        if (info->type != REDIS_REPLY_STRING && info->type != REDIS_REPLY_VERB) {
          throw UnreachableError(fmt::format("Redis at {} answered INFO {} with an error ({})", master->node().text(),
                                             section, text_of(*info)));
        }
        for (auto line : core::split(text_of(*info), '\n')) {
          line = core::trim(line);
          auto field = [&](std::string_view name) -> std::optional<std::string_view> {
            if (line.size() > name.size() && line.starts_with(name) && line[name.size()] == ':') {
              return line.substr(name.size() + 1);
            }
            return std::nullopt;
          };
          std::int64_t n = 0;
          if (auto v = field("run_id")) {
            probe.incarnation += std::string(*v) + "/";
          } else if (auto role = field("role")) {
            probe.incarnation += std::string(*role) + ";";
          } else if (auto expired = field("expired_keys"); expired && core::parse_whole(*expired, n)) {
            probe.expired += n;
          } else if (auto evicted = field("evicted_keys"); evicted && core::parse_whole(*evicted, n)) {
            probe.evicted += n;
          }
        }
      }
      Reply size = master->command({"DBSIZE"});
      if (size->type == REDIS_REPLY_INTEGER) {
        probe.keys += size->integer;
      }
    }
    return probe;
  }

private:
  RedisSettings m_settings;
  Nodes m_nodes;
  std::vector<std::string> m_values;
};

class RedisReplayPlacement final : public core::ReplayPlacement {
public:
  RedisReplayPlacement(const RedisSettings& settings, const core::Span& ttl, std::int64_t lease_ms,
                       std::vector<std::string> markers, ClaimForm form, std::function<std::int64_t()> now_ms)
      : m_settings(settings), m_nodes(m_settings), m_ttl(ttl), m_lease_ms(lease_ms), m_lease(std::to_string(lease_ms)),
        m_markers(std::move(markers)), m_set_get(form == ClaimForm::Auto), m_now(std::move(now_ms)),
        m_json(settings.layout.value == core::RecordValue::Json),
        m_hash(settings.layout.shape == core::RecordShape::HashField) {
    if (!m_now) {
      m_now = [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      };
    }
  }

  std::string kind() const override { return "redis"; }
  // Settles go through a connection of their own (one a master), opened at the first settle.
  bool settles_apart() const override { return true; }
  // Four times the default: a batch waits for its claims, its deliveries and its settle, and the
  // reading goes on meanwhile; Redis and this process share the cores, and a deeper queue rides out
  // the moments one of them is starved (tests/bench/replay/run, 1M events: 6.07 -> 5.57 s mean of
  // six runs with sixteen and the settles apart, RSS 269 -> 297 MB; with jemalloc, sixteen -> 32,
  // twice three interleaved runs each: 4.95 -> 4.76 s and 5.07 -> 4.75 s, RSS 260 -> 325 MB; 64:
  // 4.59 s, 410 MB; twice the --batch at sixteen, the same events in flight, changed nothing).
  std::size_t max_in_flight() const override { return 32; }

  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override {
    check_stop();
    lookup_all(m_nodes, m_settings, keys, m_states, m_values);
    out.clear();
    std::int64_t now = m_now();
    for (const auto& state : m_states) {
      out.push_back(core::judge_record(m_settings.layout, state, m_markers, now));
    }
  }

  // Claims by slot: on one server one pipeline, in a cluster one per master, all at once.
  void claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<core::Claim>& out) override {
    check_stop();
    m_run_id = run_id;
    m_claim_now = m_now();
    // What a claim writes: this run's marker, or the library's in-progress record.
    std::string mine =
        m_json ? core::json_claim_record(m_settings.layout, m_claim_now + ttl_ms(), m_claim_now + m_lease_ms, run_id)
               : "processing:" + run_id;
    std::string px = m_json ? std::to_string(ttl_ms()) : m_lease;
    m_take_over.clear();
    if (m_hash) {
      claim_fields(keys, mine, out);
      return;
    }
    if (!(m_set_get && claim_with_set_get(keys, mine, px, out))) {
      m_set_get = false;
      out.assign(keys.size(), core::Claim::Claimed);
      m_nodes.exchange(
          keys, 2,
          [&](std::size_t i, CommandBuffer& buffer) {
            buffer.add({"SET", keys[i], mine, "NX", "PX", px});
            buffer.add({"GET", keys[i]});
          },
          [&](std::size_t i, std::span<Reply> replies) {
            if (replies[0]->type == REDIS_REPLY_ERROR) {
              refused("SET NX", *replies[0]);
            }
            out[i] = replies[0]->type == REDIS_REPLY_STATUS ? core::Claim::Claimed : held(i, *replies[1], mine, "GET");
          },
          "a claim");
    }
    if (!m_take_over.empty()) {
      take_over(keys, mine, out);
    }
  }

  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims,
              const std::vector<bool>& delivered) override {
    auto ttl_ms = m_ttl.finite_ms();
    bool expires = ttl_ms.has_value();
    std::string ttl = expires ? std::to_string(std::max<std::int64_t>(1, *ttl_ms)) : "";
    // What a delivered event's record says: "done", or the library's completed record.
    std::string done = m_json ? core::json_completed_record(m_settings.layout, m_now() + this->ttl_ms()) : "done";
    m_settled.clear();
    m_settle_delivered.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (claims[i] == core::Claim::Claimed || claims[i] == core::Claim::OwnStale) {
        m_settled.push_back(keys[i]);
        m_settle_delivered.push_back(delivered[i]);
      }
    }
    if (!m_settle_nodes) {
      m_settle_nodes.emplace(m_settings);
      // The sentinels may have named another master since the claims' connection was opened.
      if (m_settle_nodes->topology() != m_nodes.topology()) {
        throw UnreachableError(fmt::format("the Redis placement changed during the run: claimed on {}, settling on {}",
                                           m_nodes.topology(), m_settle_nodes->topology()));
      }
    }
    if (m_hash) {
      settle_fields(done_time());
      return;
    }
    m_settle_nodes->exchange(
        m_settled, 1,
        [&](std::size_t i, CommandBuffer& buffer) {
          if (!m_settle_delivered[i]) {
            buffer.add({"DEL", m_settled[i]});
          } else if (expires) {
            buffer.add({"SET", m_settled[i], done, "PX", ttl});
          } else {
            buffer.add({"SET", m_settled[i], done});
          }
        },
        [&](std::size_t, std::span<Reply> replies) {
          if (replies[0]->type == REDIS_REPLY_ERROR) {
            throw UnreachableError(fmt::format("Redis refused to settle a claim ({})", text_of(*replies[0])));
          }
        },
        "settling claims");
  }

private:
  std::string done_time() const { return std::to_string(m_now()); }

  // A hash's fields (spring-hash), all in the one key: HSETNX of this run's marker, then HGET, a
  // pair a field; the marker is the claim until the settle writes the time (Spring's value).
  void claim_fields(const std::vector<std::string>& fields, const std::string& mine, std::vector<core::Claim>& out) {
    const std::string& hash = m_settings.collection;
    m_claim_routes.assign(fields.size(), hash);
    out.assign(fields.size(), core::Claim::Claimed);
    m_nodes.exchange(
        m_claim_routes, 2,
        [&](std::size_t i, CommandBuffer& buffer) {
          buffer.add({"HSETNX", hash, fields[i], mine});
          buffer.add({"HGET", hash, fields[i]});
        },
        [&](std::size_t i, std::span<Reply> replies) {
          if (replies[0]->type == REDIS_REPLY_ERROR) {
            refused("HSETNX", *replies[0]);
          }
          out[i] = replies[0]->integer == 1 ? core::Claim::Claimed : held(i, *replies[1], mine, "HGET");
        },
        "a claim");
  }

  // The settled fields: the time in ms where delivered (what Spring's selector writes), HDEL where not.
  void settle_fields(const std::string& time) {
    const std::string& hash = m_settings.collection;
    m_settle_routes.assign(m_settled.size(), hash);
    m_settle_nodes->exchange(
        m_settle_routes, 1,
        [&](std::size_t i, CommandBuffer& buffer) {
          if (m_settle_delivered[i]) {
            buffer.add({"HSET", hash, m_settled[i], time});
          } else {
            buffer.add({"HDEL", hash, m_settled[i]});
          }
        },
        [&](std::size_t, std::span<Reply> replies) {
          if (replies[0]->type == REDIS_REPLY_ERROR) {
            throw UnreachableError(fmt::format("Redis refused to settle a claim ({})", text_of(*replies[0])));
          }
        },
        "settling claims");
  }

  // A JSON layout's records expire with the TTL (checked finite before a run executes).
  std::int64_t ttl_ms() const { return std::max<std::int64_t>(1, m_ttl.finite_ms().value_or(1)); }

  // SET key mine NX PX px GET per key. False when the server refuses the form (before Redis 7:
  // a syntax error, and none of the batch ran); `out` is then to be filled by the pair.
  bool claim_with_set_get(const std::vector<std::string>& keys, const std::string& mine, const std::string& px,
                          std::vector<core::Claim>& out) {
    out.assign(keys.size(), core::Claim::Claimed);
    std::size_t syntax_errors = 0;
    m_nodes.exchange(
        keys, 1,
        [&](std::size_t i, CommandBuffer& buffer) {
          buffer.add({"SET", keys[i], mine, "NX", "PX", px, "GET"});
        },
        [&](std::size_t i, std::span<Reply> replies) {
          const redisReply& reply = *replies[0];
          if (reply.type == REDIS_REPLY_ERROR && text_of(reply).find("syntax error") != std::string_view::npos) {
            ++syntax_errors;
            return;
          }
          if (syntax_errors == 0) {
            out[i] = reply.type == REDIS_REPLY_NIL ? core::Claim::Claimed : held(i, reply, mine, "SET NX GET");
          }
        },
        "a claim");
    if (syntax_errors == 0) {
      return true;
    }
    m_take_over.clear();
    if (syntax_errors != keys.size()) {
      throw UnreachableError("Redis refused only some of a batch of SET … NX … GET as a syntax error");
    }
    return false;
  }

  // What key i, which was there, holds: this run's claim, another's, or a record (a value that is not
  // a claim, or a key of another type). A JSON layout's record is judged as its library judges it;
  // one the library would take over is listed in m_take_over (and answered HeldByOther until then).
  core::Claim held(std::size_t i, const redisReply& value, std::string_view mine, std::string_view command) {
    if (value.type == REDIS_REPLY_ERROR) {
      if (text_of(value).starts_with("WRONGTYPE")) {
        return core::Claim::Done;
      }
      refused(command, value);
    }
    std::string_view text = value.type == REDIS_REPLY_STRING ? text_of(value) : std::string_view();
    if (m_json) {
      core::RecordState state = core::present_record(std::nullopt, text);
      core::read_record_value(m_settings.layout, text, state);
      core::Claim found = core::claim_found(state, core::is_own_json_claim(text, m_run_id), m_claim_now);
      if (found == core::Claim::Claimed) {
        m_take_over.push_back(i);
        return core::Claim::HeldByOther;
      }
      return found;
    }
    if (text == mine) {
      return core::Claim::OwnStale;
    }
    return core::is_in_progress(text, m_markers) ? core::Claim::HeldByOther : core::Claim::Done;
  }

  // The library's way with a record it takes over (an orphan, an expired record): KEY:lock with
  // SET NX EX min(10 s, ttl); whoever holds it overwrites the record (SET PX ttl, no NX). A lock
  // held by another (a consumer taking the same record over) leaves the key to it.
  void take_over(const std::vector<std::string>& keys, const std::string& mine, std::vector<core::Claim>& out) {
    if (m_settings.layout.not_a_record_suffix.empty()) {
      return; // no lock of the library's to take (the generic json layout): left to the library
    }
    m_locks.clear();
    for (std::size_t i : m_take_over) {
      m_locks.push_back(keys[i] + m_settings.layout.not_a_record_suffix);
    }
    std::string lock_seconds = std::to_string(std::clamp<std::int64_t>(ttl_ms() / 1000, 1, 10));
    m_locked.assign(m_locks.size(), false);
    m_nodes.exchange(
        m_locks, 1,
        [&](std::size_t j, CommandBuffer& buffer) {
          buffer.add({"SET", m_locks[j], "True", "EX", lock_seconds, "NX"});
        },
        [&](std::size_t j, std::span<Reply> replies) {
          if (replies[0]->type == REDIS_REPLY_ERROR) {
            refused("SET KEY:lock NX", *replies[0]);
          }
          m_locked[j] = replies[0]->type == REDIS_REPLY_STATUS;
        },
        "a claim's lock");
    m_locks.clear();
    std::vector<std::size_t> taken;
    for (std::size_t j = 0; j < m_take_over.size(); ++j) {
      if (m_locked[j]) {
        m_locks.push_back(keys[m_take_over[j]]);
        taken.push_back(m_take_over[j]);
      }
    }
    std::string px = std::to_string(ttl_ms());
    m_nodes.exchange(
        m_locks, 1,
        [&](std::size_t j, CommandBuffer& buffer) {
          buffer.add({"SET", m_locks[j], mine, "PX", px});
        },
        [&](std::size_t j, std::span<Reply> replies) {
          if (replies[0]->type == REDIS_REPLY_ERROR) {
            refused("SET", *replies[0]);
          }
          out[taken[j]] = core::Claim::Claimed;
        },
        "taking a record over");
  }

  [[noreturn]] void refused(std::string_view command, const redisReply& reply) const {
    throw UnreachableError(fmt::format("Redis refused {} ({})", command, text_of(reply)));
  }

  void check_stop() const {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
  }

  RedisSettings m_settings;
  Nodes m_nodes;
  core::Span m_ttl;
  std::int64_t m_lease_ms;
  std::string m_lease;
  std::vector<std::string> m_markers;
  bool m_set_get; // claims with SET … NX PX … GET until the server refuses it
  std::function<std::int64_t()> m_now;
  bool m_json; // the layout keeps a JSON record (Powertools)
  bool m_hash; // the records are fields of one hash (spring-hash): m_settings.collection
  // The hash's name a field, to route each command to its slot: the claims' and the settles' (which
  // run on threads of their own).
  std::vector<std::string> m_claim_routes;
  std::vector<std::string> m_settle_routes;
  std::string m_run_id;
  std::int64_t m_claim_now = 0;
  std::vector<std::size_t> m_take_over; // keys of the batch the library would take over
  std::vector<std::string> m_locks;
  std::vector<bool> m_locked;
  std::vector<core::RecordState> m_states;
  std::vector<std::string> m_values;
  std::optional<Nodes> m_settle_nodes; // settle's, apart from claim's m_nodes
  std::vector<std::string> m_settled;
  std::vector<bool> m_settle_delivered;
};

} // namespace

std::unique_ptr<core::ReplayPlacement> open_replay_placement(const RedisSettings& settings, const core::Span& ttl,
                                                             std::int64_t lease_ms,
                                                             std::vector<std::string> in_progress_values,
                                                             ClaimForm form, std::function<std::int64_t()> now_ms) {
  return std::make_unique<RedisReplayPlacement>(settings, ttl, lease_ms, std::move(in_progress_values), form,
                                                std::move(now_ms));
}

std::unique_ptr<core::DedupStore> open_store(const RedisSettings& settings) {
  return std::make_unique<RedisStore>(settings);
}

namespace {

// Deletes a key only while it holds exactly the value read: GET and DEL in one step on the server.
constexpr const char* k_release_key = "if redis.call('GET', KEYS[1]) == ARGV[1] then "
                                      "return redis.call('DEL', KEYS[1]) end return 0";
// The same for a field of one hash (spring-hash): KEYS[1] the hash, ARGV[1] the field.
constexpr const char* k_release_field = "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then "
                                        "return redis.call('HDEL', KEYS[1], ARGV[1]) end return 0";

class RedisRecordRelease final : public core::RecordRelease {
public:
  explicit RedisRecordRelease(const RedisSettings& settings)
      : m_settings(settings), m_nodes(m_settings), m_hash(settings.layout.shape == core::RecordShape::HashField) {
    if (core::one_key(settings.layout) && !m_hash) {
      throw std::logic_error("a repair releases string keys or hash fields");
    }
  }
  std::string kind() const override { return "redis"; }

  // Each record as a lookup reads it, with its whole value (a lookup keeps a marker's first bytes
  // only), as the release compares it.
  void read(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    m_keys = keys;
    lookup_all(m_nodes, m_settings, keys, out, m_values, true);
  }

  void release(const std::vector<std::uint8_t>& release, std::vector<std::uint8_t>& released) override {
    released.assign(m_keys.size(), 0);
    m_asked.clear();
    m_at.clear();
    for (std::size_t i = 0; i < m_keys.size() && i < release.size(); ++i) {
      if (release[i] != 0) {
        m_asked.push_back(m_hash ? m_settings.collection : m_keys[i]);
        m_at.push_back(i);
      }
    }
    if (m_asked.empty()) {
      return;
    }
    m_nodes.exchange(
        m_asked, 1,
        [&](std::size_t j, CommandBuffer& buffer) {
          std::size_t i = m_at[j];
          if (m_hash) {
            buffer.add({"EVAL", k_release_field, "1", m_settings.collection, m_keys[i], m_values[i]});
          } else {
            buffer.add({"EVAL", k_release_key, "1", m_keys[i], m_values[i]});
          }
        },
        [&](std::size_t j, std::span<Reply> replies) {
          const redisReply& reply = *replies[0];
          if (reply.type == REDIS_REPLY_ERROR) {
            throw UnreachableError(
                fmt::format("Redis refused to release a lost event's record (EVAL: {})", text_of(reply)));
          }
          released[m_at[j]] = reply.type == REDIS_REPLY_INTEGER && reply.integer == 1 ? 1 : 0;
        },
        "releasing lost events' records");
  }

private:
  RedisSettings m_settings;
  Nodes m_nodes;
  bool m_hash;
  std::vector<std::string> m_keys, m_values, m_asked;
  std::vector<std::size_t> m_at;
};

} // namespace

std::unique_ptr<core::RecordRelease> open_record_release(const RedisSettings& settings) {
  return std::make_unique<RedisRecordRelease>(settings);
}

namespace {

// SCAN MATCH `match` COUNT 1000 (never KEYS) on one master, a step at a time: each step's keys go to
// `step` until the cursor comes back to 0 or `step` returns false. Throws UnreachableError on an
// answer that is not a cursor, InterruptedError when the stop flag is raised.
void scan_master(Connection& master, const RedisSettings& settings, const std::string& match,
                 const std::function<bool(std::vector<std::string>&)>& step) {
  std::string cursor = "0";
  std::vector<std::string> keys;
  do {
    if (settings.stop && settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    Reply reply = master.command({"SCAN", cursor, "MATCH", match, "COUNT", k_scan_count});
    if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
      throw UnreachableError(fmt::format("Redis at {} answered SCAN unexpectedly", master.where()));
    }
    cursor.assign(reply->element[0]->str, reply->element[0]->len);
    keys.clear();
    for (std::size_t i = 0; i < reply->element[1]->elements; ++i) {
      keys.emplace_back(text_of(*reply->element[1]->element[i]));
    }
    if (!step(keys)) {
      return;
    }
  } while (cursor != "0");
}

// A one-key layout's records: HSCAN, SSCAN or ZSCAN of the collection (its members matching `match`)
// on the master of its slot, with the collection's PTTL, a round trip a cursor step.
void scan_members(Nodes& nodes, const RedisSettings& settings, const std::string& match,
                  const std::function<void(const SnapshotRecord&)>& each,
                  const std::function<void(std::int64_t)>& progress, ScanResult& result) {
  const auto& layout = settings.layout;
  const char* command = layout.shape == core::RecordShape::HashField   ? "HSCAN"
                        : layout.shape == core::RecordShape::SetMember ? "SSCAN"
                                                                       : "ZSCAN";
  std::size_t step = layout.shape == core::RecordShape::SetMember ? 1 : 2; // member[, value or score]
  std::string cursor = "0";
  std::int64_t seen = 0;
  result.nodes.push_back(settings.uri.redacted());
  do {
    if (settings.stop && settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    nodes.exchange(
        std::vector<std::string>{settings.collection}, 2,
        [&](std::size_t, CommandBuffer& buffer) {
          buffer.add({"PTTL", settings.collection});
          buffer.add({command, settings.collection, cursor, "MATCH", match, "COUNT", k_scan_count});
        },
        [&](std::size_t, std::span<Reply> replies) {
          core::RecordState whole;
          read_pttl(*replies[0], whole, "the collection");
          const redisReply& reply = *replies[1];
          if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2) {
            throw UnreachableError(fmt::format("Redis answered {} unexpectedly ({})", command,
                                               reply.type == REDIS_REPLY_ERROR ? text_of(reply) : "not a cursor"));
          }
          cursor.assign(reply.element[0]->str, reply.element[0]->len);
          const redisReply& items = *reply.element[1];
          for (std::size_t i = 0; i + step <= items.elements; i += step) {
            SnapshotRecord record{std::string(text_of(*items.element[i])), whole.pttl_ms, ""};
            if (step == 2) {
              record.value = text_of(*items.element[i + 1]);
            }
            each(record);
            ++seen;
          }
        },
        "a snapshot");
    if (progress) {
      progress(seen);
    }
  } while (cursor != "0");
}

} // namespace

ScanResult scan_records(const RedisSettings& settings, const std::string& match,
                        const std::function<void(const SnapshotRecord&)>& each,
                        const std::function<void(std::int64_t)>& progress) {
  Nodes nodes(settings);
  ScanResult result;
  result.started_ms = wall_ms();
  if (core::one_key(settings.layout)) {
    scan_members(nodes, settings, match, each, progress, result);
    return result;
  }
  const std::string& not_a_record = settings.layout.not_a_record_suffix;
  std::int64_t seen = 0;
  std::vector<core::RecordState> states;
  std::vector<std::string> values;
  // Every master of a cluster: SCAN on one node sees only its own slots.
  for (Connection* master : nodes.masters()) {
    result.nodes.push_back(master->where());
    scan_master(*master, settings, match, [&](std::vector<std::string>& keys) {
      std::erase_if(keys, [&](const std::string& key) { return !not_a_record.empty() && key.ends_with(not_a_record); });
      std::int64_t read_at = wall_ms();
      lookup_all(nodes, settings, keys, states, values);
      for (std::size_t i = 0; i < keys.size(); ++i) {
        if (states[i].kind == core::RecordState::Kind::Absent) {
          continue; // expired between SCAN and PTTL
        }
        SnapshotRecord record{keys[i], states[i].pttl_ms, core::snapshot_value(settings.layout, values[i])};
        if (record.pttl_ms) {
          *record.pttl_ms += read_at - result.started_ms; // remaining TTL as of the snapshot's time
        }
        each(record);
      }
      seen += static_cast<std::int64_t>(keys.size());
      if (progress) {
        progress(seen);
      }
      return true;
    });
  }
  return result;
}

std::vector<core::SampledKey> sample_keys(const RedisSettings& settings, std::size_t limit) {
  Nodes nodes(settings);
  std::vector<std::string> keys;
  for (Connection* master : nodes.masters()) {
    scan_master(*master, settings, "*", [&](std::vector<std::string>& step) {
      for (auto& key : step) {
        if (keys.size() < limit) {
          keys.push_back(std::move(key));
        }
      }
      return keys.size() < limit;
    });
  }
  std::vector<core::SampledKey> out(keys.size());
  nodes.exchange(
      keys, 1,
      [&](std::size_t i, CommandBuffer& buffer) {
        buffer.add({"TYPE", keys[i]});
      },
      [&](std::size_t i, std::span<Reply> replies) {
        out[i] = core::SampledKey{keys[i], std::string(text_of(*replies[0]))};
      },
      "a sample of keys");
  return out;
}

ServerFacts inspect_server(const RedisSettings& settings, const std::string& match, std::int64_t sample) {
  Nodes nodes(settings);
  ServerFacts facts;
  std::vector<std::string> keys;
  // The worst of every master: one that evicts or does not persist is enough to lose records.
  for (Connection* master : nodes.masters()) {
    auto config = [&](const std::string& name) -> std::optional<std::string> {
      Reply reply = master->command({"CONFIG", "GET", name});
      if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 || reply->element[1]->type != REDIS_REPLY_STRING) {
        return std::nullopt;
      }
      return std::string(reply->element[1]->str, reply->element[1]->len);
    };
    core::RedisNodeFacts node{master->where(), config("maxmemory-policy"), std::nullopt};
    auto save = config("save");
    auto appendonly = config("appendonly");
    if (save && appendonly) {
      node.persistence = !save->empty() || *appendonly == "yes";
    }
    facts.nodes.push_back(node);
    std::string cursor = "0";
    std::size_t wanted = keys.size() + static_cast<std::size_t>(sample);
    for (int round = 0; round < 100 && keys.size() < wanted; ++round) {
      Reply reply = master->command({"SCAN", cursor, "MATCH", match, "COUNT", k_scan_count});
      if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2) {
        break;
      }
      cursor.assign(reply->element[0]->str, reply->element[0]->len);
      for (std::size_t i = 0; i < reply->element[1]->elements && keys.size() < wanted; ++i) {
        keys.emplace_back(reply->element[1]->element[i]->str, reply->element[1]->element[i]->len);
      }
      if (cursor == "0") {
        break;
      }
    }
  }
  std::vector<core::RecordState> states;
  std::vector<std::string> values;
  lookup_all(nodes, settings, keys, states, values);
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
