#pragma once

#include "core/audit/audit_options.hpp"
#include "core/audit/audit_result.hpp"
#include "core/audit/coverage.hpp"
#include "core/finding.hpp"

#include <array>
#include <cstdint>

// The words of an audit's findings, apart from the classification that counts what they say.
namespace dedupctl::core {

// What the classification kept for the findings: examples per state, the key collisions, the
// events a seek would re-apply, the longest gap of an expiring record.
struct AuditEvidence {
  const std::array<FindingBuilder, k_coverage_states>& examples;
  const FindingBuilder& collisions;
  const FindingBuilder& reapplied;
  std::int64_t max_gap_ms = 0;
  // With --effects: the events marked processed whose effect is absent, and those applied that
  // nothing guards.
  const FindingBuilder* lost = nullptr;
  const FindingBuilder* unguarded = nullptr;
};

// Appends the placement's findings to result.findings: the policy's (TTL vs retention, unknown
// figures, the key template) and the observed ones (ttl-gap, expiring-before-retention,
// missing-record, orphaned-claim, no-expiry, key-collision, replay-risk), from result's counts.
void add_audit_findings(const AuditOptions& options, const AuditEvidence& evidence, AuditResult& result);

} // namespace dedupctl::core
