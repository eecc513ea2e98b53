// Reading a server whole: snapshot's scan, discover's sample, check --live's facts.
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

constexpr const char* k_scan_count = "1000";

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

// A Bloom filter's BF.SCANDUMP, chunk by chunk on the master of its slot (with its TYPE and PTTL
// each time, so that a filter replaced or removed mid-dump is noticed): each chunk a record whose key
// is the iterator BF.SCANDUMP returned beside it (what BF.LOADCHUNK takes back) and whose value is
// the chunk's bytes, the header first. valkey-bloom's filters (bloomfltr) have no BF.SCANDUMP, and
// hash with a seed of their own per filter: refused, not guessed.
void scan_bloom(Nodes& nodes, const RedisSettings& settings, const std::function<void(const SnapshotRecord&)>& each,
                const std::function<void(std::int64_t)>& progress, ScanResult& result) {
  const std::string& key = settings.collection;
  result.nodes.push_back(settings.uri.redacted());
  std::string iterator = "0";
  std::int64_t chunks = 0;
  do {
    if (settings.stop && settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    nodes.exchange(
        std::vector<std::string>{key}, 3,
        [&](std::size_t, CommandBuffer& buffer) {
          buffer.add({"TYPE", key});
          buffer.add({"PTTL", key});
          buffer.add({"BF.SCANDUMP", key, iterator});
        },
        [&](std::size_t, std::span<Reply> replies) {
          check_bloom_type(*replies[0], settings.layout, key);
          std::string_view type = text_of(*replies[0]);
          if (type == "none") {
            throw UsageError(fmt::format("--collection {}: no such key{}; check the name (the live audit of a filter "
                                         "that is gone reads every id missing)",
                                         key, chunks > 0 ? " (it went during the dump)" : ""));
          }
          if (type == "bloomfltr") {
            throw UsageError(fmt::format("--collection {}: a valkey-bloom filter hashes with a seed of its own, "
                                         "which no dump lets dedupctl recompute; audit the live filter",
                                         key));
          }
          core::RecordState whole;
          read_pttl(*replies[1], whole, "the filter");
          const redisReply& reply = *replies[2];
          if (reply.type != REDIS_REPLY_ARRAY || reply.elements != 2 || reply.element[0]->type != REDIS_REPLY_INTEGER) {
            throw UnreachableError(fmt::format("Redis answered BF.SCANDUMP unexpectedly ({})",
                                               reply.type == REDIS_REPLY_ERROR ? text_of(reply) : "not an iterator"));
          }
          iterator = std::to_string(reply.element[0]->integer);
          if (reply.element[0]->integer != 0) {
            each(SnapshotRecord{iterator, whole.pttl_ms, std::string(text_of(*reply.element[1]))});
            ++chunks;
          }
        },
        "a snapshot");
    if (progress) {
      progress(chunks);
    }
  } while (iterator != "0");
}

} // namespace

ScanResult scan_records(const RedisSettings& settings, const std::string& match,
                        const std::function<void(const SnapshotRecord&)>& each,
                        const std::function<void(std::int64_t)>& progress) {
  Nodes nodes(settings);
  ScanResult result;
  result.started_ms = wall_ms();
  if (settings.layout.shape == core::RecordShape::BloomMember) {
    scan_bloom(nodes, settings, each, progress, result);
    return result;
  }
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

std::optional<BloomInfo> bloom_info(const RedisSettings& settings) {
  Nodes nodes(settings);
  std::optional<BloomInfo> out;
  nodes.exchange(
      std::vector<std::string>{settings.collection}, 2,
      [&](std::size_t, CommandBuffer& buffer) {
        buffer.add({"TYPE", settings.collection});
        buffer.add({"BF.INFO", settings.collection});
      },
      [&](std::size_t, std::span<Reply> replies) {
        check_bloom_type(*replies[0], settings.layout, settings.collection);
        const redisReply& info = *replies[1];
        if (text_of(*replies[0]) == "none" || info.type != REDIS_REPLY_ARRAY) {
          return;
        }
        BloomInfo facts;
        for (std::size_t i = 0; i + 1 < info.elements; i += 2) {
          std::string_view name = text_of(*info.element[i]);
          const redisReply& value = *info.element[i + 1];
          std::int64_t number = value.type == REDIS_REPLY_INTEGER ? value.integer : 0;
          if (name == "Capacity") {
            facts.capacity = number;
          } else if (name == "Number of items inserted") {
            facts.items = number;
          } else if (name == "Number of filters") {
            facts.filters = number;
          } else if (name == "Expansion rate") {
            facts.expansion = number; // nil for a NONSCALING filter
          }
        }
        out = facts;
      },
      "BF.INFO");
  return out;
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
