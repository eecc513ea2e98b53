#pragma once

// What a Redis Cluster client decides without talking to one: a key's hash slot, and where a
// MOVED or ASK reply sends a command. Pure; the connection work is connectors/redis.

#include "core/store/store_uri.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace dedupctl::core {

inline constexpr int k_cluster_slots = 16384;

// CRC16-CCITT (XModem: poly 0x1021, init 0), as the cluster specification gives it.
std::uint16_t crc16(std::string_view data);

// The slot of a key: CRC16 mod 16384 of the whole key, or of its hash tag, the text between the
// first '{' and the next '}' when that text is not empty ("{user1}.a" and "{user1}.b" share one).
int key_slot(std::string_view key);

// A "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381" error reply. An empty host
// (":6381", Redis 7 when the node does not know its own address) means the replying node's.
struct Redirect {
  enum class Kind { Moved, Ask };
  Kind kind = Kind::Moved;
  int slot = 0;
  HostPort node;
};
std::optional<Redirect> parse_redirect(std::string_view error, const HostPort& from);

} // namespace dedupctl::core
