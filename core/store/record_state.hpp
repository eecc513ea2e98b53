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
  // What a record layout (core/store/layout) read from the value, where the library keeps its own
  // state there rather than in the key's TTL (Powertools' JSON):
  bool claim = false;                         // an in-progress claim (status INPROGRESS)
  std::optional<std::int64_t> claim_until_ms; // the claim's own lease: past it the library takes it over
  std::optional<std::int64_t> expires_at_ms;  // from here on the library treats the record as expired
  bool unreadable = false;                    // not in the layout's shape (not JSON, no status)
  // What the library does with a record it cannot use (JSON layouts; core::JsonReader), unless the
  // record's own expiry passed first (expires_at_ms): takes it over and applies the event again (not
  // JSON, status EXPIRED), or fails on it, so that no delivery applies the event (no status, a status
  // it does not know, a field of a type it cannot compare).
  bool taken_over = false;
  bool fails = false;
  bool layout_read = false; // read as the layout's record: claim markers are for values a layout cannot read
};

// A present key: its remaining TTL (nullopt: none) and its value.
RecordState present_record(std::optional<std::int64_t> pttl_ms, std::string_view value);

// An inbox row as the coverage rules see it: present, its status (claim markers) as the value, and
// processed_at (NULL: the row never expires).
RecordState inbox_row(std::optional<std::int64_t> processed_at_ms, std::string_view status);

} // namespace dedupctl::core
