// Lookups of records, the one read every job shares (the store, the replay's claims, the release,
// the snapshot's scan): a key per id pipelined, or members of one key.
#include "connectors/redis/lookup.hpp"
#include "connectors/redis/connection.hpp"
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

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

namespace {

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
  read_value(get, with_ttl, state, value, limit, limit == std::string::npos);
}

// The members (fields) of a one-key layout's collection: PTTL of the collection, then HMGET,
// SMISMEMBER, ZMSCORE or BF.MEXISTS of every k_lookup_chunk ids, one round trip to the master of its slot; never
// a read of the whole collection. A member's record lives as long as the collection does.
void lookup_members(Nodes& nodes, const core::RecordLayout& layout, const std::string& collection,
                    const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
                    std::vector<std::string>& values) {
  out.assign(keys.size(), core::RecordState{});
  values.assign(keys.size(), std::string());
  if (keys.empty()) {
    return;
  }
  const char* command = layout.shape == core::RecordShape::HashField     ? "HMGET"
                        : layout.shape == core::RecordShape::SetMember   ? "SMISMEMBER"
                        : layout.shape == core::RecordShape::BloomMember ? "BF.MEXISTS"
                                                                         : "ZMSCORE";
  std::size_t chunks = (keys.size() + k_lookup_chunk - 1) / k_lookup_chunk;
  // BF.MEXISTS answers 0 for a key of another type (RedisBloom 2.8): a filter's TYPE is asked first.
  bool bloom = layout.shape == core::RecordShape::BloomMember;
  std::size_t first = bloom ? 2 : 1;
  std::vector<std::string> args;
  auto write = [&](std::size_t, CommandBuffer& buffer) {
    if (bloom) {
      buffer.add({"TYPE", collection});
    }
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
    if (bloom) {
      check_bloom_type(*replies[0], layout, collection);
    }
    core::RecordState whole;
    read_pttl(*replies[first - 1], whole, "the collection");
    for (std::size_t c = 0; c < chunks; ++c) {
      std::size_t begin = c * k_lookup_chunk;
      std::size_t end = std::min(keys.size(), begin + k_lookup_chunk);
      const redisReply& reply = *replies[first + c];
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
  nodes.exchange(std::vector<std::string>{collection}, first + chunks, write, read, "a lookup");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    out[i].value = values[i];
  }
}

// A version guard's hash per entity: HGET of its version field, a key at a time (routed by slot).
void lookup_version_fields(Nodes& nodes, const core::RecordLayout& layout, const std::vector<std::string>& keys,
                           std::vector<core::RecordState>& out, std::vector<std::string>& values) {
  out.assign(keys.size(), core::RecordState{});
  values.assign(keys.size(), std::string());
  const std::string& field = layout.projection.version_field;
  nodes.exchange(
      keys, 1,
      [&](std::size_t i, CommandBuffer& buffer) {
        buffer.add({"HGET", keys[i], field});
      },
      [&](std::size_t i, std::span<Reply> replies) {
        const redisReply& reply = *replies[0];
        if (reply.type == REDIS_REPLY_ERROR && text_of(reply).starts_with("WRONGTYPE")) {
          throw UsageError(fmt::format("--layout-option version-field={}: the key {} is not a hash (HGET answered "
                                       "{}); drop version-field for a key whose value is the version",
                                       field, keys[i], text_of(reply)));
        }
        if (reply.type == REDIS_REPLY_ERROR) {
          throw UnreachableError(fmt::format("Redis answered HGET with an error ({})", text_of(reply)));
        }
        if (reply.type == REDIS_REPLY_STRING) {
          out[i].kind = core::RecordState::Kind::Present;
          values[i].assign(reply.str, reply.len);
        }
      },
      "a lookup");
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

} // namespace

void check_bloom_type(const redisReply& type, const core::RecordLayout& layout, const std::string& collection) {
  std::string_view name = text_of(type);
  if (type.type == REDIS_REPLY_ERROR) {
    throw UnreachableError(fmt::format("Redis answered TYPE with an error ({})", name));
  }
  if (name != "MBbloom--" && name != "bloomfltr" && name != "none") {
    throw UsageError(fmt::format("--collection {}: the key holds a {}, not a Bloom filter; --layout {} reads a filter "
                                 "made with BF.RESERVE or BF.ADD",
                                 collection, name, layout.name));
  }
}

// Every key's state and value (its first bytes, or all of a JSON record): one MGET of the batch on
// one server, PTTL + GET a key routed by slot in a cluster (no PTTL where the record carries its
// expiration); a one-key layout's members as above. `whole_values`: every value whole (a repair compares
// them before it deletes).
void lookup_all(Nodes& nodes, const RedisSettings& settings, const std::vector<std::string>& keys,
                std::vector<core::RecordState>& out, std::vector<std::string>& values, bool whole_values) {
  const auto& layout = settings.layout;
  std::size_t limit = whole_values ? std::string::npos : value_limit(layout);
  bool with_ttl = !ttl_in_value(layout);
  bool read_already = false; // the values read as they arrived
  if (core::one_key(layout)) {
    lookup_members(nodes, layout, settings.collection, keys, out, values);
  } else if (layout.version_guard() && !layout.projection.version_field.empty()) {
    lookup_version_fields(nodes, layout, keys, out, values);
    return; // a projection's keys have no TTL the guard reads
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

} // namespace dedupctl::connectors::redis
