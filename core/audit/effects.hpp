#pragma once

#include "core/audit/coverage.hpp"
#include "core/finding.hpp"
#include "core/replay_summary.hpp"

#include <cstdint>
#include <string>
#include <vector>

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

// Event i's effect after a batch's lookup: `key_of` its index into the looked-up keys (SIZE_MAX:
// no id, never looked up), `present` what the store answered for them.
inline Effect effect_at(const std::vector<std::size_t>& key_of, const std::vector<std::uint8_t>& present,
                        std::size_t i) {
  if (i >= key_of.size() || key_of[i] == SIZE_MAX) {
    return Effect::Unchecked;
  }
  return present[key_of[i]] != 0 ? Effect::Applied : Effect::NotApplied;
}

// With --effects, what a seek's re-applications are: "a seek over [seek, committed) would re-apply
// 131 events: 120 already applied (charged twice), 11 never applied"; "" without (the finding's
// title and every report format say it in these words).
std::string reapply_split(const ReplaySummary& replay);

// An effects lookup (named by `source`: "--effects postgres://… (t.c)") that found the effect of none
// of the `processed` events marked processed it was asked for: `effects-unmatched` (error). It proves
// nothing, so nothing is lost by its word, and a repair refuses to release on it.
Finding effects_unmatched_finding(const std::string& source, std::int64_t processed);

} // namespace dedupctl::core
