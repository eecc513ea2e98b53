#pragma once

#include "core/audit/coverage.hpp"
#include "core/audit/ttl.hpp"
#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// A placement of several tiers, looked up in order (--store memory: --store redis://… --store
// postgres://…; docs/windows.md "Tiers"). An event is protected when any tier holds it, and its state
// is the best tier's. Pure: every tier's record and policy is handed in.
namespace dedupctl::core {

struct Tier {
  std::string name;             // "redis://host:6379 (tier 2)", as the findings name it
  CoveragePolicy policy;        // its own lease, claim markers and orphans rule; an inbox's TTL (decided up front)
  bool survives_restart = true; // false: a window in memory, which holds nothing across a restart or a seek
};

// Which tier protects an event, and the record the chain's own analyzer is to classify in its place:
// one that the coverage rules read as the best tier's verdict under any policy of the same retention.
class TierChain {
public:
  TierChain(std::vector<Tier> tiers, std::size_t max_examples);

  // `records[i]`: tier i's record of the event. The record returned lives until the next call.
  const RecordState& best(const Event& event, const Identity& identity, std::span<const std::string_view> keys,
                          std::span<const RecordState* const> records, std::optional<std::int64_t> committed);

  // The tier whose record protects an event best (nullopt: none does), each tier's verdict kept for
  // verdicts(); `lapsed_somewhere` is set when a durable tier holds a record that its library applies
  // the event again over. What best() and a trace of a chain decide by.
  std::optional<std::size_t> protecting(std::span<const RecordState* const> records, const EventFacts& facts,
                                        bool& lapsed_somewhere);
  const std::vector<Verdict>& verdicts() const { return m_verdicts; }

  // Per tier, the events it lacks or lets lapse that another tier holds.
  const std::vector<std::int64_t>& held_by_others() const { return m_held_by_others; }
  // An info finding a tier whose gap another tier covers ("tier-gap-covered").
  std::vector<Finding> findings() const;

  // The chain's TTL, once each tier's is settled (its estimate included): absent from every tier, an
  // event lapsed only if it lapsed in the tier that keeps records longest. Windows in memory do not
  // count; infinite wins, then unknown, then the longest.
  static TtlDecision chain_ttl(const std::vector<TtlDecision>& tiers, const std::vector<Tier>& chain);

private:
  // How well a tier's verdict protects the event: lower is better; k_unprotected for none.
  static constexpr int k_unprotected = 4;
  int rank(const Verdict& verdict, const Tier& tier) const;

  std::vector<Tier> m_tiers;
  std::vector<std::int64_t> m_held_by_others;
  std::vector<FindingBuilder> m_gaps;
  std::vector<Verdict> m_verdicts;
  RecordState m_best;
};

} // namespace dedupctl::core
