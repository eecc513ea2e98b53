#pragma once

#include "core/audit/coverage.hpp"
#include "core/audit/retention.hpp"
#include "core/finding.hpp"
#include "core/span.hpp"
#include "core/store/dedup_store.hpp"
#include "core/value_origin.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// How long a dedup record lives, and how long the topic keeps its event: each decided once, here,
// with where the figure came from, and used by audit, trace, check, replay and every renderer.
namespace dedupctl::core {

enum class TtlSource {
  Flag,                    // --ttl (or a declaration's ttl)
  Estimated,               // bounded by the records' remaining TTLs (docs/design.md "Coverage", the TTL)
  InboxRetentionFlag,      // an inbox: --inbox-retention
  InboxRetentionEstimated, // an inbox: at least the age of its oldest row
  None,                    // not declared and not estimable
  Window,                  // an in-process window (memory:): a record lives until the consumer restarts (0)
  Projection,              // a version guard's projection (--layout version-guard): its rows never lapse
};

// report-v1's `ttl_source`: "flag", "estimate", "unknown" or "window".
std::string_view report_name(TtlSource source);
// For people: "flag", "estimated from the records", "--inbox-retention", "estimated from the oldest
// row", "unknown".
std::string_view describe(TtlSource source);

struct TtlDecision {
  Span span; // what classifies the events: declared, the estimate's upper bound, or unknown
  TtlSource source = TtlSource::None;
  ValueOrigin origin = ValueOrigin::Flag; // of a declared figure (Flag, InboxRetentionFlag)
  // What present records say of the TTL: max(pttl) <= TTL <= min(pttl + now - ts), when any record
  // with a TTL was seen (reported beside a declared TTL too).
  std::optional<std::int64_t> estimate_low, estimate_high;

  bool estimated() const { return source == TtlSource::Estimated || source == TtlSource::InboxRetentionEstimated; }
};

// For people, with where a declared TTL came from: "flag", "config", "environment",
// "--inbox-retention", "inbox-retention, config", or describe(source).
std::string describe(const TtlDecision& decision);

// A Redis or snapshot placement: the declared TTL (--ttl), or None, which the audit then estimates.
TtlDecision declared_ttl(const Span& flag);
// An in-process window's: nothing outlives a restart, a rebalance or a seek, so a record's time after
// the consumer moved on is 0.
TtlDecision window_ttl();
// A version guard's: the projection keeps each entity's row (infinite, source Projection).
TtlDecision projection_ttl();
// An inbox: its TTL is the cleanup job's retention, counted from processed_at: --inbox-retention,
// else at least the age of the oldest row, else unknown.
TtlDecision inbox_ttl(const std::optional<Span>& flag, std::optional<std::int64_t> oldest_row_age_ms);
// After the records were seen: an undeclared TTL becomes the estimate's upper bound (Estimated), or
// stays None when no record had a TTL; a declared one keeps its span and gains the bounds.
TtlDecision with_estimate(TtlDecision decision, const TtlEstimator& estimator);

enum class RetentionSource { Flag, Broker, Unknown };
std::string_view report_name(RetentionSource source); // "flag", "broker", "unknown"

struct RetentionDecision {
  Span span;
  RetentionSource source = RetentionSource::Unknown;
  ValueOrigin origin = ValueOrigin::Flag; // of a declared retention (Flag)
  bool compacted = false;                 // the broker's cleanup.policy has compact
};

// For people: "flag", "config", "environment", "broker" or "unknown".
std::string describe(const RetentionDecision& decision);

// What a TTL must be at least for a replay from the log start to find every record: "no expiry at
// all (…)" for an infinite retention, "at least 8d (retention 7d + max lag 0s + 1 day)".
std::string ttl_needed(const Span& retention, std::int64_t max_lag_ms);

// The one TTL-vs-retention rule: `ttl-shorter-than-retention` (error) when the TTL is finite and
// below the retention (or the retention is infinite), `ttl-margin-thin` (warning) when it is below
// retention + max lag + 1 day. `subject` names the TTL in the title ("TTL (1h, flag)", "ttl (1d)").
// Nullopt when neither applies or a figure is unknown.
// A compacted topic's advice says what compaction means for a TTL.
std::optional<Finding> ttl_vs_retention(std::string_view subject, const Span& ttl, const Span& retention,
                                        std::int64_t max_lag_ms, bool compacted = false);

// --ttl DURATION | none (or another flag of that form, named in the error). Throws UsageError.
Span parse_ttl(std::string_view text, std::string_view flag = "--ttl");

// --retention when given; otherwise the broker's configs of the first topic; otherwise unknown.
// `origin` says where the declared figure came from (flag, config, environment).
RetentionDecision decide_retention(const Span& flag, const std::vector<std::string>& topics, TopicConfigs* configs,
                                   ValueOrigin origin = ValueOrigin::Flag);

// An inbox's TTL, the cleanup job's retention: --inbox-retention, else at least the age of the
// oldest row, else unknown. `origin` says where a declared figure came from. Throws
// UnreachableError when the inbox cannot be asked.
TtlDecision decide_inbox_ttl(InboxStore& inbox, const std::optional<Span>& flag, std::int64_t now_ms,
                             ValueOrigin origin = ValueOrigin::Flag);

} // namespace dedupctl::core
