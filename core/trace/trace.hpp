#pragma once

#include "core/audit/coverage.hpp"
#include "core/scan/version_analyzer.hpp"
#include "core/window/window_analyzer.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// dedupctl trace: one event id through the log and the placement, and a verdict from explicit
// rules, each with its evidence (docs/report-v1.md "traces").
namespace dedupctl::core {

struct TraceOccurrence {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = -1;
  std::string type;
  std::uint64_t fingerprint = 0;      // of the payload
  std::int64_t size = 0;              // payload bytes
  std::optional<std::string> decoded; // the record a schema registry frame held, as canonical JSON
  std::optional<bool> delivered;      // below the group's committed offset; nullopt without --group
  // A window in memory (--store memory: --layout …): what the consumer's window, simulated from the
  // range's start, did with this copy; nullopt without a window.
  std::optional<WindowCall> window;
};

// What the placement holds for the id's dedup key now.
struct TraceRecord {
  enum class State { Absent, Present, Unknown } state = State::Unknown;
  std::optional<std::int64_t> pttl_ms; // remaining TTL; nullopt: none, or not known
  std::optional<std::string> value;
  std::optional<std::int64_t> processed_at_ms; // inbox rows
  std::optional<std::string> status;           // inbox rows
  // A record layout's record (core/store/layout): the fields the library wrote (report-v1
  // record.fields), whether it is the library's claim, and whether its own expiry or its claim's
  // lease passed, so that the library applies the event again although the key is still there.
  std::vector<std::pair<std::string, std::string>> fields;
  bool claim = false;
  bool lapsed = false;
  // A value the library cannot use (core::RecordState): taken over (lapsed too), or failed on.
  bool taken_over = false;
  bool fails = false;
};
std::string_view to_string(TraceRecord::State state); // absent, present, unknown

struct TraceVerdict {
  // applied-twice, state-lost, id-reused, claim-orphaned, exposed, effect-lost, bloom-false-positive,
  // protected, not-found
  std::string id;
  std::string text;
  std::vector<std::string> evidence;
};

struct TracePolicy {
  std::int64_t now_ms = 0;
  Span ttl; // the placement's TTL (an inbox: its retention)
  std::vector<std::string> in_progress_values{"processing", "INPROGRESS"};
  std::string layout = "plain"; // whose rules decide a lapsed record (record.lapsed)
  // A window in memory: what it is ("an LRU of 1000 ids"), and whether it is the whole placement, so
  // that a copy it re-applied was applied twice (in a chain, the tiers after it are asked next).
  std::string window;
  bool window_alone = false;
};

// One tier of a chain (--store repeated), as the trace reads it: its keys, its record, and the
// verdict it would give alone.
struct TraceTier {
  std::string name; // "tier 2 (redis://host:6379)"
  std::vector<std::string> dedup_keys;
  TraceRecord record;
  TraceVerdict verdict;
};

// One line of the timeline, in time order: the occurrences, and when the record lapses or lapsed.
struct TimelineEntry {
  std::int64_t at_ms = 0;
  std::string what;
};

struct Trace {
  std::string event_id;                     // as requested
  std::vector<TraceOccurrence> occurrences; // in log order (partition, offset)
  std::vector<std::string> dedup_keys;      // distinct, as the template renders them
  TraceRecord record;                       // of the first key
  std::vector<std::string> notes;           // the id looks truncated, has stray whitespace, …
  TraceVerdict verdict;
  std::vector<TimelineEntry> timeline;
  // --effects: whether the consumer's effect of this id exists (every occurrence's `effect`);
  // nullopt: not checked.
  std::optional<bool> effect;
  // A chain: each tier in lookup order, and the one whose record decides (`record` and `dedup_keys`
  // are its); nullopt when no tier protects the event.
  std::vector<TraceTier> tiers;
  std::optional<std::size_t> decided_by;
};

// The verdict, by the first rule that holds:
//   not-found       no occurrence in the range read
//   id-reused       occurrences with different payloads
//   bloom-false-positive  the window dropped every copy it was given: its Bloom filter said seen
//                   before the id was ever applied (policy.window)
//   claim-orphaned  an in-progress claim while an occurrence was delivered (below committed)
//   applied-twice   two delivered occurrences further apart than the TTL, or, with a window alone, a
//                   delivered copy the window had forgotten (re-applied)
//   state-lost      no record although the newest occurrence is within the TTL
//   exposed         no record, the event still in the log: a seek re-applies it
//   effect-lost     (--effects) a record that says processed while the effect is absent
//   protected       otherwise
// With --effects, exposed and state-lost say whether the seek applies it again or for the first time.
TraceVerdict decide_trace(const Trace& trace, const TracePolicy& policy);

// A version guard's placement (--layout version-guard): what the guard compares for the traced event.
// The trace's record is the projection's row of the event's entity, its value the entity's version.
struct GuardTrace {
  std::string entity;  // "": the event gave no entity or no version the order reads
  std::string version; // the event's
  VersionOrder order = VersionOrder::Numeric;
  bool higher_follows = false; // a higher version of the entity follows the event in the range
  // The entity's versions before the event in the range, in the order its consumer meets them: a
  // replay of the range from its start applies those above the projection first.
  std::vector<std::string> earlier;
};

// The verdict through a version guard, which applies a redelivery only if its version is above the
// projection's:
//   not-found       as decide_trace; an unknown record (an incomplete read) as decide_trace too
//   protected       the projection's version is at or above the event's: the guard drops a redelivery
//   exposed         below it, or no row: a redelivery applies it (its change is not in the
//                   projection); also when the event or the projection has no version the order
//                   compares, since nobody can say what the guard does with it. The text says when a
//                   replay of the range from its start applies a higher version first, and so drops it.
TraceVerdict decide_guard_trace(const Trace& trace, const GuardTrace& guard, const TracePolicy& policy);

// Notes on a requested id: stray whitespace, or ids in the log that start with it (truncated?).
std::vector<std::string> id_notes(std::string_view requested, const std::vector<std::string>& longer_ids_in_log);

std::vector<TimelineEntry> timeline(const Trace& trace, const TracePolicy& policy);

} // namespace dedupctl::core
