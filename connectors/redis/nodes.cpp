#include "connectors/redis/nodes.hpp"

#include "core/util/text.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <numeric>
#include <optional>
#include <thread>

namespace dedupctl::connectors::redis {

namespace {

// A batch redirected this often has met a map that keeps changing under it.
constexpr int k_max_rounds = 16;
constexpr auto k_failover_poll = std::chrono::milliseconds(200);

using Clock = std::chrono::steady_clock;

bool is_cluster_retry(std::string_view error) {
  return error.starts_with("CLUSTERDOWN") || error.starts_with("TRYAGAIN");
}

std::string slots_text(std::vector<std::size_t> slots) {
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  std::string text;
  for (std::size_t i = 0; i < slots.size() && i < 5; ++i) {
    text += (i ? ", " : "") + std::to_string(slots[i]);
  }
  return slots.size() > 5 ? fmt::format("{} and {} more", text, slots.size() - 5) : text;
}

} // namespace

Nodes::Nodes(const RedisSettings& settings) : m_settings(settings) {
  const auto& uri = settings.uri;
  if (uri.mode == core::StoreUri::RedisMode::Sentinel) {
    resolve_sentinel();
    return;
  }
  if (uri.mode == core::StoreUri::RedisMode::Server) {
    m_server = std::make_unique<Connection>(settings, Endpoint{{uri.host, uri.port}, uri.unix_path});
    if (!uri.unix_path.empty() || !load_slots(*m_server)) {
      m_run_id = run_id_of(*m_server);
      return; // one server
    }
    m_cluster = true;
    m_seeds = {m_server->node()};
    m_connections[m_server->node().text()] = std::move(m_server);
    describe();
    return;
  }
  m_cluster = true;
  m_seeds = uri.seeds;
  std::vector<std::string> not_cluster;
  for (const auto& seed : m_seeds) {
    try {
      if (load_slots(connection(seed))) {
        describe();
        return;
      }
      not_cluster.push_back(seed.text());
    } catch (const ConnectionLost& e) {
      m_unanswered.push_back(fmt::format("{} ({})", seed.text(), e.what()));
      m_connections.erase(seed.text());
    }
  }
  if (!not_cluster.empty()) {
    throw UnreachableError(fmt::format("{} {} not a Redis Cluster node (cluster support is disabled there); for one "
                                       "server give {flag} redis://{}",
                                       fmt::join(not_cluster, ", "), not_cluster.size() == 1 ? "is" : "are",
                                       not_cluster.front(), fmt::arg("flag", m_settings.flag)));
  }
  throw UnreachableError(fmt::format("no seed node of the cluster answered: {}; check the addresses in {flag}",
                                     fmt::join(m_unanswered, "; "), fmt::arg("flag", m_settings.flag)));
}

void Nodes::resolve_sentinel() {
  const auto& uri = m_settings.uri;
  auto deadline = Clock::now() + std::chrono::milliseconds(m_settings.timeout_ms);
  for (;;) {
    std::vector<std::string> unreachable;
    std::vector<std::string> unknown;
    std::optional<core::HostPort> master;
    std::string named_by;
    for (const auto& sentinel : uri.seeds) {
      try {
        Connection connection(m_settings, Endpoint{sentinel, "", false});
        Reply reply = connection.command({"SENTINEL", "get-master-addr-by-name", uri.master_name});
        if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 2 && reply->element[0]->type == REDIS_REPLY_STRING &&
            reply->element[1]->type == REDIS_REPLY_STRING) {
          core::HostPort node{std::string(text_of(*reply->element[0])), 0};
          if (core::parse_whole(text_of(*reply->element[1]), node.port)) {
            master = node;
            named_by = sentinel.text();
            break;
          }
        }
        unknown.push_back(sentinel.text());
      } catch (const UnreachableError& e) {
        unreachable.push_back(fmt::format("{} ({})", sentinel.text(), e.what()));
      }
    }
    if (!master) {
      if (unknown.empty()) {
        throw UnreachableError(fmt::format("no sentinel answered: {}; check the sentinels in {flag}",
                                           fmt::join(unreachable, "; "), fmt::arg("flag", m_settings.flag)));
      }
      throw UnreachableError(fmt::format("the sentinels at {} know no master named '{}'; check the name in {flag} "
                                         "(redis-cli -p 26379 SENTINEL MASTERS lists the names)",
                                         fmt::join(unknown, ", "), uri.master_name, fmt::arg("flag", m_settings.flag)));
    }
    m_server = std::make_unique<Connection>(m_settings, Endpoint{*master, ""});
    Reply role = m_server->command({"ROLE"});
    bool is_master = role->type == REDIS_REPLY_ARRAY && role->elements > 0 &&
                     role->element[0]->type == REDIS_REPLY_STRING && text_of(*role->element[0]) == "master";
    if (is_master) {
      m_run_id = run_id_of(*m_server);
      m_topology = fmt::format("master {} of '{}', named by sentinel {}", master->text(), uri.master_name, named_by);
      if (!unreachable.empty()) {
        m_topology += fmt::format("; sentinels that did not answer: {}", fmt::join(unreachable, "; "));
      }
      return;
    }
    // A failover under way: the sentinels have not caught up yet.
    if (Clock::now() >= deadline) {
      throw UnreachableError(fmt::format("the sentinels name {} as the master of '{}', but it is a replica; a "
                                         "failover is under way or stuck. Try again, or raise --timeout",
                                         master->text(), uri.master_name));
    }
    std::this_thread::sleep_for(k_failover_poll);
  }
}

Connection& Nodes::connection(const core::HostPort& node) {
  auto& slot = m_connections[node.text()];
  if (!slot) {
    slot = std::make_unique<Connection>(m_settings, Endpoint{node, ""});
  }
  return *slot;
}

bool Nodes::load_slots(Connection& connection) {
  Reply reply = connection.command({"CLUSTER", "SLOTS"});
  if (reply->type != REDIS_REPLY_ARRAY) {
    return false; // "ERR This instance has cluster support disabled"
  }
  std::vector<core::HostPort> masters;
  std::vector<int> owner(core::k_cluster_slots, -1);
  for (std::size_t i = 0; i < reply->elements; ++i) {
    const redisReply* range = reply->element[i];
    if (range->type != REDIS_REPLY_ARRAY || range->elements < 3 || range->element[2]->type != REDIS_REPLY_ARRAY ||
        range->element[2]->elements < 2) {
      throw UnreachableError(
          fmt::format("Redis at {} answered CLUSTER SLOTS in a form we do not know", connection.where()));
    }
    const redisReply* node = range->element[2];
    core::HostPort master{std::string(text_of(*node->element[0])), static_cast<int>(node->element[1]->integer)};
    if (master.host.empty()) {
      master.host = connection.node().host; // the node does not know its own address
    }
    auto it = std::find(masters.begin(), masters.end(), master);
    int index = static_cast<int>(it - masters.begin());
    if (it == masters.end()) {
      masters.push_back(master);
    }
    long long first = range->element[0]->integer;
    long long last = range->element[1]->integer;
    for (long long s = std::max(0LL, first); s <= last && s < core::k_cluster_slots; ++s) {
      owner[static_cast<std::size_t>(s)] = index;
    }
  }
  m_masters = std::move(masters);
  m_slot_owner = std::move(owner);
  return true;
}

void Nodes::refresh(const std::set<std::string>& lost) {
  std::vector<core::HostPort> candidates = m_masters;
  candidates.insert(candidates.end(), m_seeds.begin(), m_seeds.end());
  std::vector<std::string> failed;
  for (const auto& node : candidates) {
    if (lost.count(node.text())) {
      continue;
    }
    try {
      if (load_slots(connection(node))) {
        return;
      }
    } catch (const ConnectionLost& e) {
      m_connections.erase(node.text());
      failed.push_back(e.what());
    }
  }
  throw UnreachableError(fmt::format("no node of the cluster answered CLUSTER SLOTS: {}", fmt::join(failed, "; ")));
}

void Nodes::wait_for_failover(const std::set<std::string>& lost_nodes, const std::vector<std::size_t>& slots_pending,
                              const std::string& cause) {
  auto deadline = Clock::now() + std::chrono::milliseconds(m_settings.timeout_ms);
  std::set<std::string> lost = lost_nodes;
  for (const auto& node : lost) {
    m_connections.erase(node);
  }
  for (;;) {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    try {
      refresh(lost);
      bool waiting = false;
      for (std::size_t slot : slots_pending) {
        int owner = m_slot_owner[slot];
        if (owner < 0) {
          waiting = true;
          break;
        }
        const auto& master = m_masters[static_cast<std::size_t>(owner)];
        if (lost.count(master.text())) {
          try {
            connection(master); // back, restarted: it serves its slots again
            lost.erase(master.text());
          } catch (const ConnectionLost&) {
            m_connections.erase(master.text());
            waiting = true;
            break;
          }
        }
      }
      if (!waiting) {
        describe();
        return;
      }
    } catch (const ConnectionLost&) {
      // refresh found no node; keep trying until the deadline
    } catch (const UnreachableError&) {
    }
    if (Clock::now() >= deadline) {
      throw UnreachableError(fmt::format(
          "{}; the cluster did not give its slots ({}) to another master within {} ms, so their keys were not "
          "looked up. Check CLUSTER NODES (a master without a replica cannot fail over), or raise --timeout",
          cause, slots_text(slots_pending), m_settings.timeout_ms));
    }
    std::this_thread::sleep_for(k_failover_poll);
  }
}

// A lost connection to the one server is opened again: a killed client connection or lapsed
// credentials are not a lost server, and a server that does not answer is tried again until
// --timeout, as a cluster's failover is waited for. A server that restarted meanwhile (its run_id
// changed) may have lost its keyspace or become a replica: what the run saw before is not what it
// would see now.
void Nodes::reopen(const std::string& cause) {
  Endpoint endpoint = m_server->endpoint();
  auto deadline = Clock::now() + std::chrono::milliseconds(m_settings.timeout_ms);
  // The lost connection stays until another is open: used again, it fails again. A connection that
  // fails before it answered INFO is one more failed try (a server killed while it was being
  // connected to resets what it had accepted).
  std::string run_id;
  for (bool open = false; !open;) {
    try {
      auto connection = std::make_unique<Connection>(m_settings, endpoint);
      run_id = run_id_of(*connection);
      m_server = std::move(connection);
      open = true;
    } catch (const ConnectionLost& again) {
      if (Clock::now() >= deadline) {
        throw UnreachableError(
            fmt::format("{}; connecting again failed for {} ms: {}", cause, m_settings.timeout_ms, again.what()));
      }
      if (m_settings.stop && m_settings.stop->load()) {
        throw InterruptedError("interrupted");
      }
      std::this_thread::sleep_for(k_failover_poll);
    }
  }
  if (run_id != m_run_id) {
    throw UnreachableError(fmt::format("{}; connected again, but Redis at {} restarted meanwhile (its run_id changed): "
                                       "its keyspace may not be the one the run began with. Run again",
                                       cause, endpoint.text()));
  }
}

// INFO server's run_id (empty where INFO is refused, as some managed services do).
std::string Nodes::run_id_of(Connection& server) {
  Reply reply = server.command({"INFO", "server"});
  if (reply->type != REDIS_REPLY_STRING && reply->type != REDIS_REPLY_VERB) {
    return {};
  }
  std::string_view text = text_of(*reply);
  auto at = text.find("run_id:");
  if (at == std::string_view::npos) {
    return {};
  }
  text.remove_prefix(at + 7);
  return std::string(core::trim(text.substr(0, text.find('\n'))));
}

void Nodes::describe() {
  std::vector<std::string> masters;
  for (const auto& master : m_masters) {
    masters.push_back(master.text());
  }
  m_topology = fmt::format("Redis Cluster of {} master{}: {}", masters.size(), masters.size() == 1 ? "" : "s",
                           fmt::join(masters, ", "));
  if (!m_unanswered.empty()) {
    m_topology += fmt::format("; seeds that did not answer: {}", fmt::join(m_unanswered, "; "));
  }
}

std::vector<Connection*> Nodes::masters() {
  if (!m_cluster) {
    return {m_server.get()};
  }
  std::vector<Connection*> out;
  for (const auto& master : m_masters) {
    out.push_back(&connection(master));
  }
  return out;
}

struct Nodes::Group {
  core::HostPort node;
  std::vector<std::size_t> keys;
  std::vector<bool> asking;
  bool sent = false;
};

// What one round of a cluster exchange found: the keys to send again, and why.
struct Nodes::Round {
  std::vector<std::size_t> next;
  bool moved = false;      // a MOVED: the slot map changed
  bool redirected = false; // a MOVED or an ASK
  bool retry = false;      // CLUSTERDOWN or TRYAGAIN (down, or failing over)
  std::string retry_answer;
  std::set<std::string> lost; // masters whose connection was lost, and why
  std::string cause;
};

void Nodes::exchange_server(const std::vector<std::string>& keys, std::vector<Reply>& replies, const Write& write,
                            const Read& read, std::string_view during) {
  m_buffer.clear();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    write(i, m_buffer);
  }
  if (m_buffer.count() == 0) {
    return;
  }
  on_server([&](Connection& server) {
    server.send(m_buffer);
    for (std::size_t i = 0; i < keys.size(); ++i) {
      for (auto& reply : replies) {
        reply = server.read(during);
      }
      read(i, replies);
    }
  });
}

std::map<std::string, Nodes::Group> Nodes::group_by_node(const std::vector<std::string>& keys,
                                                         const std::vector<std::size_t>& pending,
                                                         std::map<std::size_t, core::HostPort>& asks) const {
  std::map<std::string, Group> groups;
  for (std::size_t i : pending) {
    core::HostPort node;
    bool asking = false;
    if (auto ask = asks.find(i); ask != asks.end()) {
      node = ask->second;
      asking = true;
    } else {
      int slot = core::key_slot(keys[i]);
      int owner = m_slot_owner[static_cast<std::size_t>(slot)];
      if (owner < 0) {
        throw UnreachableError(fmt::format("no master of the cluster serves slot {} (of key '{}'); check CLUSTER "
                                           "INFO: the cluster is down or a reshard left it unassigned",
                                           slot, keys[i]));
      }
      node = m_masters[static_cast<std::size_t>(owner)];
    }
    auto& group = groups[node.text()];
    group.node = node;
    group.keys.push_back(i);
    group.asking.push_back(asking);
  }
  asks.clear();
  return groups;
}

void Nodes::send_round(std::map<std::string, Group>& groups, const Write& write, Round& round) {
  for (auto& [name, group] : groups) {
    try {
      m_buffer.clear();
      for (std::size_t k = 0; k < group.keys.size(); ++k) {
        m_buffer.asking(group.asking[k]);
        write(group.keys[k], m_buffer);
      }
      m_buffer.asking(false);
      connection(group.node).send(m_buffer);
      group.sent = true;
    } catch (const ConnectionLost& e) {
      round.lost.insert(name);
      round.cause = e.what();
      m_connections.erase(name);
    }
  }
}

void Nodes::read_round(std::map<std::string, Group>& groups, std::vector<Reply>& replies, const Read& read,
                       std::string_view during, std::map<std::size_t, core::HostPort>& asks, Round& round) {
  for (auto& [name, group] : groups) {
    std::size_t k = 0;
    if (group.sent) {
      try {
        Connection& conn = connection(group.node);
        for (; k < group.keys.size(); ++k) {
          std::size_t i = group.keys[k];
          for (auto& reply : replies) {
            if (group.asking[k]) {
              conn.read(during); // ASKING's +OK
            }
            reply = conn.read(during);
          }
          std::optional<core::Redirect> redirect;
          bool again = false;
          for (const auto& reply : replies) {
            if (reply->type == REDIS_REPLY_ERROR) {
              redirect = core::parse_redirect(text_of(*reply), group.node);
              if (is_cluster_retry(text_of(*reply))) {
                again = true;
                round.retry_answer = fmt::format("{} (from {})", text_of(*reply), group.node.text());
              }
              if (redirect || again) {
                break;
              }
            }
          }
          if (redirect && redirect->kind == core::Redirect::Kind::Ask) {
            asks[i] = redirect->node;
          }
          if (redirect || again) {
            round.moved = round.moved || (redirect && redirect->kind == core::Redirect::Kind::Moved);
            round.redirected = round.redirected || redirect.has_value();
            round.retry = round.retry || again;
            round.next.push_back(i);
            continue;
          }
          read(i, replies);
        }
      } catch (const ConnectionLost& e) {
        round.lost.insert(name);
        round.cause = e.what();
        m_connections.erase(name);
      }
    }
    round.next.insert(round.next.end(), group.keys.begin() + static_cast<std::ptrdiff_t>(k), group.keys.end());
  }
}

void Nodes::exchange(const std::vector<std::string>& keys, std::size_t per_key, const Write& write, const Read& read,
                     std::string_view during) {
  std::vector<Reply> replies(per_key);
  if (!m_cluster) {
    exchange_server(keys, replies, write, read, during);
    return;
  }
  std::vector<std::size_t> pending(keys.size());
  std::iota(pending.begin(), pending.end(), std::size_t{0});
  std::map<std::size_t, core::HostPort> asks;
  // Rounds that redirected a key or lost a master count toward k_max_rounds; a cluster that answers
  // CLUSTERDOWN or TRYAGAIN (down, or failing over) is waited for until --timeout instead.
  int rounds = 0;
  bool down = false; // the last round met CLUSTERDOWN or TRYAGAIN, first at down_since
  Clock::time_point down_since{};
  while (!pending.empty()) {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    if (rounds == k_max_rounds) {
      throw UnreachableError(fmt::format("the cluster's slot map kept changing: {} keys were still redirected after "
                                         "{} tries; try again when the resharding is done",
                                         pending.size(), k_max_rounds));
    }
    auto groups = group_by_node(keys, pending, asks);
    Round round;
    send_round(groups, write, round);
    read_round(groups, replies, read, during, asks, round);
    rounds += round.redirected || !round.lost.empty() ? 1 : 0;
    if (!round.lost.empty()) {
      std::vector<std::size_t> slots;
      for (std::size_t i : round.next) {
        slots.push_back(static_cast<std::size_t>(core::key_slot(keys[i])));
      }
      wait_for_failover(round.lost, slots, round.cause);
    } else if (round.retry) {
      if (!down) {
        down = true;
        down_since = Clock::now();
      }
      if (Clock::now() - down_since >= std::chrono::milliseconds(m_settings.timeout_ms)) {
        throw UnreachableError(fmt::format(
            "the cluster kept answering {} for {} ms, so {} keys were not looked up; check CLUSTER INFO (a failover "
            "takes the cluster's node timeout), or raise --timeout",
            round.retry_answer, m_settings.timeout_ms, round.next.size()));
      }
      std::this_thread::sleep_for(k_failover_poll);
      refresh({});
    } else if (round.moved) {
      refresh({});
    }
    down = down && round.retry;
    pending = std::move(round.next);
  }
}

} // namespace dedupctl::connectors::redis
