#include "core/audit/ttl.hpp"

#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

namespace {

// The margin a TTL needs beyond retention + max lag: a consumer that falls behind, or a clock skew.
constexpr std::int64_t k_margin_ms = k_ms_per_day;

} // namespace

std::string describe(const TtlDecision& decision) {
  if (decision.source == TtlSource::Flag) {
    return std::string(origin_name(decision.origin));
  }
  if (decision.source == TtlSource::InboxRetentionFlag && decision.origin != ValueOrigin::Flag) {
    return fmt::format("inbox-retention, {}", origin_name(decision.origin));
  }
  return std::string(describe(decision.source));
}

std::string describe(const RetentionDecision& decision) {
  std::string out(decision.source == RetentionSource::Flag ? origin_name(decision.origin)
                                                           : report_name(decision.source));
  return decision.compacted ? out + ", compacted" : out;
}

std::string_view report_name(TtlSource source) {
  switch (source) {
  case TtlSource::Flag:
  case TtlSource::InboxRetentionFlag:
    return "flag";
  case TtlSource::Estimated:
  case TtlSource::InboxRetentionEstimated:
    return "estimate";
  case TtlSource::None:
    return "unknown";
  case TtlSource::Window:
    return "window";
  case TtlSource::Projection:
    return "projection";
  }
  return "unknown";
}

std::string_view describe(TtlSource source) {
  switch (source) {
  case TtlSource::Flag:
    return "flag";
  case TtlSource::Estimated:
    return "estimated from the records";
  case TtlSource::InboxRetentionFlag:
    return "--inbox-retention";
  case TtlSource::InboxRetentionEstimated:
    return "estimated from the oldest row";
  case TtlSource::None:
    return "unknown";
  case TtlSource::Window:
    return "a window in memory: nothing survives a restart";
  case TtlSource::Projection:
    return "a guard's projection: its rows never lapse";
  }
  return "unknown";
}

TtlDecision window_ttl() {
  TtlDecision decision;
  decision.span = Span::finite(0);
  decision.source = TtlSource::Window;
  return decision;
}

TtlDecision projection_ttl() {
  TtlDecision decision;
  decision.span = Span::infinite();
  decision.source = TtlSource::Projection;
  return decision;
}

TtlDecision declared_ttl(const Span& flag) {
  TtlDecision decision;
  if (flag.known()) {
    decision.span = flag;
    decision.source = TtlSource::Flag;
  }
  return decision;
}

TtlDecision inbox_ttl(const std::optional<Span>& flag, std::optional<std::int64_t> oldest_row_age_ms) {
  TtlDecision decision;
  if (flag && flag->known()) {
    decision.span = *flag;
    decision.source = TtlSource::InboxRetentionFlag;
  } else if (oldest_row_age_ms) {
    decision.span = Span::finite(*oldest_row_age_ms);
    decision.source = TtlSource::InboxRetentionEstimated;
  }
  return decision;
}

TtlDecision with_estimate(TtlDecision decision, const TtlEstimator& estimator) {
  if (estimator.empty()) {
    return decision;
  }
  decision.estimate_low = estimator.low();
  decision.estimate_high = estimator.high();
  if (decision.source == TtlSource::None) {
    decision.span = Span::finite(*estimator.high()); // classify with the upper bound (docs/design.md "Coverage")
    decision.source = TtlSource::Estimated;
  }
  return decision;
}

std::string_view report_name(RetentionSource source) {
  switch (source) {
  case RetentionSource::Flag:
    return "flag";
  case RetentionSource::Broker:
    return "broker";
  case RetentionSource::Unknown:
    return "unknown";
  }
  return "unknown";
}

std::string ttl_needed(const Span& retention, std::int64_t max_lag_ms) {
  if (retention.is_infinite()) {
    return "no expiry at all (the topic keeps events forever)";
  }
  if (auto ms = retention.finite_ms()) {
    return fmt::format("at least {} (retention {} + max lag {} + 1 day)",
                       format_duration(saturating_add(saturating_add(*ms, max_lag_ms), k_margin_ms)),
                       format_duration(*ms), format_duration(max_lag_ms));
  }
  return "at least the topic's retention + max lag + 1 day";
}

std::optional<Finding> ttl_vs_retention(std::string_view subject, const Span& ttl, const Span& retention,
                                        std::int64_t max_lag_ms, bool compacted) {
  auto ttl_ms = ttl.finite_ms();
  if (!ttl_ms || !retention.known()) {
    return std::nullopt;
  }
  auto retention_ms = retention.finite_ms();
  Finding f;
  f.count = 1;
  if (retention.is_infinite() || *ttl_ms < *retention_ms) {
    f.id = "ttl-shorter-than-retention";
    f.severity = Severity::Error;
    f.title = fmt::format("the {} is shorter than the topic's retention ({})", subject, to_text(retention));
    f.advice = fmt::format("A seek or replay from the log start re-applies every event older than {}. Keep records "
                           "for {}.",
                           to_text(ttl), ttl_needed(retention, max_lag_ms));
    if (compacted) {
      f.advice += " The topic is compacted: the latest event of every key is never deleted, so it stays replayable "
                  "however old it is and no finite TTL covers it. Keep those records without expiry (an inbox "
                  "row, a key without TTL), or make their handlers idempotent.";
    }
    return f;
  }
  if (*ttl_ms < saturating_add(saturating_add(*retention_ms, max_lag_ms), k_margin_ms)) {
    f.id = "ttl-margin-thin";
    f.severity = Severity::Warning;
    f.title = fmt::format("the {} barely exceeds the retention ({}) plus max lag ({})", subject, to_text(retention),
                          format_duration(max_lag_ms));
    f.advice =
        fmt::format("A lagging consumer or a clock skew opens a gap at the edge of the log. Keep records for {}.",
                    ttl_needed(retention, max_lag_ms));
    return f;
  }
  return std::nullopt;
}

Span parse_ttl(std::string_view text, std::string_view flag) {
  if (text == "none") {
    return Span::infinite();
  }
  auto ms = parse_duration(text, flag);
  if (ms <= 0) {
    throw UsageError(fmt::format("invalid {} '{}': a TTL must be longer than 0 (a record that lapses at once protects "
                                 "nothing); say none for records that never expire",
                                 flag, text));
  }
  return Span::finite(ms);
}

RetentionDecision decide_retention(const Span& flag, const std::vector<std::string>& topics, TopicConfigs* configs,
                                   ValueOrigin origin) {
  if (flag.known()) {
    return {flag, RetentionSource::Flag, origin};
  }
  if (configs && !topics.empty()) {
    if (auto described = configs->retention(topics.front())) {
      auto span = retention_from_configs(*described);
      if (span.known()) {
        return {span, RetentionSource::Broker, ValueOrigin::Flag, is_compacted(*described)};
      }
    }
  }
  return {Span::unknown(), RetentionSource::Unknown};
}

TtlDecision decide_inbox_ttl(InboxStore& inbox, const std::optional<Span>& flag, std::int64_t now_ms,
                             ValueOrigin origin) {
  auto decision = inbox_ttl(flag, flag ? std::nullopt : inbox.oldest_row_age_ms(now_ms));
  decision.origin = origin;
  return decision;
}

} // namespace dedupctl::core
