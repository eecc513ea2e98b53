// The lookup store of audit and trace: records read per batch, and the keyspace's probe.
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

} // namespace

std::unique_ptr<core::DedupStore> open_store(const RedisSettings& settings) {
  return std::make_unique<RedisStore>(settings);
}

} // namespace dedupctl::connectors::redis
