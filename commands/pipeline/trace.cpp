#include "commands/pipeline/trace.hpp"

#include "commands/pipeline/common.hpp"
#include "core/audit/tiers.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/util/encoding.hpp"
#include "core/util/fingerprint.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>

namespace dedupctl::commands {

namespace {

std::string trimmed(const std::string& id) {
  auto first = id.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) {
    return "";
  }
  return id.substr(first, id.find_last_not_of(" \t\r\n") - first + 1);
}

struct VerdictFinding {
  std::string_view id;
  core::Severity severity;
  std::string_view advice;
};

constexpr VerdictFinding k_verdict_findings[] = {
    {"applied-twice", core::Severity::Error,
     "Raise the TTL to at least the topic's retention plus the consumer's worst lag, and check the side effect "
     "(refund or reconcile the second application)."},
    {"state-lost", core::Severity::Error,
     "The placement lost records it should hold: check Redis failovers, FLUSHes, eviction (maxmemory-policy) and "
     "persistence; audit the rest of the range with dedupctl audit."},
    {"id-reused", core::Severity::Error,
     "Different events share this id: the consumer dropped the later ones as duplicates. Give every event a fresh "
     "id; never derive it from a business key."},
    {"claim-orphaned", core::Severity::Error,
     "The consumer claimed the event and crashed before completing it; the claim blocks every retry. Complete or "
     "delete the record, and give claims a lease."},
    {"effect-lost", core::Severity::Error,
     "Its record claims work that never happened: every delivery skips it. Delete the record only while it is "
     "still the one shown, then deliver the event again; make the consumer write its record with its effect."},
    {"exposed", core::Severity::Warning,
     "A seek or replay over this offset applies the event again: route it through dedupctl replay --via, or keep "
     "records as long as the log keeps events."},
    {"bloom-false-positive", core::Severity::Error,
     "The window's Bloom filter called the id seen before it was ever applied: the event was dropped. Apply it (a "
     "replay through --via), and size the filter for the ids it meets or decide a \"maybe\" by a durable record."},
    {"not-found", core::Severity::Info, "Check the id (see the notes), the range (--from/--to) and --id."},
};

// Through a version guard an exposed event is one whose change the projection lacks: applying it is right.
constexpr std::string_view k_guard_exposed =
    "The projection is behind the log for this entity: a seek or replay applies the change, which it lacks. "
    "dedupctl replay --via the projection publishes exactly what the guard applies; dedupctl audit --seek previews "
    "the whole range.";

// One finding per verdict, in k_verdict_findings' order: "N traced ids: VERDICT", or how many
// ids are not in the range read. `guard`: the verdicts are a version guard's.
std::vector<core::Finding> verdict_findings(const std::map<std::string, core::FindingBuilder>& by_verdict, bool guard) {
  std::vector<core::Finding> findings;
  for (const auto& rule : k_verdict_findings) {
    auto it = by_verdict.find(std::string(rule.id));
    if (it == by_verdict.end()) {
      continue;
    }
    std::int64_t n = it->second.count();
    std::string title = rule.id == "not-found"
                            ? fmt::format("{} of the ids {} not in the range read", n, n == 1 ? "is" : "are")
                            : fmt::format("{} traced id{}: {}", n, n == 1 ? "" : "s", rule.id);
    std::string_view advice = guard && rule.id == "exposed" ? k_guard_exposed : rule.advice;
    if (auto f = it->second.build(std::string(rule.id), rule.severity, title, std::string(advice))) {
      if (rule.id == "not-found") {
        f->partitions.clear();
        for (auto& ex : f->examples) {
          ex.topic.clear();
        }
      }
      findings.push_back(std::move(*f));
    }
  }
  return findings;
}

// The tiers as the trace reads them: the request's own, then a chain's others.
std::vector<TraceTierRequest> tiers_of(const TraceRequest& request, core::DedupStore& store) {
  TraceTierRequest first;
  first.name = fmt::format("tier 1 ({})", request.placement.store);
  first.store = &store;
  first.key_template = request.key_template;
  first.in_progress_values = request.in_progress_values;
  first.inbox = request.inbox;
  first.orphans_reapplied = request.orphans_reapplied;
  first.layout = request.layout;
  first.ttl = request.placement.ttl.span;
  std::vector<TraceTierRequest> tiers{first};
  tiers.insert(tiers.end(), request.more_tiers.begin(), request.more_tiers.end());
  return tiers;
}

bool windowed(const TraceTierRequest& tier) { return tier.layout.window.kind != core::WindowKind::None; }

// Reads the range once and keeps every occurrence of the requested ids, and for ids not found,
// log ids that start with them (a truncated paste). Every tier's key is rendered for each; a window
// in memory is simulated over every event, in log order, and each kept copy says what it did.
class OccurrenceCollector {
public:
  OccurrenceCollector(const TraceRequest& request, const std::vector<TraceTierRequest>& tiers,
                      const core::SourceInfo& info, std::vector<core::Trace>& traces)
      : m_request(request), m_traces(traces), m_longer(request.ids.size()), m_effect_keys(request.ids.size()),
        m_rendered(tiers.size()), m_has_group(info.group.has_value()) {
    for (std::size_t k = 0; k < tiers.size(); ++k) { // each template's fields indexed after those before it
      m_templates.push_back(k == 0 ? tiers[0].key_template
                                   : core::after_fields_of(m_templates.back(), tiers[k].key_template));
      if (windowed(tiers[k]) && !m_window) {
        m_window = std::make_unique<core::WindowAnalyzer>(tiers[k].layout.window, 0,
                                                          std::map<std::string, core::SideEffect>{});
        m_window_tier = k;
      }
    }
    m_effects_template = core::after_fields_of(m_templates.back(), request.effects_template);
    for (std::size_t i = 0; i < request.ids.size(); ++i) {
      traces[i].event_id = request.ids[i];
      traces[i].tiers.resize(tiers.size());
      for (std::size_t k = 0; k < tiers.size(); ++k) {
        traces[i].tiers[k].name = tiers[k].name;
      }
      m_wanted[request.ids[i]].push_back(i);
      std::string t = trimmed(request.ids[i]);
      if (t != request.ids[i] && !t.empty()) {
        m_wanted[t].push_back(i);
      }
      m_prefixes.push_back(t);
    }
    for (const auto& range : info.partitions) {
      m_committed[{range.topic, range.partition}] = range.committed;
    }
    if (request.versions) {
      m_versions = std::make_unique<core::VersionAnalyzer>(*request.versions, 0);
      m_entities.resize(request.ids.size());
    }
  }

  // Every field a template renders from, for the identifier's extra values.
  const std::vector<core::FieldSpec>& fields() const { return m_effects_template.fields(); }

  void observe(const core::Event& event, const core::Identity& identity) {
    if (!identity.has_id) {
      return;
    }
    if (m_versions) {
      m_versions->observe(event, identity);
    }
    std::optional<core::WindowCall> call;
    if (m_window) {
      std::string& key = m_rendered[m_window_tier];
      core::render_event_key(m_templates[m_window_tier], event, identity, m_request.consumer, key);
      call = m_window->observe(event, identity, key, core::hash64(key));
    }
    // Only asked for a handful of ids, since every event id is compared with each.
    if (m_request.ids.size() <= k_prefix_ids) {
      note_longer(identity.id);
    }
    auto it = m_wanted.find(std::string(identity.id));
    if (it == m_wanted.end()) {
      return;
    }
    core::TraceOccurrence o = occurrence(event, identity);
    o.window = call;
    for (std::size_t k = 0; k < m_templates.size(); ++k) {
      core::render_event_key(m_templates[k], event, identity, m_request.consumer, m_rendered[k]);
    }
    if (m_request.effects) {
      core::render_event_key(m_effects_template, event, identity, m_request.consumer, m_effect_rendered);
    }
    for (std::size_t t : it->second) {
      auto& trace = m_traces[t];
      if (m_versions && identity.has_entity && m_entities[t].empty()) {
        m_entities[t] = std::string(identity.entity);
      }
      if (m_request.effects && m_effect_keys[t].empty()) {
        m_effect_keys[t] = m_effect_rendered; // the first occurrence's, as the first dedup key
      }
      trace.occurrences.push_back(o);
      for (std::size_t k = 0; k < m_rendered.size(); ++k) {
        auto& keys = trace.tiers[k].dedup_keys;
        if (std::find(keys.begin(), keys.end(), m_rendered[k]) == keys.end()) {
          keys.push_back(m_rendered[k]);
        }
      }
    }
  }

  // --version: each found id's entity's versions around its first occurrence, in the order its
  // consumer meets them, into its timeline (kept in time order).
  void add_versions(std::vector<core::Trace>& traces) const {
    if (!m_versions) {
      return;
    }
    for (std::size_t t = 0; t < traces.size(); ++t) {
      if (m_entities[t].empty()) {
        continue;
      }
      auto history = m_versions->history(m_entities[t]);
      std::size_t at = 0;
      while (at < history.size() && history[at].id != traces[t].event_id) {
        ++at;
      }
      std::size_t from = at > k_versions_around ? at - k_versions_around : 0;
      std::size_t to = std::min(history.size(), at + k_versions_around + 1);
      std::set<std::string_view> ids;
      std::string_view highest;
      for (std::size_t i = 0; i < to; ++i) {
        const core::GuardEvent& e = history[i];
        bool again = !ids.insert(e.id).second;
        std::string what =
            fmt::format("entity {} version {}: {} ({}[{}]@{}){}{}", e.entity, e.version, e.id, e.topic, e.partition,
                        e.offset, e.id == traces[t].event_id ? ", this event" : "",
                        again       ? ", a redelivery"
                        : e.applied ? ""
                                    : fmt::format(", a version guard drops it: version {} came first", highest));
        highest = e.applied ? e.version : highest;
        if (i >= from) {
          traces[t].timeline.push_back({e.timestamp_ms, std::move(what)});
        }
      }
      std::stable_sort(traces[t].timeline.begin(), traces[t].timeline.end(),
                       [](const auto& a, const auto& b) { return a.at_ms < b.at_ms; });
    }
  }

  // --layout version-guard: what the guard compares for trace t, from its entity's versions in the
  // range (the event's, and whether a higher one follows it).
  core::GuardTrace guard_of(std::size_t t, std::string_view event_id) const {
    core::GuardTrace guard;
    guard.order = m_request.versions.value_or(core::VersionOrder::Numeric);
    if (!m_versions || m_entities[t].empty()) {
      return guard;
    }
    auto history = m_versions->history(m_entities[t]);
    auto at = std::find_if(history.begin(), history.end(), [&](const auto& e) { return e.id == event_id; });
    auto mine = at == history.end() ? std::nullopt : core::parse_version(at->version, guard.order);
    if (!mine) {
      return guard;
    }
    guard.entity = m_entities[t];
    guard.version = std::string(at->version);
    for (auto e = history.begin(); e != at; ++e) {
      guard.earlier.emplace_back(e->version);
    }
    guard.higher_follows = std::any_of(at + 1, history.end(), [&](const auto& e) {
      auto later = core::parse_version(e.version, guard.order);
      return later && core::compare_versions(*later, *mine, guard.order) > 0;
    });
    return guard;
  }

  // Ids in the log that start with each requested id, a few per id.
  const std::vector<std::vector<std::string>>& longer() const { return m_longer; }
  // --effects: per trace, the key its effect is looked up by ("" when not found).
  const std::vector<std::string>& effect_keys() const { return m_effect_keys; }

private:
  static constexpr std::size_t k_prefix_ids = 64;
  static constexpr std::size_t k_versions_around = 5; // an entity's versions either side of the event
  static constexpr std::size_t k_longer_kept = 3;

  void note_longer(std::string_view id) {
    for (std::size_t r = 0; r < m_prefixes.size(); ++r) {
      auto& longer = m_longer[r];
      if (!m_prefixes[r].empty() && id.size() > m_prefixes[r].size() && id.starts_with(m_prefixes[r]) &&
          longer.size() < k_longer_kept && std::find(longer.begin(), longer.end(), id) == longer.end()) {
        longer.emplace_back(id);
      }
    }
  }

  core::TraceOccurrence occurrence(const core::Event& event, const core::Identity& identity) const {
    core::TraceOccurrence o;
    o.topic = std::string(event.topic);
    o.partition = event.partition;
    o.offset = event.offset;
    o.timestamp_ms = event.timestamp_ms;
    o.type = std::string(identity.type);
    o.fingerprint = identity.payload_fingerprint;
    o.size = event.payload ? static_cast<std::int64_t>(event.payload->size()) : 0;
    if (identity.payload_decoded) {
      o.decoded = std::string(identity.decoded_payload);
    }
    if (m_has_group) {
      auto c = m_committed.find({o.topic, o.partition});
      o.delivered = c != m_committed.end() && c->second && event.offset < *c->second;
    }
    return o;
  }

  const TraceRequest& m_request;
  std::vector<core::Trace>& m_traces;
  std::unordered_map<std::string, std::vector<std::size_t>> m_wanted; // id (and its trimmed form) → traces
  std::vector<std::string> m_prefixes;
  std::vector<std::vector<std::string>> m_longer;
  std::vector<std::string> m_effect_keys;
  std::vector<core::KeyTemplate> m_templates; // a tier's each, rendered from the same extra values
  core::KeyTemplate m_effects_template;       // rendered after every tier's fields
  std::unique_ptr<core::WindowAnalyzer> m_window;
  std::size_t m_window_tier = 0;
  std::string m_effect_rendered;
  std::vector<std::string> m_rendered; // a tier's each
  std::map<std::pair<std::string, std::int32_t>, std::optional<std::int64_t>> m_committed;
  bool m_has_group;
  std::unique_ptr<core::VersionAnalyzer> m_versions; // --version: every versioned event of the range
  std::vector<std::string> m_entities;               // a trace's entity, from its first occurrence
};

// A tier's record as the coverage rules read it, its value owned (the store's buffer is reused).
struct TierRecord {
  core::RecordState state;
  std::string value;
};

// A tier's coverage rules at `now`: its TTL (an inbox: its retention), claim markers and orphans rule.
core::CoveragePolicy coverage_of(const TraceTierRequest& tier, std::int64_t now_ms) {
  core::CoveragePolicy coverage;
  coverage.now_ms = now_ms;
  coverage.ttl = tier.ttl;
  coverage.in_progress_values = tier.in_progress_values;
  coverage.orphans_reapplied = tier.orphans_reapplied;
  return coverage;
}

// A found trace's record in one tier, from the state its store gave.
void fill_record(const TraceTierRequest& tier, const core::CoveragePolicy& coverage, const std::string& key,
                 const core::RecordState& state, core::TraceRecord& record) {
  record.state = state.kind == core::RecordState::Kind::Present ? core::TraceRecord::State::Present
                                                                : core::TraceRecord::State::Absent;
  if (state.kind != core::RecordState::Kind::Present) {
    return;
  }
  record.pttl_ms = core::remaining_ms(state, coverage);
  if (tier.inbox) {
    record.status = std::string(state.value);
    record.processed_at_ms = state.processed_at_ms;
    if (auto* inbox = dynamic_cast<core::InboxStore*>(tier.store)) {
      record.fields = inbox->row_fields(key);
    }
  } else {
    record.value = core::snapshot_value(tier.layout, state.value); // not a JSON record's response
    record.fields = core::record_fields(tier.layout, state.value);
  }
  record.claim = state.claim;
  record.lapsed =
      state.claim ? core::claim_lapsed(state, coverage.now_ms) : core::past_own_expiry(state, coverage.now_ms);
  record.fails = state.fails && !record.lapsed;
  record.taken_over = state.taken_over && !record.lapsed;
  record.lapsed = record.lapsed || record.taken_over;
}

// The records of the first key of every found id in one tier, in one lookup: each trace's
// tiers[index].record, and the states the chain decides by (states[t], trace t's). An inbox row's
// value is its status; its remaining TTL is counted from its processed_at.
void look_up_tier(const TraceTierRequest& tier, std::size_t index, std::int64_t now_ms,
                  std::vector<core::Trace>& traces, std::vector<TierRecord>& states) {
  std::vector<std::string> keys;
  std::vector<std::size_t> looked_up;
  for (std::size_t t = 0; t < traces.size(); ++t) {
    if (!traces[t].tiers[index].dedup_keys.empty()) {
      keys.push_back(traces[t].tiers[index].dedup_keys.front());
      looked_up.push_back(t);
    }
  }
  std::vector<core::RecordState> found;
  if (!keys.empty()) {
    tier.store->lookup(keys, found);
  }
  core::CoveragePolicy coverage = coverage_of(tier, now_ms);
  for (std::size_t k = 0; k < looked_up.size(); ++k) {
    TierRecord& owned = states[looked_up[k]];
    owned.value = std::string(found[k].value);
    owned.state = found[k];
    owned.state.value = owned.value;
    fill_record(tier, coverage, keys[k], found[k], traces[looked_up[k]].tiers[index].record);
  }
}

// The group's committed offset of a copy's partition.
std::optional<std::int64_t> committed_of(const core::SourceInfo& info, const core::TraceOccurrence& o) {
  for (const auto& range : info.partitions) {
    if (range.topic == o.topic && range.partition == o.partition) {
      return range.committed;
    }
  }
  return std::nullopt;
}

// A chain: per found trace, the tier whose record protects it best (core::TierChain, by its newest
// copy: traces[t].decided_by), or when none does, the durable tier that keeps records longest; that
// tier speaks for the chain in the trace's own record and verdict.
std::vector<std::size_t> choose_tiers(const std::vector<TraceTierRequest>& tiers,
                                      const std::vector<std::vector<TierRecord>>& states, const core::SourceInfo& info,
                                      std::int64_t now_ms, std::vector<core::Trace>& traces) {
  std::vector<core::Tier> chained;
  std::size_t longest = 0;
  auto order = [](const core::Span& span) {
    return span.is_infinite() ? std::numeric_limits<std::int64_t>::max() : span.finite_ms().value_or(-1);
  };
  for (std::size_t k = 0; k < tiers.size(); ++k) {
    chained.push_back(core::Tier{tiers[k].name, coverage_of(tiers[k], now_ms), !windowed(tiers[k])});
    if (!windowed(tiers[k]) && (windowed(tiers[longest]) || order(tiers[k].ttl) > order(tiers[longest].ttl))) {
      longest = k;
    }
  }
  core::TierChain chain(chained, 0);
  std::vector<std::size_t> speaks(traces.size(), longest);
  std::vector<const core::RecordState*> records(tiers.size());
  for (std::size_t t = 0; t < traces.size(); ++t) {
    auto& trace = traces[t];
    if (trace.occurrences.empty()) {
      continue;
    }
    const auto& newest =
        *std::max_element(trace.occurrences.begin(), trace.occurrences.end(),
                          [](const auto& a, const auto& b) { return a.timestamp_ms < b.timestamp_ms; });
    for (std::size_t k = 0; k < tiers.size(); ++k) {
      records[k] = &states[k][t].state;
    }
    bool lapsed_somewhere = false;
    trace.decided_by = chain.protecting(
        records, core::EventFacts{newest.timestamp_ms, newest.offset, committed_of(info, newest)}, lapsed_somewhere);
    speaks[t] = trace.decided_by.value_or(longest);
  }
  return speaks;
}

// --effects: whether the effect of every found id exists, in one lookup.
void look_up_effects(core::EffectStore& effects, const std::vector<std::string>& effect_keys,
                     std::vector<core::Trace>& traces) {
  std::vector<std::string> keys;
  std::vector<std::size_t> looked_up;
  for (std::size_t t = 0; t < traces.size(); ++t) {
    if (!traces[t].occurrences.empty() && !effect_keys[t].empty()) {
      keys.push_back(effect_keys[t]);
      looked_up.push_back(t);
    }
  }
  std::vector<std::uint8_t> present;
  if (!keys.empty()) {
    effects.lookup(keys, present);
  }
  for (std::size_t k = 0; k < looked_up.size(); ++k) {
    traces[looked_up[k]].effect = present[k] != 0;
  }
}

// A tier's trace policy: its TTL, claim markers and library; a window's description, and whether it
// decides alone.
core::TracePolicy policy_of(const TraceTierRequest& tier, const std::vector<TraceTierRequest>& tiers,
                            std::int64_t now_ms) {
  core::TracePolicy policy;
  policy.now_ms = now_ms;
  policy.ttl = tier.ttl;
  policy.in_progress_values = tier.in_progress_values;
  policy.layout = tier.layout.name;
  for (const auto& other : tiers) {
    if (windowed(other)) {
      policy.window = core::describe(other.layout.window);
    }
  }
  policy.window_alone = windowed(tier);
  return policy;
}

// Each tier's verdict alone (a window's copies kept only in its own); then the chain's, spoken by the
// tier `speaks` chose, its record and keys the trace's own. One tier: the trace is that tier's.
void decide_chain(core::Trace& trace, const std::vector<TraceTierRequest>& tiers, std::size_t speaks,
                  std::int64_t now_ms, const core::GuardTrace* guard) {
  for (std::size_t k = 0; k < tiers.size() && tiers.size() > 1; ++k) {
    core::Trace alone = trace;
    alone.tiers.clear();
    alone.record = trace.tiers[k].record;
    alone.dedup_keys = trace.tiers[k].dedup_keys;
    for (auto& o : alone.occurrences) {
      o.window = windowed(tiers[k]) ? o.window : std::nullopt;
    }
    trace.tiers[k].verdict = core::decide_trace(alone, policy_of(tiers[k], tiers, now_ms));
  }
  trace.record = trace.tiers[speaks].record;
  trace.dedup_keys = trace.tiers[speaks].dedup_keys;
  core::TracePolicy policy = policy_of(tiers[speaks], tiers, now_ms);
  policy.window_alone = tiers.size() == 1 && windowed(tiers[0]);
  trace.verdict = guard ? core::decide_guard_trace(trace, *guard, policy) : core::decide_trace(trace, policy);
  trace.timeline = core::timeline(trace, policy);
  if (tiers.size() == 1) {
    trace.tiers.clear();
    trace.decided_by.reset();
  }
}

// Each trace's notes, verdict and timeline; one finding per verdict other than protected.
std::vector<core::Finding> decide_traces(std::vector<core::Trace>& traces,
                                         const std::vector<std::vector<std::string>>& longer,
                                         const std::vector<TraceTierRequest>& tiers,
                                         const std::vector<std::size_t>& speaks, std::int64_t now_ms, bool complete,
                                         std::size_t max_examples, const std::vector<core::GuardTrace>& guards) {
  std::map<std::string, core::FindingBuilder> by_verdict;
  for (std::size_t t = 0; t < traces.size(); ++t) {
    auto& trace = traces[t];
    std::sort(trace.occurrences.begin(), trace.occurrences.end(), [](const auto& a, const auto& b) {
      return std::tie(a.topic, a.partition, a.offset) < std::tie(b.topic, b.partition, b.offset);
    });
    if (trace.occurrences.empty()) {
      trace.notes = core::id_notes(trace.event_id, longer[t]);
    } else if (trimmed(trace.event_id) != trace.event_id) {
      trace.notes = core::id_notes(trace.event_id, {});
    }
    for (auto& tier : trace.tiers) {
      if (!complete && !trace.occurrences.empty()) {
        tier.record.state = core::TraceRecord::State::Unknown;
      }
      for (auto& key : tier.dedup_keys) { // looked up as bytes, shown as text (a Java-serialized key)
        key = core::escape_non_utf8(key);
      }
      if (tier.record.value) {
        tier.record.value = core::escape_non_utf8(*tier.record.value);
      }
    }
    decide_chain(trace, tiers, speaks[t], now_ms, guards.empty() ? nullptr : &guards[t]);
    if (trace.verdict.id == "protected") {
      continue;
    }
    auto [it, inserted] = by_verdict.try_emplace(trace.verdict.id, max_examples);
    const auto& first = trace.occurrences.empty() ? core::TraceOccurrence{} : trace.occurrences.front();
    it->second.add(first.partition, [&] {
      core::Example ex;
      ex.event_id = trace.event_id;
      ex.topic = first.topic;
      ex.partition = first.partition;
      ex.offset = first.offset;
      ex.timestamp_ms = trace.occurrences.empty() ? -1 : first.timestamp_ms;
      ex.dedup_key = trace.dedup_keys.empty() ? "" : trace.dedup_keys.front();
      ex.note = trace.verdict.text;
      return ex;
    });
  }
  return verdict_findings(by_verdict, !guards.empty());
}

} // namespace

reports::Report run_trace(const TraceRequest& request, core::EventSource& source, core::DedupStore& store,
                          core::SourceInfo info, std::int64_t now_ms) {
  reports::Report report = start_report("trace", now_ms, request.fail_on_text);
  report.placement = request.placement;
  std::vector<TraceTierRequest> tiers = tiers_of(request, store);
  std::vector<core::Trace> traces(request.ids.size());
  OccurrenceCollector collector(request, tiers, info, traces);
  core::IdentifyOptions identify = request.identify;
  identify.extra = collector.fields();
  core::Identifier identifier(identify);
  core::LogAnalyzer log(core::LogAnalyzerOptions{}); // observes nothing: trace adds no log findings
  std::int64_t events = 0;
  incomplete_on_failure(report, [&] {
    core::EventBatch batch;
    std::vector<core::Identity> identities;
    while (source.next_batch(batch)) {
      identifier.identify(batch, identities);
      events += static_cast<std::int64_t>(batch.events.size());
      for (std::size_t i = 0; i < batch.events.size(); ++i) {
        collector.observe(batch.events[i], identities[i]);
      }
    }
  });
  std::vector<std::vector<TierRecord>> states(tiers.size(), std::vector<TierRecord>(traces.size()));
  if (report.complete) {
    incomplete_on_failure(report, [&] {
      for (std::size_t k = 0; k < tiers.size(); ++k) {
        look_up_tier(tiers[k], k, now_ms, traces, states[k]);
      }
      if (request.effects) {
        look_up_effects(*request.effects, collector.effect_keys(), traces);
      }
    });
  }
  std::vector<std::size_t> speaks =
      tiers.size() > 1 ? choose_tiers(tiers, states, info, now_ms, traces) : std::vector<std::size_t>(traces.size());
  std::vector<core::GuardTrace> guards;
  for (std::size_t t = 0; t < traces.size() && request.version_guard; ++t) {
    guards.push_back(collector.guard_of(t, traces[t].event_id));
  }
  auto findings =
      decide_traces(traces, collector.longer(), tiers, speaks, now_ms, report.complete, request.max_examples, guards);
  collector.add_versions(traces);
  std::int64_t found = 0, occurrences = 0;
  for (const auto& trace : traces) {
    found += trace.occurrences.empty() ? 0 : 1;
    occurrences += static_cast<std::int64_t>(trace.occurrences.size());
  }
  report.summary = {{"events", events},
                    {"ids", static_cast<std::int64_t>(traces.size())},
                    {"found", found},
                    {"not_found", static_cast<std::int64_t>(traces.size()) - found},
                    {"occurrences", occurrences}};
  report.traces = std::move(traces);
  core::Span ttl = request.placement.ttl.span;
  report.settings = {{"id", core::to_string(request.identify.id)},
                     {"key template", request.key_template.text()},
                     {"ttl", ttl.is_infinite() ? std::string("none") : core::to_text(ttl)},
                     {"now", core::format_time(now_ms)},
                     {"fail on", request.fail_on_text}};
  if (request.versions) {
    core::LogAnalyzerOptions versions;
    versions.versions = request.versions;
    add_version_settings(report, request.identify, versions);
  }
  finish_report(report, std::move(info), log, std::move(findings), request.max_examples, request.fail_on,
                source.positions());
  return report;
}

} // namespace dedupctl::commands
