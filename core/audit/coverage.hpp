#pragma once

#include "core/span.hpp"
#include "core/store/record_state.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The verdict per event (docs/design.md, "Coverage"). Pure: every input, `now` included, is a parameter.
namespace dedupctl::core {

enum class Coverage { NoId, Pending, InProgress, Orphaned, Covered, Expiring, Expired, Missing };
inline constexpr int k_coverage_states = 8;
std::string_view to_string(Coverage state); // the report-v1 summary name: "no_id", "in_progress", …

struct CoveragePolicy {
  std::int64_t now_ms = 0;
  Span ttl;               // declared, or the estimate's upper bound
  Span retention;         // the topic's
  bool compacted = false; // cleanup.policy has compact: the latest event of a key is never deleted
  std::int64_t max_lag_ms = 0;
  std::int64_t lease_ms = 15 * 60 * 1000;
  std::vector<std::string> in_progress_values{"processing", "INPROGRESS"};
  // The record layout's rule for an orphaned claim (core/store/layout): the library takes it over and
  // applies the event again (a seek re-applies it), or every delivery skips it (plain claims).
  bool orphans_reapplied = false;
};

struct EventFacts {
  std::int64_t timestamp_ms = 0;
  std::int64_t offset = 0;
  std::optional<std::int64_t> committed; // the group's committed offset of the partition
};

struct Verdict {
  Coverage state = Coverage::Missing;
  bool no_expiry = false;  // covered by a record without TTL
  std::int64_t gap_ms = 0; // expiring: how long the event stays replayable after its record lapses
};

// A value is a claim marker when it equals one, or starts with one followed by ':'
// ("processing:<run>", as replay writes it).
bool is_in_progress(std::string_view value, const std::vector<std::string>& markers);

// Whether a record is a claim: a layout's (its library's status), or a value the layout did not read
// (a plain value, a record not in the layout's shape) that is a claim marker. A record the layout
// read is not compared with the markers: its text is the library's, never a marker, and comparing
// it touched a kilobyte-sized value once more per event (tests/bench/layouts).
bool is_claim(const RecordState& record, const std::vector<std::string>& markers);

// A layout's record as its library reads it at `now_ms`: past its own expiry (whatever the key's
// TTL), and, for a claim with a lease of its own, past that lease.
bool past_own_expiry(const RecordState& record, std::int64_t now_ms);
bool claim_lapsed(const RecordState& record, std::int64_t now_ms);

// Whether a delivery after a seek applies an event in this state again: no id, expired, missing,
// and an orphaned claim where the layout's library takes orphans over (policy.orphans_reapplied).
bool reapplied_on_seek(Coverage state, const CoveragePolicy& policy);

// The rules of docs/design.md "Coverage" in order (rule 1, no id, is decided before a lookup).
Verdict classify(const RecordState& record, const EventFacts& event, const CoveragePolicy& policy);

// How long a present record has left: its pttl, or for an inbox row processed_at + the policy's TTL
// (the inbox retention) - now, never below zero (none when that TTL is unknown or infinite).
std::optional<std::int64_t> remaining_ms(const RecordState& record, const CoveragePolicy& policy);

// The TTL a consumer configured, bounded by what present records show: a record was written at or
// after its event's timestamp, so max(pttl) <= TTL <= min(pttl + now - ts).
class TtlEstimator {
public:
  void observe(std::int64_t pttl_ms, std::int64_t timestamp_ms, std::int64_t now_ms);
  bool empty() const { return !m_low; }
  std::optional<std::int64_t> low() const { return m_low; }
  std::optional<std::int64_t> high() const { return m_high; }

private:
  std::optional<std::int64_t> m_low;
  std::optional<std::int64_t> m_high;
};

} // namespace dedupctl::core
