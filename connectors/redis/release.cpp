// replay --repair-lost's release of records: each deleted only while it still holds the value read.
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
} // namespace dedupctl::connectors::redis
