#pragma once

#include "core/audit/coverage.hpp"

#include <cstdint>

// The consumer's effect beside its dedup record (--effects): an event whose record says processed
// while its effect is absent is lost (no seek will apply it), one whose effect exists while no
// record guards it is unguarded (a seek applies it twice).
namespace dedupctl::core {

enum class Effect : std::uint8_t {
  Unchecked,  // no effects store, or no id to look it up by
  Applied,    // the effect exists
  NotApplied, // looked up, absent
};

// report-v1 summary.effects.
struct EffectCounts {
  std::int64_t checked = 0;
  std::int64_t applied = 0;
  std::int64_t not_applied = 0;
  std::int64_t lost = 0;      // ⊆ not_applied: the record says processed
  std::int64_t unguarded = 0; // ⊆ applied: no record guards it
};

// The record says the event was processed: covered or expiring (a completed record; an
// in-progress claim is not).
bool marks_processed(Coverage state);
// No record guards the event against a second delivery: expired, missing, orphaned or pending.
bool unguarded_state(Coverage state);

// Counts one event's effect; returns what it adds to the findings: lost, unguarded, or neither.
enum class EffectVerdict : std::uint8_t { None, Lost, Unguarded };
EffectVerdict count_effect(Coverage state, Effect effect, EffectCounts& counts);

} // namespace dedupctl::core
