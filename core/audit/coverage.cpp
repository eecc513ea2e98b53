#include "core/audit/coverage.hpp"

#include <algorithm>

namespace dedupctl::core {

std::string_view to_string(Coverage state) {
  switch (state) {
  case Coverage::NoId:
    return "no_id";
  case Coverage::Pending:
    return "pending";
  case Coverage::InProgress:
    return "in_progress";
  case Coverage::Orphaned:
    return "orphaned";
  case Coverage::Covered:
    return "covered";
  case Coverage::Expiring:
    return "expiring";
  case Coverage::Expired:
    return "expired";
  case Coverage::Missing:
    return "missing";
  }
  return "missing";
}

bool is_in_progress(std::string_view value, const std::vector<std::string>& markers) {
  for (const auto& marker : markers) {
    if (value == marker || (value.size() > marker.size() && value.starts_with(marker) && value[marker.size()] == ':')) {
      return true;
    }
  }
  return false;
}

bool is_claim(const RecordState& record, const std::vector<std::string>& markers) {
  return record.claim || (!record.layout_read && is_in_progress(record.value, markers));
}

bool past_own_expiry(const RecordState& record, std::int64_t now_ms) {
  return record.expires_at_ms && *record.expires_at_ms <= now_ms;
}

bool claim_lapsed(const RecordState& record, std::int64_t now_ms) {
  return record.claim_until_ms && *record.claim_until_ms <= now_ms;
}

bool reapplied_on_seek(Coverage state, const CoveragePolicy& policy) {
  return state == Coverage::NoId || state == Coverage::Expired || state == Coverage::Missing ||
         (state == Coverage::Orphaned && policy.orphans_reapplied);
}

Verdict classify(const RecordState& record, const EventFacts& event, const CoveragePolicy& policy) {
  Verdict verdict;
  if (record.kind == RecordState::Kind::Absent) {
    if (event.committed && event.offset >= *event.committed) {
      verdict.state = Coverage::Pending; // not consumed yet: nothing is wrong
    } else if (auto ttl = policy.ttl.finite_ms();
               ttl && event.timestamp_ms + *ttl + policy.max_lag_ms < policy.now_ms) {
      verdict.state = Coverage::Expired;
    } else {
      verdict.state = Coverage::Missing; // within its TTL, never expiring, or the TTL is unknown
    }
    return verdict;
  }
  if (past_own_expiry(record, policy.now_ms)) {
    verdict.state = Coverage::Expired; // the library's own expiry passed: it applies the event again
    return verdict;
  }
  if (record.taken_over) {
    verdict.state = Coverage::Expired; // the library cannot read it and takes it over: it applies the event again
    return verdict;
  }
  if (record.fails) {
    verdict.state = Coverage::InProgress; // the library raises on it: no delivery applies the event, as a claim
    return verdict;                       // without a lease blocks it
  }
  if (is_claim(record, policy.in_progress_values)) {
    if (record.claim) { // a layout's claim: the library that wrote it decides by the claim's own lease,
                        // and one without a lease blocks every delivery while the key lives
      verdict.state = claim_lapsed(record, policy.now_ms) ? Coverage::Orphaned : Coverage::InProgress;
      return verdict;
    }
    bool consumed_past = event.committed && event.offset < *event.committed;
    bool lease_over = event.timestamp_ms < policy.now_ms - policy.lease_ms;
    verdict.state = consumed_past || lease_over ? Coverage::Orphaned : Coverage::InProgress;
    return verdict;
  }
  verdict.state = Coverage::Covered;
  auto remaining = remaining_ms(record, policy);
  if (!remaining) {
    verdict.no_expiry = true;
    return verdict;
  }
  if (policy.retention.is_infinite()) {
    verdict.state = Coverage::Expiring; // every TTL lapses while the event stays replayable
    verdict.gap_ms = -1;
  } else if (auto retention = policy.retention.finite_ms()) {
    std::int64_t lapses = policy.now_ms + *remaining;
    std::int64_t replayable_until = event.timestamp_ms + *retention;
    if (lapses < replayable_until) {
      verdict.state = Coverage::Expiring;
      verdict.gap_ms = replayable_until - lapses;
    }
  }
  return verdict;
}

std::optional<std::int64_t> remaining_ms(const RecordState& record, const CoveragePolicy& policy) {
  if (!record.processed_at_ms) {
    if (record.expires_at_ms) { // the library's expiry, or the key's TTL where that comes first
      std::int64_t left = std::max<std::int64_t>(0, *record.expires_at_ms - policy.now_ms);
      return record.pttl_ms ? std::min(*record.pttl_ms, left) : left;
    }
    return record.pttl_ms;
  }
  auto retention = policy.ttl.finite_ms();
  if (!retention) {
    return std::nullopt;
  }
  return std::max<std::int64_t>(0, *record.processed_at_ms + *retention - policy.now_ms);
}

void TtlEstimator::observe(std::int64_t pttl_ms, std::int64_t timestamp_ms, std::int64_t now_ms) {
  std::int64_t upper = pttl_ms + std::max<std::int64_t>(0, now_ms - timestamp_ms);
  m_low = m_low ? std::max(*m_low, pttl_ms) : pttl_ms;
  m_high = m_high ? std::min(*m_high, upper) : upper;
}

} // namespace dedupctl::core
