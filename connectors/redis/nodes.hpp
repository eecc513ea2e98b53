#pragma once

// The servers behind one --store: one server (given, or named by the sentinels), or the masters of
// a Redis Cluster with its slot map. Keys go to the master of their slot; MOVED refreshes the map,
// ASK is followed for one command, and a master that stops answering is replaced by the replica the
// map promotes, or the run ends (UnreachableError) naming it. A cluster that answers CLUSTERDOWN or
// TRYAGAIN is waited for until --timeout, then the run ends quoting the answer; 16 rounds of
// redirects end it too ("the slot map kept changing"). Internal to connectors/redis.

#include "connectors/redis/connection.hpp"
#include "core/store/redis_cluster.hpp"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <vector>

namespace dedupctl::connectors::redis {

class Nodes {
public:
  // Connects: to the server (a cluster node is detected with CLUSTER SLOTS), to the first seed of a
  // redis+cluster:// list that answers, or to the master the sentinels name.
  explicit Nodes(const RedisSettings& settings);

  bool clustered() const { return m_cluster; }
  // What was connected, for the report: "one server", "cluster of 3 masters: …", "master … named
  // by sentinel …", with the seeds that did not answer.
  std::string topology() const { return m_topology; }
  // Runs `body` on the one server (not clustered). When its connection is lost (closed, killed,
  // credentials lapsed), it is opened again (tried until --timeout; a password file read again, a
  // password command run again; a changed run_id ends the run) and `body` runs once more: callers'
  // batches are safe to repeat (a lookup reads; a claim finds this run's own marker; settling
  // writes the same values).
  template <typename F> void on_server(F&& body) {
    try {
      body(*m_server);
      return;
    } catch (const ConnectionLost& lost) {
      reopen(lost.what());
    }
    body(*m_server);
  }

  // Writes `per_key` commands for key i with `write(i, buffer)`, to the master of the key's slot;
  // every master's batch is sent before any is read, so the masters work at once. Calls
  // `read(i, replies)` with key i's replies, in a master's order.
  using Write = std::function<void(std::size_t, CommandBuffer&)>;
  using Read = std::function<void(std::size_t, std::span<Reply>)>;
  void exchange(const std::vector<std::string>& keys, std::size_t per_key, const Write& write, const Read& read,
                std::string_view during);

  // Every master once, connected (SCAN, CONFIG GET): the server alone when not clustered.
  std::vector<Connection*> masters();

private:
  void reopen(const std::string& cause);
  static std::string run_id_of(Connection& server);
  void resolve_sentinel();
  // Asks the known masters, then the seeds, for CLUSTER SLOTS; the first answer is the map.
  void refresh(const std::set<std::string>& lost);
  bool load_slots(Connection& connection);
  Connection& connection(const core::HostPort& node);
  // Until the map no longer gives a slot of `lost` to it (its replica promoted), or --timeout.
  void wait_for_failover(const std::set<std::string>& lost, const std::vector<std::size_t>& slots_pending,
                         const std::string& cause);
  void describe();
  // exchange's parts: one server; in a cluster, rounds of groups of keys (one a master, or an ASK's
  // node), each round sent whole before its replies are read, until no key is redirected.
  struct Group;
  struct Round;
  void exchange_server(const std::vector<std::string>& keys, std::vector<Reply>& replies, const Write& write,
                       const Read& read, std::string_view during);
  std::map<std::string, Group> group_by_node(const std::vector<std::string>& keys,
                                             const std::vector<std::size_t>& pending,
                                             std::map<std::size_t, core::HostPort>& asks) const;
  void send_round(std::map<std::string, Group>& groups, const Write& write, Round& round);
  void read_round(std::map<std::string, Group>& groups, std::vector<Reply>& replies, const Read& read,
                  std::string_view during, std::map<std::size_t, core::HostPort>& asks, Round& round);

  const RedisSettings& m_settings;
  bool m_cluster = false;
  std::unique_ptr<Connection> m_server;
  std::string m_run_id; // the one server's, when connected
  std::vector<core::HostPort> m_seeds;
  std::vector<std::string> m_unanswered; // seeds that did not answer, with why
  std::vector<core::HostPort> m_masters;
  std::vector<int> m_slot_owner; // index into m_masters, -1: no master serves it
  std::map<std::string, std::unique_ptr<Connection>> m_connections;
  std::string m_topology;
  CommandBuffer m_buffer;
};

} // namespace dedupctl::connectors::redis
