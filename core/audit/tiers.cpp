#include "core/audit/tiers.hpp"

#include <fmt/format.h>

#include <limits>

namespace dedupctl::core {

TierChain::TierChain(std::vector<Tier> tiers, std::size_t max_examples)
    : m_tiers(std::move(tiers)), m_held_by_others(m_tiers.size(), 0),
      m_gaps(m_tiers.size(), FindingBuilder(max_examples)), m_verdicts(m_tiers.size()) {}

int TierChain::rank(const Verdict& verdict, const Tier& tier) const {
  switch (verdict.state) {
  case Coverage::Covered:
    return 0;
  case Coverage::Expiring:
    return 1;
  case Coverage::InProgress:
    return 2; // a claim: every delivery waits for it or skips
  case Coverage::Orphaned:
    return tier.policy.orphans_reapplied ? k_unprotected : 3;
  default:
    return k_unprotected;
  }
}

namespace {

// Of two expiring records, the one that lapses later protects longer; -1 (the topic keeps events
// forever) is the longest gap.
std::int64_t gap_order(const Verdict& verdict) {
  return verdict.gap_ms < 0 ? std::numeric_limits<std::int64_t>::max() : verdict.gap_ms;
}

} // namespace

std::optional<std::size_t> TierChain::protecting(std::span<const RecordState* const> records, const EventFacts& facts,
                                                 bool& lapsed_somewhere) {
  std::optional<std::size_t> best;
  int best_rank = k_unprotected;
  lapsed_somewhere = false;
  for (std::size_t i = 0; i < m_tiers.size(); ++i) {
    const RecordState& record = *records[i];
    m_verdicts[i] = classify(record, facts, m_tiers[i].policy);
    if (!m_tiers[i].survives_restart) {
      continue; // a window in memory: empty after the restart a seek is
    }
    int r = rank(m_verdicts[i], m_tiers[i]);
    lapsed_somewhere = lapsed_somewhere || (record.kind == RecordState::Kind::Present && r == k_unprotected);
    if (r < best_rank ||
        (r == best_rank && best && r == 1 && gap_order(m_verdicts[i]) < gap_order(m_verdicts[*best]))) {
      best = i;
      best_rank = r;
    }
  }
  return best;
}

const RecordState& TierChain::best(const Event& event, const Identity& identity, std::span<const std::string_view> keys,
                                   std::span<const RecordState* const> records, std::optional<std::int64_t> committed) {
  EventFacts facts{event.timestamp_ms, event.offset, committed};
  bool lapsed_somewhere = false; // a record is there, but its library applies the event again
  std::optional<std::size_t> best = protecting(records, facts, lapsed_somewhere);
  int best_rank = best ? rank(m_verdicts[*best], m_tiers[*best]) : k_unprotected;
  m_best = RecordState{};
  if (!best) {
    if (lapsed_somewhere) {
      m_best.kind = RecordState::Kind::Present;
      m_best.taken_over = true; // classified as expired: the event is applied again
    }
    return m_best;
  }
  for (std::size_t i = 0; i < m_tiers.size(); ++i) {
    if (i == *best || !m_tiers[i].survives_restart || m_verdicts[i].state == Coverage::Pending) {
      continue;
    }
    if (rank(m_verdicts[i], m_tiers[i]) > best_rank) {
      ++m_held_by_others[i];
      m_gaps[i].add(event.partition, [&] {
        Example ex = example_of(event, identity, keys[i]);
        ex.note = fmt::format("{} here; {} holds it ({})", to_string(m_verdicts[i].state), m_tiers[*best].name,
                              to_string(m_verdicts[*best].state));
        return ex;
      });
    }
  }
  const Tier& tier = m_tiers[*best];
  const Verdict& verdict = m_verdicts[*best];
  m_best.kind = RecordState::Kind::Present;
  switch (verdict.state) {
  case Coverage::Covered:
  case Coverage::Expiring:
    m_best.pttl_ms = verdict.no_expiry ? std::nullopt : remaining_ms(*records[*best], tier.policy);
    break;
  case Coverage::InProgress:
    m_best.claim = true; // a claim without a lease of its own: in progress
    break;
  default: // orphaned, and its library leaves it be
    m_best.claim = true;
    m_best.claim_until_ms = tier.policy.now_ms; // lapsed: orphaned
    break;
  }
  return m_best;
}

std::vector<Finding> TierChain::findings() const {
  std::vector<Finding> out;
  for (std::size_t i = 0; i < m_tiers.size(); ++i) {
    auto finding = m_gaps[i].build(
        "tier-gap-covered", Severity::Info,
        fmt::format("{} lacks or lets lapse {} events that another tier holds", m_tiers[i].name, m_gaps[i].count()),
        "No event is applied again for it: a later lookup finds the record. The tier's own counts are in "
        "summary.tiers; the verdict is the best tier's.");
    if (finding) {
      out.push_back(std::move(*finding));
    }
  }
  return out;
}

TtlDecision TierChain::chain_ttl(const std::vector<TtlDecision>& tiers, const std::vector<Tier>& chain) {
  std::optional<TtlDecision> longest;
  for (std::size_t i = 0; i < tiers.size() && i < chain.size(); ++i) {
    if (!chain[i].survives_restart) {
      continue;
    }
    const TtlDecision& ttl = tiers[i];
    auto order = [](const Span& span) {
      return span.is_infinite() ? 2 : span.known() ? 0 : 1; // then the longest finite
    };
    if (!longest || order(ttl.span) > order(longest->span) ||
        (order(ttl.span) == 0 && order(longest->span) == 0 && *ttl.span.finite_ms() > *longest->span.finite_ms())) {
      longest = ttl;
    }
  }
  return longest.value_or(window_ttl());
}

} // namespace dedupctl::core
