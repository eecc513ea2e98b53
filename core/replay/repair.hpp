#pragma once

#include "core/finding.hpp"
#include "core/replay/replay.hpp"
#include "core/store/effect_store.hpp"
#include "core/store/record_state.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

// replay --repair-lost: the events whose record says processed while their effect is absent (lost:
// every delivery skips them) get their stale record released, compare-and-delete, and are published
// again, so the consumer claims and applies them once. docs/design.md "Repairing lost events".
namespace dedupctl::core {

// The records of a placement as a repair reads and releases them. Abstract because the records are
// Redis keys or hash fields (connectors/redis) or an inbox's rows (connectors/postgres); in unit
// tests a fake stands in.
class RecordRelease {
public:
  virtual ~RecordRelease() = default;
  virtual std::string kind() const = 0;
  // What each key holds now, remembered whole for release(). Throws UnreachableError.
  virtual void read(const std::vector<std::string>& keys, std::vector<RecordState>& out) = 0;
  // Deletes the keys i of the last read() where `release[i]`, each in one step and only if it still
  // holds exactly what read() saw; `released[i]` says which were. Throws UnreachableError.
  virtual void release(const std::vector<std::uint8_t>& release, std::vector<std::uint8_t>& released) = 0;
};

// One key's repair: Claimed (lost: released, or in a plan would be, and published) when `found` (what
// a replay would find on the record: Done for a completed one) is Done and the effect is absent;
// NotLost otherwise.
Claim repair_claim(Claim found, bool effect_present);

// The placement of a repair: keys are the consumer's dedup keys, second_keys() the effects' keys of
// the same events. Nothing is settled: a published event's record is the consumer's to write when it
// applies it, and a failed delivery leaves the event without a record, where a seek applies it.
class RepairPlacement final : public ReplayPlacement {
public:
  // `judge`: what a replay finds on a record (plan_claim or claim_found, as the layout reads it).
  RepairPlacement(RecordRelease& records, EffectStore& effects, std::function<Claim(const RecordState&)> judge)
      : m_records(records), m_effects(effects), m_judge(std::move(judge)) {}
  std::string kind() const override { return m_records.kind(); }
  bool wants_second_keys() const override { return true; }
  void second_keys(const std::vector<std::string>& keys) override { m_effect_keys = keys; }
  void plan(const std::vector<std::string>& keys, std::vector<Claim>& out) override;
  // Releases the lost records still as read: Claimed; Changed for one that changed meanwhile.
  void claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<Claim>& out) override;
  void settle(const std::vector<std::string>&, const std::vector<Claim>&, const std::vector<bool>&) override {}
  // A chunk at a time: a record released while an earlier chunk's event of the same id is still on
  // its way would be released twice over.
  std::size_t max_in_flight() const override { return 1; }

  // A run that keeps a checkpoint: `before_release` writes down the keys about to be released, before
  // they are; `released_before` holds those an interrupted run wrote down. Such a key found without
  // record and without effect is published again (OwnStale): that run may have died between its
  // release and its publish. (Published twice at worst, which the consumer's own claim absorbs.)
  std::function<void(const std::vector<std::string>&)> before_release;
  std::unordered_set<std::string> released_before;

  // Of the records judged so far: those a replay finds completed (processed), and those of them
  // whose effect was found. None found among many proves the effects lookup cannot match.
  std::int64_t processed() const { return m_processed; }
  std::int64_t matched() const { return m_matched; }
  bool proven() const { return m_matched > 0 || proven_before; }
  // Proven by an earlier pass over the whole range (a run's, before it releases anything): the part
  // a rerun has left may hold no processed event whose effect exists.
  bool proven_before = false;
  // A plan that only proves the lookup (before a run that releases): once proven, plan() answers
  // NotLost without asking either store.
  bool stop_when_proven = false;
  // The effects as the effects-unmatched finding names them ("--effects postgres://… (t.c)").
  std::string effects_source;
  std::vector<Finding> findings() const override;

private:
  void judge(const std::vector<std::string>& keys, std::vector<Claim>& out);

  RecordRelease& m_records;
  EffectStore& m_effects;
  std::function<Claim(const RecordState&)> m_judge;
  std::vector<std::string> m_effect_keys;
  std::vector<RecordState> m_states;
  std::vector<std::uint8_t> m_present, m_release, m_released;
  std::vector<std::string> m_releasing;
  std::int64_t m_processed = 0, m_matched = 0;
};

// The finding of a repair whose records changed between its read and its release:
// `repair-record-changed` (warning).
std::optional<Finding> repair_changed_finding(std::int64_t changed, const FindingBuilder& examples);

} // namespace dedupctl::core
