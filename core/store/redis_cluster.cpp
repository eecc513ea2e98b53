#include "core/store/redis_cluster.hpp"

#include "core/util/text.hpp"

#include <array>

namespace dedupctl::core {

namespace {

constexpr std::array<std::uint16_t, 256> crc16_table() {
  std::array<std::uint16_t, 256> table{};
  for (unsigned i = 0; i < 256; ++i) {
    auto crc = static_cast<std::uint16_t>(i << 8);
    for (int bit = 0; bit < 8; ++bit) {
      crc = static_cast<std::uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
    table[i] = crc;
  }
  return table;
}

constexpr auto k_crc16 = crc16_table();

} // namespace

std::uint16_t crc16(std::string_view data) {
  std::uint16_t crc = 0;
  for (char c : data) {
    crc = static_cast<std::uint16_t>((crc << 8) ^ k_crc16[((crc >> 8) ^ static_cast<unsigned char>(c)) & 0xff]);
  }
  return crc;
}

int key_slot(std::string_view key) {
  auto open = key.find('{');
  if (open != std::string_view::npos) {
    auto close = key.find('}', open + 1);
    if (close != std::string_view::npos && close > open + 1) {
      key = key.substr(open + 1, close - open - 1);
    }
  }
  return crc16(key) % k_cluster_slots;
}

std::optional<Redirect> parse_redirect(std::string_view error, const HostPort& from) {
  Redirect redirect;
  if (error.starts_with("MOVED ")) {
    redirect.kind = Redirect::Kind::Moved;
  } else if (error.starts_with("ASK ")) {
    redirect.kind = Redirect::Kind::Ask;
  } else {
    return std::nullopt;
  }
  auto parts = split(error, ' ');
  if (parts.size() != 3 || !parse_whole(parts[1], redirect.slot) || redirect.slot < 0 ||
      redirect.slot >= k_cluster_slots) {
    return std::nullopt;
  }
  auto colon = parts[2].rfind(':');
  if (colon == std::string_view::npos || !parse_whole(parts[2].substr(colon + 1), redirect.node.port) ||
      redirect.node.port <= 0 || redirect.node.port > 65535) {
    return std::nullopt;
  }
  redirect.node.host = colon == 0 ? from.host : std::string(parts[2].substr(0, colon));
  return redirect;
}

} // namespace dedupctl::core
