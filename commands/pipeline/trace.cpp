#include "commands/pipeline/trace.hpp"

#include "commands/pipeline/common.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/util/encoding.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
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
    {"not-found", core::Severity::Info, "Check the id (see the notes), the range (--from/--to) and --id."},
};

// One finding per verdict, in k_verdict_findings' order: "N traced ids: VERDICT", or how many
// ids are not in the range read.
std::vector<core::Finding> verdict_findings(const std::map<std::string, core::FindingBuilder>& by_verdict) {
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
    if (auto f = it->second.build(std::string(rule.id), rule.severity, title, std::string(rule.advice))) {
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

// Reads the range once and keeps every occurrence of the requested ids, and for ids not found,
// log ids that start with them (a truncated paste).
class OccurrenceCollector {
public:
  OccurrenceCollector(const TraceRequest& request, const core::SourceInfo& info, std::vector<core::Trace>& traces)
      : m_request(request), m_traces(traces), m_longer(request.ids.size()), m_effect_keys(request.ids.size()),
        m_effects_template(core::after_fields_of(request.key_template, request.effects_template)),
        m_has_group(info.group.has_value()) {
    for (std::size_t i = 0; i < request.ids.size(); ++i) {
      traces[i].event_id = request.ids[i];
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
  }

  void observe(const core::Event& event, const core::Identity& identity) {
    if (!identity.has_id) {
      return;
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
    core::render_event_key(m_request.key_template, event, identity, m_request.consumer, m_rendered);
    if (m_request.effects) {
      core::render_event_key(m_effects_template, event, identity, m_request.consumer, m_effect_rendered);
    }
    for (std::size_t t : it->second) {
      auto& trace = m_traces[t];
      if (m_request.effects && m_effect_keys[t].empty()) {
        m_effect_keys[t] = m_effect_rendered; // the first occurrence's, as the first dedup key
      }
      trace.occurrences.push_back(o);
      if (std::find(trace.dedup_keys.begin(), trace.dedup_keys.end(), m_rendered) == trace.dedup_keys.end()) {
        trace.dedup_keys.push_back(m_rendered);
      }
    }
  }

  // Ids in the log that start with each requested id, a few per id.
  const std::vector<std::vector<std::string>>& longer() const { return m_longer; }
  // --effects: per trace, the key its effect is looked up by ("" when not found).
  const std::vector<std::string>& effect_keys() const { return m_effect_keys; }

private:
  static constexpr std::size_t k_prefix_ids = 64;
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
  core::KeyTemplate m_effects_template; // rendered from the same extra values as the dedup key
  std::string m_effect_rendered;
  std::map<std::pair<std::string, std::int32_t>, std::optional<std::int64_t>> m_committed;
  bool m_has_group;
  std::string m_rendered;
};

// The records of the first key of every found id, in one lookup. An inbox row's value is its
// status; its remaining TTL is counted from its processed_at.
void look_up_records(const TraceRequest& request, core::DedupStore& store, const core::CoveragePolicy& coverage,
                     std::vector<core::Trace>& traces) {
  std::vector<std::string> keys;
  std::vector<std::size_t> looked_up;
  for (std::size_t t = 0; t < traces.size(); ++t) {
    if (!traces[t].dedup_keys.empty()) {
      keys.push_back(traces[t].dedup_keys.front());
      looked_up.push_back(t);
    }
  }
  std::vector<core::RecordState> states;
  if (!keys.empty()) {
    store.lookup(keys, states);
  }
  for (std::size_t k = 0; k < looked_up.size(); ++k) {
    core::TraceRecord& record = traces[looked_up[k]].record;
    const auto& state = states[k];
    record.state = state.kind == core::RecordState::Kind::Present ? core::TraceRecord::State::Present
                                                                  : core::TraceRecord::State::Absent;
    if (state.kind != core::RecordState::Kind::Present) {
      continue;
    }
    record.pttl_ms = core::remaining_ms(state, coverage);
    if (request.inbox) {
      record.status = std::string(state.value);
      record.processed_at_ms = state.processed_at_ms;
      if (auto* inbox = dynamic_cast<core::InboxStore*>(&store)) {
        record.fields = inbox->row_fields(keys[k]);
      }
    } else {
      record.value = core::snapshot_value(request.layout, state.value); // not a JSON record's response
      record.fields = core::record_fields(request.layout, state.value);
    }
    record.claim = state.claim;
    record.lapsed =
        state.claim ? core::claim_lapsed(state, coverage.now_ms) : core::past_own_expiry(state, coverage.now_ms);
    record.fails = state.fails && !record.lapsed;
    record.taken_over = state.taken_over && !record.lapsed;
    record.lapsed = record.lapsed || record.taken_over;
  }
  for (auto& trace : traces) { // looked up as bytes, shown as text (a Java-serialized key)
    for (auto& key : trace.dedup_keys) {
      key = core::escape_non_utf8(key);
    }
    if (trace.record.value) {
      trace.record.value = core::escape_non_utf8(*trace.record.value);
    }
  }
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

// Each trace's notes, verdict and timeline; one finding per verdict other than protected.
std::vector<core::Finding> decide_traces(std::vector<core::Trace>& traces,
                                         const std::vector<std::vector<std::string>>& longer,
                                         const core::TracePolicy& policy, bool complete, std::size_t max_examples) {
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
    if (!complete && !trace.occurrences.empty()) {
      trace.record.state = core::TraceRecord::State::Unknown;
    }
    trace.verdict = core::decide_trace(trace, policy);
    trace.timeline = core::timeline(trace, policy);
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
  return verdict_findings(by_verdict);
}

} // namespace

reports::Report run_trace(const TraceRequest& request, core::EventSource& source, core::DedupStore& store,
                          core::SourceInfo info, std::int64_t now_ms) {
  reports::Report report = start_report("trace", now_ms, request.fail_on_text);
  report.placement = request.placement;
  core::TracePolicy policy;
  policy.now_ms = now_ms;
  policy.ttl = request.placement.ttl.span;
  policy.in_progress_values = request.in_progress_values;
  policy.layout = request.layout.name;
  core::CoveragePolicy coverage; // how long a record has left: its pttl, or an inbox row's retention
  coverage.now_ms = now_ms;
  coverage.ttl = policy.ttl;

  std::vector<core::Trace> traces(request.ids.size());
  OccurrenceCollector collector(request, info, traces);
  core::IdentifyOptions identify = request.identify;
  identify.extra = core::joint_fields(request.key_template, request.effects_template);
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
  if (report.complete) {
    incomplete_on_failure(report, [&] {
      look_up_records(request, store, coverage, traces);
      if (request.effects) {
        look_up_effects(*request.effects, collector.effect_keys(), traces);
      }
    });
  }
  auto findings = decide_traces(traces, collector.longer(), policy, report.complete, request.max_examples);
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
  report.settings = {{"id", core::to_string(request.identify.id)},
                     {"key template", request.key_template.text()},
                     {"ttl", policy.ttl.is_infinite() ? std::string("none") : core::to_text(policy.ttl)},
                     {"now", core::format_time(now_ms)},
                     {"fail on", request.fail_on_text}};
  finish_report(report, std::move(info), log, std::move(findings), request.max_examples, request.fail_on,
                source.positions());
  return report;
}

} // namespace dedupctl::commands
