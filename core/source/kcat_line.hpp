#pragma once

#include "core/event.hpp"

#include <memory>
#include <string>
#include <string_view>

namespace dedupctl::core {

// Parses kcat -J envelopes, one per line:
//   {"topic":"orders","partition":0,"offset":17,"tstype":"create","ts":1700000000000,
//    "headers":["event_id","e-17","type","PaymentCharged"],"key":"o-1","payload":"{…}"}
// `headers` is kcat's flat [name, value, name, value, …] array; key, payload and header values may
// be null. Unknown fields are ignored.
class KcatLineParser {
public:
  KcatLineParser();
  ~KcatLineParser();
  KcatLineParser(const KcatLineParser&) = delete;
  KcatLineParser& operator=(const KcatLineParser&) = delete;

  // Appends the line's event to `batch` (bytes copied into its arena). On a malformed line returns
  // false with `error` saying what is wrong and leaves the batch's events as they were.
  bool parse(std::string_view line, EventBatch& batch, std::string& error);

  // Points the events' header spans into batch.headers; call once the batch is complete.
  void seal(EventBatch& batch);

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

// One event as a kcat -J envelope (the inverse of KcatLineParser), without the newline. Strings are
// JSON-escaped byte for byte: bytes below 0x20 as \u00XX, others as they are.
std::string format_kcat_line(const Event& event);

} // namespace dedupctl::core
