#pragma once

// kcat -J lines for tests, written by the product's own writer (core::format_kcat_line), so that no
// test hand-writes the envelope's JSON and its escapes.

#include "core/event.hpp"
#include "core/source/kcat_line.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dedupctl::testing {

struct Envelope {
  std::string topic = "t";
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t ts = 1;
  std::vector<std::pair<std::string, std::string>> headers{}; // name, value (in order)
  std::optional<std::string> key{};
  std::optional<std::string> payload = "{}";

  // The envelope as one line, with its newline.
  std::string line() const { return json() + "\n"; }

  // The envelope without the newline.
  std::string json() const {
    std::vector<core::Header> spans;
    for (const auto& [name, value] : headers) {
      spans.push_back({name, value});
    }
    core::Event event;
    event.topic = topic;
    event.partition = partition;
    event.offset = offset;
    event.timestamp_ms = ts;
    if (key) {
      event.key = *key;
    }
    if (payload) {
      event.payload = *payload;
    }
    event.headers = spans;
    return core::format_kcat_line(event);
  }
};

} // namespace dedupctl::testing
