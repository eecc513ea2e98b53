#pragma once

// Events the tests make: an event that owns its bytes, viewed as a core::Event, and written as a kcat
// -J line by the product's own writer (core::format_kcat_line), so that no test hand-writes the
// envelope's JSON and its escapes.

#include "core/event.hpp"
#include "core/source/kcat_line.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dedupctl::testing {

// A Kafka Streams window store's changelog key, written by hand as WindowKeySchema.toStoreKeyBinary
// builds it: the id's bytes, then the window start (int64) and the sequence number (int32), big-endian.
inline std::string window_store_key(std::string_view id, std::int64_t start, std::int32_t seqnum = 0) {
  std::string out(id);
  auto s = static_cast<std::uint64_t>(start);
  for (int shift = 56; shift >= 0; shift -= 8) {
    out += static_cast<char>((s >> shift) & 0xff);
  }
  auto q = static_cast<std::uint32_t>(seqnum);
  for (int shift = 24; shift >= 0; shift -= 8) {
    out += static_cast<char>((q >> shift) & 0xff);
  }
  return out;
}

// An event that owns its bytes.
struct OwnedEvent {
  std::string topic = "orders";
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = 0;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers{};
  std::optional<std::string> key{};
  std::optional<std::string> payload{};
};

// Views an owned event as a core::Event (headers stored in `headers`, which must outlive it).
inline core::Event view(const OwnedEvent& owned, std::vector<core::Header>& headers) {
  headers.clear();
  for (const auto& [name, value] : owned.headers) {
    headers.push_back(core::Header{name, value ? std::optional<std::string_view>(*value) : std::nullopt});
  }
  core::Event e;
  e.topic = owned.topic;
  e.partition = owned.partition;
  e.offset = owned.offset;
  e.timestamp_ms = owned.timestamp_ms;
  if (owned.key) {
    e.key = *owned.key;
  }
  if (owned.payload) {
    e.payload = *owned.payload;
  }
  e.headers = headers;
  return e;
}

// The event as one kcat -J line, with its newline (kcat_json: without it).
inline std::string kcat_json(const OwnedEvent& owned) {
  std::vector<core::Header> headers;
  return core::format_kcat_line(view(owned, headers));
}
inline std::string kcat_line(const OwnedEvent& owned) { return kcat_json(owned) + "\n"; }

} // namespace dedupctl::testing
