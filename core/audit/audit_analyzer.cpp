#include "core/audit/audit_analyzer.hpp"

#include "core/audit/audit_findings.hpp"
#include "core/source/range.hpp"
#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

namespace {

constexpr std::size_t k_deferred_examples = 256;

} // namespace

AuditAnalyzer::AuditAnalyzer(AuditOptions options)
    : m_options(std::move(options)), m_defer(!m_options.ttl.span.known()), m_collisions(m_options.max_examples),
      m_reapplied(m_options.max_examples), m_lost(m_options.max_examples), m_unguarded(m_options.max_examples),
      m_injectivity(m_options.key_template.event_id_injectivity()),
      m_check_collisions(m_options.check_collisions && m_injectivity != KeyTemplate::Injectivity::Injective),
      m_key_owner(m_check_collisions && m_injectivity == KeyTemplate::Injectivity::No ? m_options.expected_events
                                                                                      : 16) {
  for (auto& builder : m_examples) {
    builder = FindingBuilder(m_options.max_examples);
  }
  if (m_options.bloom_filter) {
    m_bloom.emplace(m_options.max_examples);
  }
  m_options.policy.ttl = m_options.ttl.span;
  if (m_options.effects) {
    m_result.effects = EffectCounts{};
    m_result.replay.would_reapply_applied = 0;
    m_result.replay.would_reapply_unapplied = 0;
  }
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
  // Events come partition after partition: each partition's state is found by where its topic's text
  // is and its number, then checked (a topic's text may move), before the map is searched.
  struct Where {
    const void* topic;
    std::int64_t partition;
  } where{event.topic.data(), event.partition};
  bool inserted = false;
  PartitionState*& cached = m_partition_cache.find_or_insert(
      hash64(std::string_view(reinterpret_cast<const char*>(&where), sizeof where)), inserted);
  if (cached && cached->coverage.partition == event.partition && cached->coverage.topic == event.topic) {
    m_last_key = {event.topic.data(), event.partition};
    m_last = cached;
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
  cached = m_last;
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

void AuditAnalyzer::count(PartitionState& partition, Coverage state, std::uint16_t type, std::int64_t offset,
                          std::int64_t timestamp_ms, bool window, Effect effect) {
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
    if (!m_options.policy.orphans_reapplied) {
      ++replay.would_skip_unfinished;
      break;
    }
    reapplied(partition, type, offset, effect);
    break;
  case Coverage::Pending:
    ++replay.first_delivery;
    break;
  case Coverage::NoId:
  case Coverage::Expired:
  case Coverage::Missing:
    reapplied(partition, type, offset, effect);
    break;
  }
}

void AuditAnalyzer::reapplied(PartitionState& partition, std::uint16_t type, std::int64_t offset, Effect effect) {
  auto& replay = m_result.replay;
  ++replay.would_reapply;
  if (type < m_reapplied_by_type.size()) {
    ++m_reapplied_by_type[type];
  }
  // A delivery whose effect is known to be absent repairs rather than harms: safe_from is past
  // the certain duplicates only.
  bool repairs = m_options.effects && effect == Effect::NotApplied;
  if (m_options.effects) {
    ++*(repairs ? replay.would_reapply_unapplied : replay.would_reapply_applied);
  }
  if (!repairs && external(type)) {
    partition.max_bad_offset = std::max(partition.max_bad_offset.value_or(offset), offset);
    partition.last_bad = true;
  } else if (external(type)) {
    partition.max_repair_offset = std::max(partition.max_repair_offset.value_or(offset), offset);
  }
}

template <typename MakeExample>
void AuditAnalyzer::count_effect(Coverage state, Effect effect, std::int32_t partition, MakeExample&& make_example) {
  if (!m_result.effects) {
    return;
  }
  if (effect != Effect::Unchecked && marks_processed(state)) {
    ++m_processed_looked_up;
    m_processed_matched += effect == Effect::Applied ? 1 : 0;
  }
  auto add = [&](FindingBuilder& builder, const char* what) {
    builder.add(partition, [&] {
      Example ex = make_example();
      ex.note = fmt::format("{}: {}", to_string(state), what);
      return ex;
    });
  };
  switch (core::count_effect(state, effect, *m_result.effects)) {
  case EffectVerdict::Lost:
    add(m_lost, "the record says processed, the effect is absent");
    break;
  case EffectVerdict::Unguarded:
    add(m_unguarded, "the effect exists, no record guards it");
    break;
  case EffectVerdict::None:
    break;
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

bool AuditAnalyzer::enter(PartitionState& partition, const Event& event) {
  auto& bounds = partition.coverage.window;
  bool found = false;
  bool window = bounds && enter_window(*bounds, event.offset, event.timestamp_ms, found);
  if (found) {
    partition.coverage.seek_found = event.offset;
  }
  if (window) {
    if (partition.last_bad) {
      partition.after_bad.emplace(event.offset, event.timestamp_ms);
    }
    partition.last_bad = false; // until this one turns out to be
  }
  return window;
}

void AuditAnalyzer::observe_guarded(const Event& event, const Identity& identity, std::string_view dedup_key,
                                    Coverage state, bool superseded, bool applied, std::string_view note) {
  ++m_result.events;
  PartitionState& partition = partition_of(event);
  std::uint16_t type = type_index(identity.type);
  bool window = enter(partition, event);
  if (state == Coverage::Missing && partition.committed && event.offset >= *partition.committed) {
    state = Coverage::Pending; // the consumer has not reached it: a first delivery applies it
  }
  auto index = static_cast<std::size_t>(state);
  ++partition.coverage.states[index];
  partition.coverage.histogram.add(event.timestamp_ms, state);
  if (window && partition.coverage.window && event.offset == partition.coverage.window->from) {
    partition.coverage.window_start_ms = event.timestamp_ms;
  }
  ++m_result.states[index];
  m_result.superseded += superseded && state == Coverage::Missing ? 1 : 0;
  auto example = [&] { return example_of(event, identity, dedup_key, std::string(note)); };
  if (state != Coverage::Covered) {
    add_example(state, event.partition, example);
  }
  if (!window) {
    return;
  }
  auto& replay = m_result.replay;
  ++replay.events;
  if (state == Coverage::Pending) {
    ++replay.first_delivery;
  } else if (applied) {
    reapplied(partition, type, event.offset, Effect::Unchecked);
    m_reapplied.add(event.partition, [&] {
      Example ex = example();
      ex.note = fmt::format("{} ({}){}{}", superseded ? "superseded" : to_string(state),
                            identity.type.empty() ? "no type" : identity.type, note.empty() ? "" : ": ", note);
      return ex;
    });
  } else {
    ++replay.would_skip;
  }
}

void AuditAnalyzer::observe(const Event& event, const Identity& identity, std::string_view dedup_key,
                            const RecordState& record, Effect effect) {
  ++m_result.events;
  PartitionState& partition = partition_of(event);
  std::uint16_t type = type_index(identity.type);
  bool window = enter(partition, event);
  auto example = [&] { return example_of(event, identity, dedup_key); };
  auto reapplied_example = [&](Coverage state) {
    if (window && state != Coverage::Pending) {
      if (reapplied_on_seek(state, m_options.policy)) {
        m_reapplied.add(event.partition, [&] {
          Example ex = example();
          ex.note = fmt::format("{} ({})", to_string(state), identity.type.empty() ? "no type" : identity.type);
          return ex;
        });
      }
    }
  };
  if (!identity.has_id) {
    count(partition, Coverage::NoId, type, event.offset, event.timestamp_ms, window, Effect::Unchecked);
    reapplied_example(Coverage::NoId);
    return;
  }
  // Keys that cannot collide (an injective template, or a UTF-8 id through json-ascii) are not kept.
  if (m_check_collisions && key_may_collide(m_injectivity, identity.id)) {
    if (m_key_owner.collides(dedup_key, identity.id_hash)) {
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
  if (m_bloom && facts.committed) {
    bool below = event.offset < *facts.committed;
    m_bloom->observe(hash64(dedup_key), !absent, below, !below, example);
  }
  if (absent && !pending && m_defer) {
    // Expired or missing depends on the TTL, which the records still have to tell.
    Deferred deferred{event.timestamp_ms, event.offset, &partition, type, -1, effect};
    if (effect != Effect::Unchecked && m_deferred_effect_examples.size() < k_deferred_examples) {
      // Whether it is lost or unguarded waits with its state: its example is kept apart.
      deferred.effect_example = static_cast<std::int16_t>(m_deferred_effect_examples.size());
      m_deferred_effect_examples.push_back(example());
    }
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
  std::optional<std::int64_t> left = record.processed_at_ms ? std::nullopt : remaining_ms(record, m_options.policy);
  if (record.kind == RecordState::Kind::Present && left &&
      (verdict.state == Coverage::Covered || verdict.state == Coverage::Expiring)) {
    m_estimator.observe(*left, event.timestamp_ms, m_options.policy.now_ms);
  }
  if (verdict.no_expiry) {
    ++m_result.no_expiry;
    m_examples[static_cast<std::size_t>(Coverage::Covered)].add(event.partition, example);
  }
  if (verdict.state == Coverage::Expiring && verdict.gap_ms > m_max_gap_ms) {
    m_max_gap_ms = verdict.gap_ms;
  }
  count(partition, verdict.state, type, event.offset, event.timestamp_ms, window, effect);
  count_effect(verdict.state, effect, event.partition, example);
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
  result.ttl = m_settled_ttl ? *m_settled_ttl : with_estimate(m_options.ttl, m_estimator);
  auto ttl_ms = result.ttl.span.finite_ms();
  // The deferred absent records, now that the TTL is known (or known to be unknown).
  for (const auto& deferred : m_deferred) {
    PartitionState& partition = *deferred.partition;
    bool expired = ttl_ms && deferred.timestamp_ms + *ttl_ms + m_options.policy.max_lag_ms < m_options.policy.now_ms;
    Coverage state = expired ? Coverage::Expired : Coverage::Missing;
    bool window = in_window(partition, deferred.offset);
    count(partition, state, deferred.type, deferred.offset, deferred.timestamp_ms, window, deferred.effect);
    count_effect(state, deferred.effect, partition.coverage.partition, [&] {
      return deferred.effect_example >= 0
                 ? m_deferred_effect_examples[static_cast<std::size_t>(deferred.effect_example)]
                 : Example{};
    });
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

  // An effects lookup that found the effect of no event marked processed proves nothing: it may be
  // unable to match at all (a column no id fits, an --effects-id no output record carries). Nothing
  // is lost by its word, and a re-application is not a repair by it.
  bool unmatched = result.effects && m_processed_looked_up > 0 && m_processed_matched == 0;
  if (unmatched) {
    result.effects->lost = 0;
    result.effects_unmatched = m_processed_looked_up;
    result.replay.would_reapply_applied.reset();
    result.replay.would_reapply_unapplied.reset();
    for (auto& [key, state] : m_partitions) {
      if (state.max_repair_offset > state.max_bad_offset) { // nullopt is below any offset
        state.max_bad_offset = state.max_repair_offset;
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
  add_audit_findings(m_options,
                     {m_examples, m_collisions, m_reapplied, m_max_gap_ms, unmatched ? nullptr : &m_lost, &m_unguarded},
                     result);
  if (m_bloom) {
    if (auto f = m_bloom->finish()) {
      result.findings.push_back(std::move(*f));
    }
  }
  return std::move(result);
}

} // namespace dedupctl::core
