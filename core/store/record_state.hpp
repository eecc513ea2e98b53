#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

// What a placement holds for one dedup key, as every store reports it and the coverage rules
// (core/audit/coverage) read it.
namespace dedupctl::core {

// What the placement holds for one dedup key now.
struct RecordState {
  enum class Kind { Absent, Present };
  Kind kind = Kind::Absent;
  std::optional<std::int64_t> pttl_ms; // present: remaining TTL; nullopt: no expiry
  std::string_view value;              // the first bytes of the value (claim markers)
  // An inbox row: when it was processed. Its remaining TTL is the policy's (the cleanup job's
  // retention) counted from here, decided by remaining_ms(), not by the store.
  std::optional<std::int64_t> processed_at_ms;
};

// An inbox row as the coverage rules see it: present, its status (claim markers) as the value, and
// processed_at (NULL: the row never expires).
RecordState inbox_row(std::optional<std::int64_t> processed_at_ms, std::string_view status);

} // namespace dedupctl::core
