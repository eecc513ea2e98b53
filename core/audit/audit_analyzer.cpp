#include "core/audit/audit_analyzer.hpp"

#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"
#include "core/source/range.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

std::string_view to_string(SideEffect effect) {
  switch (effect) {
  case SideEffect::External:
    return "external";
  case SideEffect::Internal:
    return "internal";
  case SideEffect::Idempotent:
    return "idempotent";
  }
  return "external";
}

std::pair<std::string, SideEffect> parse_side_effect(std::string_view text) {
  auto eq = text.rfind('=');
  auto bad = [&]() -> std::pair<std::string, SideEffect> {
    throw UsageError(fmt::format("invalid --side-effects '{}': expected TYPE=external, TYPE=internal or "
                                 "TYPE=idempotent",
                                 text));
  };
  if (eq == std::string_view::npos || eq == 0) {
    return bad();
  }
  std::string_view value = text.substr(eq + 1);
  SideEffect effect = SideEffect::External;
  if (value == "external") {
    effect = SideEffect::External;
  } else if (value == "internal") {
    effect = SideEffect::Internal;
  } else if (value == "idempotent") {
    effect = SideEffect::Idempotent;
  } else {
    return bad();
  }
  return {std::string(text.substr(0, eq)), effect};
}

namespace {

constexpr std::size_t k_deferred_examples = 256;

} // namespace

AuditAnalyzer::AuditAnalyzer(AuditOptions options)
    : m_options(std::move(options)), m_defer(!m_options.ttl.span.known()), m_collisions(m_options.max_examples),
      m_reapplied(m_options.max_examples), m_check_collisions(m_options.check_collisions && !m_options.key_template.uses(KeyTemplate::Part::EventId)),
      m_key_owner(m_check_collisions ? m_options.expected_events : 16) {
  for (auto& builder : m_examples) {
    builder = FindingBuilder(m_options.max_examples);
  }
  m_options.policy.ttl = m_options.ttl.span;
}

void AuditAnalyzer::set_partition(const std::string& topic, std::int32_t partition,
                                  std::optional<std::int64_t> committed, std::optional<WindowBounds> window) {
  auto& state = m_partitions[{topic, partition}];
  state.coverage.topic = topic;
  state.coverage.partition = partition;
  state.coverage.window = window;
  if (window && window->from_timestamp) {
    state.coverage.window->from = window->to; // until an event reaches the time
  }
  state.committed = committed;
  m_last = nullptr;
}

AuditAnalyzer::PartitionState& AuditAnalyzer::partition_of(const Event& event) {
  if (m_last && m_last_key.first == event.topic.data() && m_last_key.second == event.partition) {
    return *m_last;
  }
  auto key = std::make_pair(std::string(event.topic), event.partition);
  auto it = m_partitions.find(key);
  if (it == m_partitions.end()) {
    it = m_partitions.emplace(key, PartitionState{}).first;
    it->second.coverage.topic = key.first;
    it->second.coverage.partition = key.second;
    if (m_options.default_window) {
      it->second.coverage.window = WindowBounds{0, k_offset_max, std::nullopt};
    }
  }
  m_last_key = {event.topic.data(), event.partition};
  m_last = &it->second;
  return *m_last;
}

std::uint16_t AuditAnalyzer::type_index(std::string_view type) {
  auto it = m_type_index.find(type);
  if (it != m_type_index.end()) {
    return it->second;
  }
  if (m_types.size() >= 65535) {
    return 65535; // more types than a breakdown can show: fold the rest together
  }
  auto index = static_cast<std::uint16_t>(m_types.size());
  m_types.emplace_back(type);
  m_type_index.emplace(std::string(type), index);
  m_reapplied_by_type.push_back(0);
  return index;
}

bool AuditAnalyzer::in_window(const PartitionState& partition, std::int64_t offset) const {
  const auto& window = partition.coverage.window;
  return window && offset >= window->from && offset < window->to;
}

bool AuditAnalyzer::external(std::uint16_t type) const {
  std::string_view name = type < m_types.size() ? std::string_view(m_types[type]) : std::string_view{};
  auto effect = m_options.side_effects.find(std::string(name));
  return effect == m_options.side_effects.end() || effect->second == SideEffect::External;
}

void TimeHistogram::coarsen() {
  std::int64_t width = m_width * 2;
  std::int64_t origin = m_origin - ((m_origin % width) + width) % width;
  std::vector<std::array<std::int64_t, k_coverage_states>> merged;
  for (std::size_t i = 0; i < m_counts.size(); ++i) {
    auto j = static_cast<std::size_t>((m_origin + static_cast<std::int64_t>(i) * m_width - origin) / width);
    if (merged.size() <= j) {
      merged.resize(j + 1, std::array<std::int64_t, k_coverage_states>{});
    }
    for (std::size_t s = 0; s < k_coverage_states; ++s) {
      merged[j][s] += m_counts[i][s];
    }
  }
  m_counts = std::move(merged);
  m_origin = origin;
  m_width = width;
}

void TimeHistogram::add(std::int64_t timestamp_ms, Coverage state) {
  if (timestamp_ms < 0) {
    return; // no timestamp: not on a time axis
  }
  if (m_counts.empty()) {
    m_origin = timestamp_ms - timestamp_ms % m_width;
    m_counts.resize(1, std::array<std::int64_t, k_coverage_states>{});
  }
  while (timestamp_ms < m_origin) {
    if (m_counts.size() < k_buckets) {
      m_counts.insert(m_counts.begin(), std::array<std::int64_t, k_coverage_states>{});
      m_origin -= m_width;
    } else {
      coarsen();
    }
  }
  auto index = static_cast<std::size_t>((timestamp_ms - m_origin) / m_width);
  while (index >= k_buckets) {
    coarsen();
    index = static_cast<std::size_t>((timestamp_ms - m_origin) / m_width);
  }
  if (m_counts.size() <= index) {
    m_counts.resize(index + 1, std::array<std::int64_t, k_coverage_states>{});
  }
  ++m_counts[index][static_cast<std::size_t>(state)];
}

void AuditAnalyzer::count(PartitionState& partition, Coverage state, std::uint16_t type, std::int64_t offset,
                          std::int64_t timestamp_ms, bool window) {
  auto index = static_cast<std::size_t>(state);
  ++partition.coverage.states[index];
  partition.coverage.histogram.add(timestamp_ms, state);
  if (window && partition.coverage.window && offset == partition.coverage.window->from) {
    partition.coverage.window_start_ms = timestamp_ms;
  }
  ++m_result.states[index];
  if (!window) {
    return;
  }
  auto& replay = m_result.replay;
  ++replay.events;
  switch (state) {
  case Coverage::Covered:
  case Coverage::Expiring:
  case Coverage::InProgress:
    ++replay.would_skip;
    break;
  case Coverage::Orphaned:
    ++replay.would_skip_unfinished;
    break;
  case Coverage::Pending:
    ++replay.first_delivery;
    break;
  case Coverage::NoId:
  case Coverage::Expired:
  case Coverage::Missing: {
    ++replay.would_reapply;
    if (type < m_reapplied_by_type.size()) {
      ++m_reapplied_by_type[type];
    }
    if (external(type)) {
      partition.max_bad_offset = std::max(partition.max_bad_offset.value_or(offset), offset);
      partition.last_bad = true;
    }
    break;
  }
  }
}

template <typename MakeExample>
void AuditAnalyzer::add_example(Coverage state, std::int32_t partition, MakeExample&& make_example,
                                std::int64_t gap_ms) {
  m_examples[static_cast<std::size_t>(state)].add(partition, [&] {
    Example ex = make_example();
    if (state == Coverage::Expiring) {
      ex.note = gap_ms < 0
                    ? "the record lapses; the topic keeps events forever"
                    : fmt::format("the record lapses {} before the event leaves the log", format_duration(gap_ms));
    }
    return ex;
  });
}

void AuditAnalyzer::observe(const Event& event, const Identity& identity, std::string_view dedup_key,
                            const RecordState& record) {
  ++m_result.events;
  PartitionState& partition = partition_of(event);
  std::uint16_t type = type_index(identity.type);
  if (auto& bounds = partition.coverage.window;
      bounds && bounds->from_timestamp && event.timestamp_ms >= *bounds->from_timestamp) {
    bounds->from = std::min(event.offset, bounds->to);
    bounds->from_timestamp.reset();
    partition.coverage.seek_found = event.offset;
  }
  bool window = in_window(partition, event.offset);
  if (window) {
    if (partition.last_bad) {
      partition.after_bad.emplace(event.offset, event.timestamp_ms);
    }
    partition.last_bad = false; // until this one turns out to be
  }
  auto example = [&] { return example_of(event, identity, dedup_key); };
  auto reapplied_example = [&](Coverage state) {
    if (window && state != Coverage::Pending) {
      if (state == Coverage::NoId || state == Coverage::Expired || state == Coverage::Missing) {
        m_reapplied.add(event.partition, [&] {
          Example ex = example();
          ex.note = fmt::format("{} ({})", to_string(state), identity.type.empty() ? "no type" : identity.type);
          return ex;
        });
      }
    }
  };
  if (!identity.has_id) {
    count(partition, Coverage::NoId, type, event.offset, event.timestamp_ms, window);
    reapplied_example(Coverage::NoId);
    return;
  }
  if (m_check_collisions) {
    bool inserted = false;
    std::uint64_t& owner = m_key_owner.find_or_insert(hash64(dedup_key, 0x6b), inserted);
    if (inserted) {
      owner = identity.id_hash;
    } else if (owner != identity.id_hash) {
      ++m_result.key_collisions;
      m_collisions.add(event.partition, [&] {
        Example ex = example();
        ex.note = "another event id already took this key";
        return ex;
      });
    }
  }
  EventFacts facts{event.timestamp_ms, event.offset, partition.committed};
  bool absent = record.kind == RecordState::Kind::Absent;
  bool pending = absent && facts.committed && event.offset >= *facts.committed;
  if (absent && !pending && m_defer) {
    // Expired or missing depends on the TTL, which the records still have to tell.
    Deferred deferred{event.timestamp_ms, event.offset, &partition, type, -1};
    partition.last_bad = window && external(type); // expired or missing: re-applied either way
    if (m_deferred_examples.size() < k_deferred_examples) {
      deferred.example = static_cast<std::int16_t>(m_deferred_examples.size());
      m_deferred_examples.push_back(example());
      m_deferred_examples.back().note = identity.type.empty() ? "" : std::string(identity.type);
    }
    m_deferred.push_back(deferred);
    return;
  }
  Verdict verdict = classify(record, facts, m_options.policy);
  if (record.kind == RecordState::Kind::Present && record.pttl_ms &&
      (verdict.state == Coverage::Covered || verdict.state == Coverage::Expiring)) {
    m_estimator.observe(*record.pttl_ms, event.timestamp_ms, m_options.policy.now_ms);
  }
  if (verdict.no_expiry) {
    ++m_result.no_expiry;
    m_examples[static_cast<std::size_t>(Coverage::Covered)].add(event.partition, example);
  }
  if (verdict.state == Coverage::Expiring && verdict.gap_ms > m_max_gap_ms) {
    m_max_gap_ms = verdict.gap_ms;
  }
  count(partition, verdict.state, type, event.offset, event.timestamp_ms, window);
  if (verdict.state != Coverage::Covered) {
    add_example(verdict.state, event.partition, example, verdict.gap_ms);
  }
  reapplied_example(verdict.state);
}

void AuditAnalyzer::add_key_collisions(const FindingBuilder& collisions) {
  m_result.key_collisions += collisions.count();
  m_collisions.merge(collisions);
}

AuditResult AuditAnalyzer::finish() {
  AuditResult& result = m_result;
  result.ttl = with_estimate(m_options.ttl, m_estimator);
  auto ttl_ms = result.ttl.span.finite_ms();
  // The deferred absent records, now that the TTL is known (or known to be unknown).
  for (const auto& deferred : m_deferred) {
    PartitionState& partition = *deferred.partition;
    bool expired = ttl_ms && deferred.timestamp_ms + *ttl_ms + m_options.policy.max_lag_ms < m_options.policy.now_ms;
    Coverage state = expired ? Coverage::Expired : Coverage::Missing;
    bool window = in_window(partition, deferred.offset);
    count(partition, state, deferred.type, deferred.offset, deferred.timestamp_ms, window);
    if (deferred.example >= 0) {
      Example ex = m_deferred_examples[static_cast<std::size_t>(deferred.example)];
      std::string type = ex.note;
      ex.note.clear();
      add_example(state, partition.coverage.partition, [&] { return ex; });
      if (window) {
        m_reapplied.add(partition.coverage.partition, [&] {
          Example r = ex;
          r.note = fmt::format("{} ({})", to_string(state), type.empty() ? "no type" : type);
          return r;
        });
      }
    }
  }

  // The replay window.
  auto& replay = result.replay;
  replay.window = m_options.window_label;
  for (std::size_t i = 0; i < m_types.size(); ++i) {
    if (m_reapplied_by_type[i] == 0) {
      continue;
    }
    auto effect = m_options.side_effects.find(m_types[i]);
    TypeRisk risk;
    risk.side_effects = effect == m_options.side_effects.end() ? SideEffect::External : effect->second;
    risk.would_reapply = m_reapplied_by_type[i];
    replay.by_type[m_types[i].empty() ? "(no type)" : m_types[i]] = risk;
  }
  for (auto& [key, state] : m_partitions) {
    result.partitions.push_back(state.coverage);
    if (!state.coverage.window) {
      continue;
    }
    SafeFrom safe;
    safe.topic = key.first;
    safe.partition = key.second;
    if (state.max_bad_offset) {
      safe.offset = *state.max_bad_offset + 1;
      if (state.after_bad && state.after_bad->first == safe.offset) {
        safe.timestamp_ms = state.after_bad->second;
      }
    } else {
      safe.offset = state.coverage.window->from;
      safe.timestamp_ms = state.coverage.window_start_ms;
    }
    replay.safe_from.push_back(safe);
  }

  // Findings.
  auto& findings = result.findings;
  auto push = [&](std::optional<Finding> finding) {
    if (finding) {
      findings.push_back(std::move(*finding));
    }
  };
  auto policy_finding = [&](std::string id, Severity severity, std::string title, std::string advice) {
    Finding f;
    f.id = std::move(id);
    f.severity = severity;
    f.title = std::move(title);
    f.count = 1;
    f.advice = std::move(advice);
    findings.push_back(std::move(f));
  };
  const Span& ttl = result.ttl.span;
  const Span& retention = m_options.policy.retention;
  std::string needed = ttl_needed(retention, m_options.policy.max_lag_ms);
  push(ttl_vs_retention(fmt::format("TTL ({}, {})", to_text(ttl), describe(result.ttl)), ttl, retention,
                        m_options.policy.max_lag_ms, m_options.policy.compacted));
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
  if (!m_options.key_template.uses(KeyTemplate::Part::EventId)) {
    policy_finding("key-template-lacks-event-id", Severity::Error,
                   fmt::format("the key template '{}' has no {{event_id}}", m_options.key_template.text()),
                   "Keys built from a business id (an order id) make distinct events share one record: the "
                   "consumer drops all but the first. Put {event_id} in the key.");
  }
  if (m_options.key_template.uses(KeyTemplate::Part::Offset) ||
      m_options.key_template.uses(KeyTemplate::Part::Partition)) {
    policy_finding("key-template-uses-offset", Severity::Warning,
                   fmt::format("the key template '{}' uses the partition or offset", m_options.key_template.text()),
                   "Offsets change when a topic is recreated, mirrored or replayed from another cluster: the same "
                   "event gets a new key. Use {event_id}.");
  }
  auto state_builder = [&](Coverage state) -> const FindingBuilder& {
    return m_examples[static_cast<std::size_t>(state)];
  };
  auto n = [&](Coverage state) { return result.states[static_cast<std::size_t>(state)]; };
  if (n(Coverage::Expired) > 0) {
    Finding f =
        *state_builder(Coverage::Expired)
             .build("ttl-gap", Severity::Error,
                    fmt::format("{} events are still replayable but their dedup records expired", n(Coverage::Expired)),
                    fmt::format("A seek into these events re-applies them. Raise the TTL to {}.", needed));
    f.count = n(Coverage::Expired);
    findings.push_back(std::move(f));
  }
  if (n(Coverage::Expiring) > 0) {
    push(state_builder(Coverage::Expiring)
             .build(
                 "expiring-before-retention", Severity::Warning,
                 fmt::format("{} dedup records lapse while their events stay replayable{}", n(Coverage::Expiring),
                             m_max_gap_ms > 0 ? fmt::format(" (by up to {})", format_duration(m_max_gap_ms)) : ""),
                 fmt::format("Today they protect; after they lapse a seek re-applies the events. Raise the TTL to {}.",
                             needed)));
  }
  if (n(Coverage::Missing) > 0) {
    Finding f =
        *state_builder(Coverage::Missing)
             .build("missing-record", Severity::Error,
                    ttl.known() ? fmt::format("{} dedup records are missing although their events are within the TTL",
                                              n(Coverage::Missing))
                                : fmt::format("{} dedup records are missing (the TTL is unknown, so a lapse cannot be "
                                              "told from a loss)",
                                              n(Coverage::Missing)),
                    "Lost to a FLUSHDB, a failover to an empty replica, an eviction (check maxmemory-policy), "
                    "or never written (check --key-template against the consumer's code). A seek re-applies "
                    "these events.");
    f.count = n(Coverage::Missing);
    findings.push_back(std::move(f));
  }
  if (n(Coverage::Orphaned) > 0) {
    push(state_builder(Coverage::Orphaned)
             .build("orphaned-claim", Severity::Error,
                    fmt::format("{} events were claimed (in progress) and never completed", n(Coverage::Orphaned)),
                    "The consumer moved past these claims, or their lease ran out: a replay skips them although "
                    "their work never completed. Check the listed events, finish or compensate them, then DEL their "
                    "keys before seeking."));
  }
  if (result.no_expiry > 0) {
    Finding f =
        *state_builder(Coverage::Covered)
             .build("no-expiry", Severity::Warning, fmt::format("{} dedup records never expire", result.no_expiry),
                    "The keyspace grows without bound and evictions will pick dedup keys. Write records with "
                    "SET key value NX PX <ttl>.");
    f.count = result.no_expiry;
    findings.push_back(std::move(f));
  }
  push(m_collisions.build(
      "key-collision", Severity::Error,
      fmt::format("{} events render to a dedup key already taken by another event id", m_collisions.count()),
      "The consumer silently drops these events as duplicates. Build the key from the event id ({event_id})."));
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
    Finding f = *m_reapplied.build(
        "replay-risk", severity,
        fmt::format("a seek over {} would re-apply {} events ({} with external effects)", replay.window,
                    replay.would_reapply, external),
        "Seek no further back than safe_from, or replay through a placement that still holds these ids "
        "(dedupctl replay --via).");
    f.count = replay.would_reapply;
    findings.push_back(std::move(f));
  }
  return std::move(result);
}

} // namespace dedupctl::core
