#pragma once

// The lookup every Redis job shares (connectors/redis/lookup.cpp).
#include "connectors/redis/nodes.hpp"
#include "connectors/redis/redis.hpp"
#include "core/store/record_state.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace dedupctl::connectors::redis {

// Every key's state and value (its first bytes, or all of a JSON record): one MGET of the batch on
// one server, PTTL + GET a key routed by slot in a cluster (no PTTL where the record carries its
// expiration); a one-key layout's members by HMGET, SMISMEMBER or ZMSCORE. `whole_values`: every
// value whole (a repair compares them before it deletes).
void lookup_all(Nodes& nodes, const RedisSettings& settings, const std::vector<std::string>& keys,
                std::vector<core::RecordState>& out, std::vector<std::string>& values, bool whole_values = false);

// A Bloom filter's key holds a filter (RedisBloom's and Redis 8's MBbloom--, valkey-bloom's
// bloomfltr) or nothing (every id absent, as after a flush): TYPE's answer `type`; another type is a
// UsageError naming --collection, an error answer an UnreachableError.
void check_bloom_type(const redisReply& type, const core::RecordLayout& layout, const std::string& collection);

// The wall clock in epoch milliseconds: when a scan started, when a replay's records are dated.
std::int64_t wall_ms();

} // namespace dedupctl::connectors::redis
