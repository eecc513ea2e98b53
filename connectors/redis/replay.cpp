// The placement a replay routes through: claims, then the records marked done or released.
#include "connectors/redis/connection.hpp"
#include "connectors/redis/lookup.hpp"
#include "connectors/redis/nodes.hpp"
#include "connectors/redis/redis.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>

namespace dedupctl::connectors::redis {

namespace {

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

} // namespace dedupctl::connectors::redis
