#pragma once

#include "core/audit/audit_options.hpp"
#include "core/audit/audit_result.hpp"
#include "core/audit/bloom_pending.hpp"
#include "core/audit/coverage.hpp"
#include "core/audit/effects.hpp"
#include "core/audit/ttl.hpp"
#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/identity/key_template.hpp"
#include "core/replay_summary.hpp"
#include "core/side_effect.hpp"
#include "core/util/flat_map.hpp"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::core {

// Classifies every event against its record and derives the placement's findings. Streaming:
// events are observed batch by batch; absent records wait for finish() only when the TTL must be
// estimated first (then 32 bytes an absent event are kept).
class AuditAnalyzer {
public:
  explicit AuditAnalyzer(AuditOptions options);

  // The partition's committed offset (nullopt without a group) and replay window.
  void set_partition(const std::string& topic, std::int32_t partition, std::optional<std::int64_t> committed,
                     std::optional<WindowBounds> window);

  // `effect`: the consumer's effect for this event, when AuditOptions::effects.
  void observe(const Event& event, const Identity& identity, std::string_view dedup_key, const RecordState& record,
               Effect effect = Effect::Unchecked);

  // A version guard's verdict (--layout version-guard), decided by the version walk over the whole
  // range and handed in read order: `state` Covered, Missing (the projection is below the event:
  // Pending at or past the committed offset) or NoId; `superseded`, a missing event a higher version
  // of its entity in the range follows (summary.superseded, a part of missing); `applied`, whether a
  // replay of the window applies it, in place of the state's rule; `note`, its examples'.
  void observe_guarded(const Event& event, const Identity& identity, std::string_view dedup_key, Coverage state,
                       bool superseded, bool applied, std::string_view note);

  // Key collisions decided elsewhere (a merge of shards).
  void add_key_collisions(const FindingBuilder& collisions);

  // The TTL that finish() classifies the deferred absent records by and reports, in place of the
  // estimate from the records observed: a chain of tiers (core::TierChain::chain_ttl) settles it from
  // each tier's own, once their analyzers have finished.
  void settle_ttl(TtlDecision ttl) { m_settled_ttl = std::move(ttl); }

  AuditResult finish();

private:
  struct PartitionState {
    PartitionCoverage coverage;
    std::optional<std::int64_t> committed;
    std::optional<std::int64_t> max_bad_offset; // last external re-application in the window
    // The last one whose effect was looked up and found absent (a repair, not a duplicate), which
    // counts as a duplicate again when the effects lookup turns out never to match.
    std::optional<std::int64_t> max_repair_offset;
    // (offset, ts) of the window event right after the last external re-application so far:
    // safe_from's timestamp when its offset is max_bad_offset + 1 (else the window start's). One
    // pair a partition, however many events are re-applied.
    std::optional<std::pair<std::int64_t, std::int64_t>> after_bad;
    bool last_bad = false; // the previous window event is an external re-application
  };
  struct Deferred {
    std::int64_t timestamp_ms;
    std::int64_t offset;
    PartitionState* partition; // map nodes are stable
    std::uint16_t type;
    std::int16_t example; // index into m_deferred_examples, or -1
    Effect effect;
    std::int16_t effect_example = -1; // index into m_deferred_effect_examples, or -1
  };

  PartitionState& partition_of(const Event& event);
  // The event's place in its partition's window (a seek by time found), and whether it is in it.
  bool enter(PartitionState& partition, const Event& event);
  std::uint16_t type_index(std::string_view type);
  void count(PartitionState& partition, Coverage state, std::uint16_t type, std::int64_t offset,
             std::int64_t timestamp_ms, bool in_window, Effect effect);
  void reapplied(PartitionState& partition, std::uint16_t type, std::int64_t offset, Effect effect);
  // The effect's verdict beside the state, with an example for the lost and unguarded findings.
  template <typename MakeExample>
  void count_effect(Coverage state, Effect effect, std::int32_t partition, MakeExample&& make_example);
  // `make_example` is only called while the state still wants examples.
  template <typename MakeExample>
  void add_example(Coverage state, std::int32_t partition, MakeExample&& make_example, std::int64_t gap_ms = 0);
  bool in_window(const PartitionState& partition, std::int64_t offset) const;
  // Whether re-applying an event of this type has effects outside (unknown types do).
  bool external(std::uint16_t type) const;

  AuditOptions m_options;
  bool m_defer;
  std::map<std::pair<std::string, std::int32_t>, PartitionState> m_partitions;
  std::pair<const void*, std::int32_t> m_last_key{nullptr, -1};
  PartitionState* m_last = nullptr;
  FlatHashMap<PartitionState*> m_partition_cache{256}; // by (topic text's address, partition), checked
  std::vector<std::string> m_types;
  std::map<std::string, std::uint16_t, std::less<>> m_type_index;
  std::vector<std::int64_t> m_reapplied_by_type;
  AuditResult m_result;
  TtlEstimator m_estimator;
  std::vector<Deferred> m_deferred;
  std::vector<Example> m_deferred_examples;
  std::vector<Example> m_deferred_effect_examples;
  std::array<FindingBuilder, k_coverage_states> m_examples;
  FindingBuilder m_collisions;
  FindingBuilder m_reapplied;
  FindingBuilder m_lost;
  FindingBuilder m_unguarded;
  std::int64_t m_max_gap_ms = 0;
  // --effects: events marked processed whose effect was looked up, and those of them it was found for.
  std::int64_t m_processed_looked_up = 0, m_processed_matched = 0;
  KeyTemplate::Injectivity m_injectivity;
  bool m_check_collisions;
  KeyOwners m_key_owner;
  std::optional<BloomPending> m_bloom; // AuditOptions::bloom_filter
  std::optional<TtlDecision> m_settled_ttl;
};

} // namespace dedupctl::core
