#include "core/audit/audit_findings.hpp"

#include "core/audit/effects.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

namespace {

// A finding about the settings rather than events: counted once.
void add_policy_finding(std::vector<Finding>& findings, std::string id, Severity severity, std::string title,
                        std::string advice) {
  Finding f;
  f.id = std::move(id);
  f.severity = severity;
  f.title = std::move(title);
  f.count = 1;
  f.advice = std::move(advice);
  findings.push_back(std::move(f));
}

void push(std::vector<Finding>& findings, std::optional<Finding> finding) {
  if (finding) {
    findings.push_back(std::move(*finding));
  }
}

// From the settings: the TTL against the retention, what is unknown, the key template.
void add_policy_findings(const AuditOptions& options, const AuditResult& result, std::vector<Finding>& findings) {
  auto policy_finding = [&](std::string id, Severity severity, std::string title, std::string advice) {
    add_policy_finding(findings, std::move(id), severity, std::move(title), std::move(advice));
  };
  const Span& ttl = result.ttl.span;
  const Span& retention = options.policy.retention;
  // A window's "TTL" is its restart: the ttl-gap finding says what that means for a seek.
  bool window = result.ttl.source == TtlSource::Window;
  if (options.version_guard) {
    // The projection's rows never lapse, and they are keyed by entity: neither rule applies.
    if (!retention.known()) {
      policy_finding("retention-unknown", Severity::Info,
                     "the topic's retention is unknown: what a seek can reach was not bounded by it",
                     "Pass --retention DURATION (the topic's retention.ms, or infinite), or let dedupctl read it "
                     "with DescribeConfigs.");
    }
    return;
  }
  if (auto f = window ? std::nullopt
                      : ttl_vs_retention(fmt::format("{} ({}, {})",
                                                     options.window_store ? "window store's retention" : "TTL",
                                                     to_text(ttl), describe(result.ttl)),
                                         ttl, retention, options.policy.max_lag_ms, options.policy.compacted)) {
    findings.push_back(std::move(*f));
  }
  if (!retention.known()) {
    policy_finding("retention-unknown", Severity::Info,
                   "the topic's retention is unknown: TTL-vs-retention checks and expiring records were skipped",
                   "Pass --retention DURATION (the topic's retention.ms, or infinite), or let dedupctl read it with "
                   "DescribeConfigs.");
  }
  if (!ttl.known()) {
    policy_finding("ttl-unknown", Severity::Info,
                   "the TTL is neither declared nor estimable (no record with a TTL was found): absent records "
                   "count as missing",
                   "Pass --ttl DURATION (or none) as the consumer sets it.");
  }
  if (!options.key_template.uses(KeyTemplate::Part::EventId)) {
    policy_finding("key-template-lacks-event-id", Severity::Error,
                   fmt::format("the key template '{}' has no {{event_id}}", options.key_template.text()),
                   "Keys built from a business id (an order id) make distinct events share one record: the "
                   "consumer drops all but the first. Put {event_id} in the key.");
  }
  if (options.key_template.uses(KeyTemplate::Part::Offset) || options.key_template.uses(KeyTemplate::Part::Partition)) {
    policy_finding("key-template-uses-offset", Severity::Warning,
                   fmt::format("the key template '{}' uses the partition or offset", options.key_template.text()),
                   "Offsets change when a topic is recreated, mirrored or replayed from another cluster: the same "
                   "event gets a new key. Use {event_id}.");
  }
}

// Missing: a projection behind the log (a guard's), or dedup records lost.
Finding missing_finding(const AuditOptions& options, const FindingBuilder& builder, const AuditResult& result,
                        std::int64_t missing) {
  Finding f;
  if (options.state_guard) {
    f = *builder.build("projection-behind", Severity::Error,
                       fmt::format("{} events the consumer moved past move their entity to a state the projection "
                                   "is not at or past: their change is not in it",
                                   missing),
                       "The guard dropped them (an event read before the state it moves from, or a "
                       "transition-gap), or the projection was restored from an older backup or rebuilt. A replay "
                       "of the window applies those replay.would_reapply counts, in the consumer's order; the "
                       "others stay dropped.");
  } else if (options.version_guard) {
    f = *builder.build("projection-behind", Severity::Error,
                       fmt::format("{} events the consumer moved past carry a version above their entity's in the "
                                   "projection: their change is not in it ({} of them superseded by a higher "
                                   "version in the range)",
                                   missing, result.superseded),
                       "The guard dropped them (a version-regression says which), or the projection was restored "
                       "from an older backup or rebuilt. A replay of the window applies those "
                       "replay.would_reapply counts, in the consumer's order; the others stay dropped.");
  } else if (options.window_store) {
    f = *builder.build("missing-record", Severity::Error,
                       fmt::format("{} events a seek delivers again find no record of their id in the store's lookup "
                                   "window: the application forwards them again",
                                   missing),
                       "Never put under this key (check key-serde and --key-template against the processor's "
                       "store.put), put further from the event than the lookup window reaches, or deleted. A seek "
                       "re-applies these events.");
  } else {
    f = *builder.build(
        "missing-record", Severity::Error,
        result.ttl.span.known()
            ? fmt::format("{} dedup records are missing although their events are within the TTL", missing)
            : fmt::format("{} dedup records are missing (the TTL is unknown, so a lapse cannot be told from a loss)",
                          missing),
        options.dynamodb
            ? "Deleted (a DeleteItem, a cleanup job, a table restored from an older backup, DynamoDB's TTL deleting "
              "items whose expiration was set too soon), or never written (check --key-prefix and --layout against "
              "the consumer's code). A seek re-applies these events."
            : "Lost to a FLUSHDB, a failover to an empty replica, an eviction (check maxmemory-policy), or never "
              "written (check --key-template against the consumer's code). A seek re-applies these events.");
  }
  f.count = missing;
  return f;
}

// From the coverage states: expired, expiring, missing, orphaned, never expiring.
void add_state_findings(const AuditOptions& options, const AuditEvidence& evidence, const AuditResult& result,
                        std::vector<Finding>& findings) {
  std::string needed = ttl_needed(options.policy.retention, options.policy.max_lag_ms);
  auto state_builder = [&](Coverage state) -> const FindingBuilder& {
    return evidence.examples[static_cast<std::size_t>(state)];
  };
  auto n = [&](Coverage state) { return result.states[static_cast<std::size_t>(state)]; };
  if (n(Coverage::Expired) > 0 && result.ttl.source == TtlSource::Window) {
    Finding f = *state_builder(Coverage::Expired)
                     .build("ttl-gap", Severity::Error,
                            fmt::format("{} events are still replayable and the window in memory that deduplicated "
                                        "them is empty after a restart, a rebalance or a seek",
                                        n(Coverage::Expired)),
                            fmt::format("A seek into these events re-applies them all. Keep a durable record behind "
                                        "the window (Redis with a TTL of {}, or an inbox table).",
                                        needed));
    f.count = n(Coverage::Expired);
    findings.push_back(std::move(f));
  } else if (n(Coverage::Expired) > 0 && options.window_store) {
    Finding f = *state_builder(Coverage::Expired)
                     .build("ttl-gap", Severity::Error,
                            fmt::format("{} events are still replayable but the window store no longer returns their "
                                        "records: they are older than its retention behind its stream time",
                                        n(Coverage::Expired)),
                            fmt::format("A seek into these events re-applies them: the application forwards them "
                                        "again. Seek no further back than replay.safe_from, or keep the store's "
                                        "retention (the window store's retentionPeriod) at {}.",
                                        needed));
    f.count = n(Coverage::Expired);
    findings.push_back(std::move(f));
  } else if (n(Coverage::Expired) > 0) {
    Finding f =
        *state_builder(Coverage::Expired)
             .build("ttl-gap", Severity::Error,
                    fmt::format("{} events are still replayable but their dedup records expired", n(Coverage::Expired)),
                    fmt::format("A seek into these events re-applies them. Raise the TTL to {}.", needed));
    f.count = n(Coverage::Expired);
    findings.push_back(std::move(f));
  }
  if (n(Coverage::Expiring) > 0) {
    push(findings,
         state_builder(Coverage::Expiring)
             .build(
                 "expiring-before-retention", Severity::Warning,
                 fmt::format("{} dedup records lapse while their events stay replayable{}", n(Coverage::Expiring),
                             evidence.max_gap_ms > 0
                                 ? fmt::format(" (by up to {})", format_duration(evidence.max_gap_ms))
                                 : ""),
                 fmt::format("Today they protect; after they lapse a seek re-applies the events. Raise the TTL to {}.",
                             needed)));
  }
  if (n(Coverage::Missing) > 0) {
    findings.push_back(missing_finding(options, state_builder(Coverage::Missing), result, n(Coverage::Missing)));
  }
  if (n(Coverage::Orphaned) > 0) {
    push(findings,
         state_builder(Coverage::Orphaned)
             .build("orphaned-claim", Severity::Error,
                    fmt::format("{} events were claimed (in progress) and never completed", n(Coverage::Orphaned)),
                    "The consumer moved past these claims, or their lease ran out: a replay skips them although "
                    "their work never completed. Check the listed events, finish or compensate them, then DEL their "
                    "keys before seeking."));
  }
  if (result.no_expiry > 0) {
    bool one_key = !options.collection.empty();
    Finding f =
        *state_builder(Coverage::Covered)
             .build("no-expiry", Severity::Warning,
                    one_key ? fmt::format("{} dedup records never expire: they are members of {}, which only grows",
                                          result.no_expiry, options.collection)
                            : fmt::format("{} dedup records never expire", result.no_expiry),
                    one_key ? fmt::format("Every id ever seen stays in the one key {} (unbounded growth: memory, and "
                                          "an eviction takes all the records at once). Prune it on a schedule (ids "
                                          "older than the topic's retention), or keep the records as keys with a TTL.",
                                          options.collection)
                            : "The keyspace grows without bound and evictions will pick dedup keys. Write records with "
                              "SET key value NX PX <ttl>.");
    f.count = result.no_expiry;
    findings.push_back(std::move(f));
  }
}

// With --effects: what the records say against what happened.
void add_effect_findings(const AuditOptions& options, const AuditEvidence& evidence, const AuditResult& result,
                         std::vector<Finding>& findings) {
  if (result.effects_unmatched > 0) {
    findings.push_back(effects_unmatched_finding(options.effects_source, result.effects_unmatched));
  }
  if (evidence.lost) {
    push(findings,
         evidence.lost->build(
             "lost-effect", Severity::Error,
             fmt::format("{} events are marked processed but their effect is absent: no seek will apply them",
                         evidence.lost->count()),
             "Their records claim work that never happened (a crash between the record and the effect, or an effect "
             "write that failed after the record was set): every delivery skips them. Delete each listed record "
             "only while it is still the one shown here, then deliver the event again; and make the consumer write "
             "its record and its effect in one transaction, or the record after the effect."));
  }
  if (evidence.unguarded) {
    push(findings,
         evidence.unguarded->build(
             "unguarded-effect", Severity::Error,
             fmt::format("{} events were applied but nothing guards them: a seek applies them twice",
                         evidence.unguarded->count()),
             "Their effect exists while their record expired, was lost or was never written. Seek no further back "
             "than safe_from, or write their records again before a replay (dedupctl replay --via over a placement "
             "that holds them)."));
  }
}

// The replay's risk: the re-applied events by the worst side-effect class among them.
void add_replay_risk(const AuditOptions& options, const AuditEvidence& evidence, const ReplaySummary& replay,
                     std::vector<Finding>& findings) {
  if (replay.would_reapply > 0) {
    Severity severity = Severity::Info;
    std::int64_t external = 0;
    for (const auto& [type, risk] : replay.by_type) {
      if (risk.side_effects == SideEffect::External) {
        severity = Severity::Error;
        external += risk.would_reapply;
      } else if (risk.side_effects == SideEffect::Internal && severity == Severity::Info) {
        severity = Severity::Warning;
      }
    }
    std::string title = fmt::format("a seek over {} would re-apply {} events ({} with external effects)", replay.window,
                                    replay.would_reapply, external);
    if (auto split = reapply_split(replay); !split.empty()) {
      title = std::move(split);
    }
    Finding f = *evidence.reapplied.build(
        "replay-risk", severity, std::move(title),
        options.version_guard
            ? "These are the changes the projection lacks, in the order the guard applies them: a seek brings "
              "the projection up to date, and runs their handlers' other effects again. Seek no further back "
              "than safe_from if those effects must not repeat."
            : "Seek no further back than safe_from, or replay through a placement that still holds these ids "
              "(dedupctl replay --via).");
    f.count = replay.would_reapply;
    findings.push_back(std::move(f));
  }
}

} // namespace

void add_audit_findings(const AuditOptions& options, const AuditEvidence& evidence, AuditResult& result) {
  auto& findings = result.findings;
  add_policy_findings(options, result, findings);
  add_state_findings(options, evidence, result, findings);
  push(
      findings,
      evidence.collisions.build(
          "key-collision", Severity::Error,
          fmt::format("{} events render to a dedup key already taken by another event id", evidence.collisions.count()),
          "The consumer silently drops these events as duplicates. Build the key from the event id ({event_id})."));
  add_effect_findings(options, evidence, result, findings);
  add_replay_risk(options, evidence, result.replay, findings);
}

} // namespace dedupctl::core
