#include "core/audit/effects.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

bool marks_processed(Coverage state) { return state == Coverage::Covered || state == Coverage::Expiring; }

bool unguarded_state(Coverage state) {
  return state == Coverage::Expired || state == Coverage::Missing || state == Coverage::Orphaned ||
         state == Coverage::Pending;
}

EffectVerdict count_effect(Coverage state, Effect effect, EffectCounts& counts) {
  if (effect == Effect::Unchecked) {
    return EffectVerdict::None;
  }
  ++counts.checked;
  if (effect == Effect::Applied) {
    ++counts.applied;
    if (unguarded_state(state)) {
      ++counts.unguarded;
      return EffectVerdict::Unguarded;
    }
    return EffectVerdict::None;
  }
  ++counts.not_applied;
  if (marks_processed(state)) {
    ++counts.lost;
    return EffectVerdict::Lost;
  }
  return EffectVerdict::None;
}

std::string reapply_split(const ReplaySummary& replay) {
  if (!replay.would_reapply_applied || !replay.would_reapply_unapplied) {
    return "";
  }
  return fmt::format("a seek over {} would re-apply {} events: {} already applied (charged twice), {} never applied",
                     replay.window, replay.would_reapply, *replay.would_reapply_applied,
                     *replay.would_reapply_unapplied);
}

Finding effects_unmatched_finding(const std::string& source, std::int64_t processed) {
  Finding f;
  f.id = "effects-unmatched";
  f.severity = Severity::Error;
  f.title = fmt::format("{} found the effect of none of the {} events marked processed: the lookup cannot be shown "
                        "to match, so no event is called lost by it",
                        source.empty() ? "--effects" : source, processed);
  f.advice = "An id column of a type the ids do not fit, a column or key template naming something else, or an "
             "--effects-id no output record carries finds nothing for any event. Check them against one event whose "
             "effect you know exists (dedupctl trace --effects … --event-id ID); until one is found, replay "
             "--repair-lost --execute refuses to release anything.";
  f.count = processed;
  return f;
}

} // namespace dedupctl::core
