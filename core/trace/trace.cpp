#include "core/trace/trace.hpp"

#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <set>

namespace dedupctl::core {

std::string_view to_string(TraceRecord::State state) {
  switch (state) {
  case TraceRecord::State::Absent:
    return "absent";
  case TraceRecord::State::Present:
    return "present";
  case TraceRecord::State::Unknown:
    return "unknown";
  }
  return "unknown";
}

namespace {

std::string where(const TraceOccurrence& o) {
  return fmt::format("{}[{}]@{} ({})", o.topic, o.partition, o.offset,
                     o.timestamp_ms >= 0 ? format_time(o.timestamp_ms) : std::string("no timestamp"));
}

std::string fingerprint_text(std::uint64_t fp) { return fmt::format("{:016x}", fp); }

std::string record_text(const Trace& trace) {
  const auto& r = trace.record;
  std::string key = trace.dedup_keys.empty() ? "" : trace.dedup_keys.front();
  if (r.state == TraceRecord::State::Absent) {
    return fmt::format("no record under {}", key);
  }
  if (r.state == TraceRecord::State::Unknown) {
    return "the record is unknown";
  }
  std::string value = r.status ? *r.status : r.value.value_or("");
  if (!r.fields.empty()) {
    value.clear();
    for (const auto& [name, field] : r.fields) {
      value += fmt::format("{}{}={}", value.empty() ? "" : " ", name, field);
    }
  }
  return fmt::format("{} holds {}{}", key, value.empty() ? "a record" : "'" + value + "'",
                     r.pttl_ms ? fmt::format(", {} left", format_duration(*r.pttl_ms)) : std::string(", no expiry"));
}

} // namespace

namespace {

// The rules of decide_trace, in its order: each gives a verdict where it applies.

std::optional<TraceVerdict> reused_id(const Trace& trace) {
  const auto& occ = trace.occurrences;
  std::set<std::uint64_t> payloads;
  for (const auto& o : occ) {
    payloads.insert(o.fingerprint);
  }
  if (payloads.size() <= 1) {
    return std::nullopt;
  }
  TraceVerdict v;
  v.id = "id-reused";
  v.text = fmt::format("id reused: {} events carry {} different payloads under this id; a consumer that "
                       "deduplicates by it dropped the later ones",
                       occ.size(), payloads.size());
  for (const auto& o : occ) {
    v.evidence.push_back(fmt::format("{} payload {} ({} bytes, {})", where(o), fingerprint_text(o.fingerprint), o.size,
                                     o.type.empty() ? "no type" : o.type));
  }
  return v;
}

// What the window did with a copy, for the evidence and the timeline.
std::string_view window_text(WindowCall call) {
  switch (call) {
  case WindowCall::Applied:
    return "the window applied it (a new id)";
  case WindowCall::Skipped:
    return "the window skipped it (a repeat it still held)";
  case WindowCall::Reapplied:
    return "the window applied it again (it no longer held the id)";
  case WindowCall::Dropped:
    return "the window dropped it (its Bloom filter said seen; never applied)";
  }
  return "";
}

// Every copy the window was given, it dropped: the id was never applied.
std::optional<TraceVerdict> dropped_by_window(const Trace& trace, const TracePolicy& policy) {
  bool dropped = false;
  for (const auto& o : trace.occurrences) {
    if (o.window == WindowCall::Applied || o.window == WindowCall::Reapplied) {
      return std::nullopt;
    }
    dropped = dropped || o.window == WindowCall::Dropped;
  }
  if (!dropped) {
    return std::nullopt;
  }
  TraceVerdict v;
  v.id = "bloom-false-positive";
  v.text = fmt::format("dropped, never applied: the Bloom filter of {} said seen before the id was ever applied (a "
                       "false positive); no metric shows it",
                       policy.window);
  for (const auto& o : trace.occurrences) {
    if (o.window == WindowCall::Dropped) {
      v.evidence.push_back(fmt::format("{}: {}", where(o), window_text(*o.window)));
    }
  }
  v.evidence.push_back("the window is simulated from the range's start, empty as after a restart");
  return v;
}

// A window alone: a consumed copy that the window had forgotten was applied a second time.
std::optional<TraceVerdict> reapplied_by_window(const Trace& trace, const TracePolicy& policy) {
  if (!policy.window_alone) {
    return std::nullopt;
  }
  const TraceOccurrence* first = nullptr;
  for (const auto& o : trace.occurrences) {
    if (o.window == WindowCall::Applied && first == nullptr) {
      first = &o;
    }
    if (o.window != WindowCall::Reapplied || o.delivered == false || first == nullptr) {
      continue;
    }
    TraceVerdict v;
    v.id = "applied-twice";
    v.text = fmt::format("applied twice: {} no longer held the id when this copy arrived", policy.window);
    v.evidence.push_back(fmt::format("{}: {}", where(*first), window_text(WindowCall::Applied)));
    v.evidence.push_back(fmt::format("{}: {}", where(o), window_text(WindowCall::Reapplied)));
    v.evidence.push_back(o.delivered ? "it lies below the group's committed offset: it was consumed"
                                     : "without --group, whether it was consumed is not known");
    return v;
  }
  return std::nullopt;
}

std::optional<TraceVerdict> orphaned_claim(const Trace& trace, const TracePolicy& policy, bool any_delivered) {
  const auto& r = trace.record;
  std::string value = r.status ? *r.status : r.value.value_or("");
  bool claim = r.claim || is_in_progress(value, policy.in_progress_values);
  if (r.state != TraceRecord::State::Present || !claim || !(any_delivered || r.lapsed)) {
    return std::nullopt;
  }
  TraceVerdict v;
  v.id = "claim-orphaned";
  v.text = r.lapsed ? fmt::format("claimed, never completed, and the claim's lease has passed: {} takes the claim over "
                                  "and applies the event again at its next delivery",
                                  policy.layout)
                    : "claimed, never completed: the group moved past it while its record still says in progress; a "
                      "replay will skip it";
  v.evidence.push_back(record_text(trace));
  for (const auto& o : trace.occurrences) {
    if (o.delivered == true) {
      v.evidence.push_back(fmt::format("{} lies below the group's committed offset", where(o)));
    }
  }
  return v;
}

// Two consumed copies further apart than the TTL: the first one's record had lapsed.
std::optional<TraceVerdict> applied_twice(const Trace& trace, std::optional<std::int64_t> ttl) {
  if (!ttl) {
    return std::nullopt;
  }
  std::vector<const TraceOccurrence*> delivered;
  for (const auto& o : trace.occurrences) {
    if (o.delivered == true && o.timestamp_ms >= 0) {
      delivered.push_back(&o);
    }
  }
  std::sort(delivered.begin(), delivered.end(),
            [](const auto* a, const auto* b) { return a->timestamp_ms < b->timestamp_ms; });
  for (std::size_t i = 1; i < delivered.size(); ++i) {
    std::int64_t gap = delivered[i]->timestamp_ms - delivered[i - 1]->timestamp_ms;
    if (gap > *ttl) {
      TraceVerdict v;
      v.id = "applied-twice";
      v.text = "likely applied twice: the record had expired when the second copy arrived";
      v.evidence.push_back(fmt::format("copies at {} and {}, {} apart", where(*delivered[i - 1]), where(*delivered[i]),
                                       format_duration(gap)));
      v.evidence.push_back(fmt::format("the TTL is {}: the first copy's record lapsed {} before the second arrived",
                                       format_duration(*ttl), format_duration(gap - *ttl)));
      v.evidence.push_back("both lie below the group's committed offset: both were consumed");
      return v;
    }
  }
  return std::nullopt;
}

// No record: lost within its TTL, or exposed to a seek; nullopt where the event was not consumed.
std::optional<TraceVerdict> absent_record(const Trace& trace, const TracePolicy& policy,
                                          std::optional<std::int64_t> ttl, bool any_delivered, bool delivery_known) {
  const auto& occ = trace.occurrences;
  bool lapsed_record = trace.record.state == TraceRecord::State::Present && trace.record.lapsed && !trace.record.claim;
  if (trace.record.state != TraceRecord::State::Absent && !lapsed_record) {
    return std::nullopt;
  }
  const TraceOccurrence* newest = &occ.front();
  for (const auto& o : occ) {
    if (o.timestamp_ms > newest->timestamp_ms) {
      newest = &o;
    }
  }
  bool consumed = newest->delivered != false;
  std::int64_t age = policy.now_ms - newest->timestamp_ms;
  TraceVerdict v;
  if (ttl && consumed && newest->timestamp_ms >= 0 && age < *ttl && !lapsed_record) {
    v.id = "state-lost";
    v.text = "dedup state lost (flush, failover or eviction): the record is missing although the event is within "
             "its TTL";
    v.evidence.push_back(fmt::format("the newest copy, {}, is {} old; the TTL is {}", where(*newest),
                                     format_duration(age), format_duration(*ttl)));
    v.evidence.push_back(record_text(trace));
    if (!delivery_known) {
      v.evidence.push_back("without --group, whether it was consumed is not known");
    }
    return v;
  }
  if (!any_delivered && delivery_known) {
    return std::nullopt;
  }
  v.id = "exposed";
  v.text = trace.record.taken_over
               ? fmt::format("exposed: {} cannot read its record and takes it over, applying the event again, and the "
                             "log still holds it: a seek or replay re-applies it",
                             policy.layout)
           : lapsed_record
               ? fmt::format("exposed: its record's own expiry has passed, so {} treats it as expired although the key "
                             "is still there, and the log still holds it: a seek or replay re-applies it",
                             policy.layout)
           : any_delivered
               ? "exposed: consumed, its record is gone, and the log still holds it: a seek or replay re-applies it"
               : "exposed: its record is gone and the log still holds it: a seek or replay re-applies it";
  v.evidence.push_back(record_text(trace));
  v.evidence.push_back(fmt::format("{} is still in the log", where(*newest)));
  if (!delivery_known) {
    v.evidence.push_back("without --group, whether it was consumed is not known");
  }
  return v;
}

// The effect beside the record (--effects): a processed record over an absent effect is lost; a
// record gone says whether its event was applied (a seek charges twice) or never was (a seek repairs).
TraceVerdict with_effect(TraceVerdict v, const Trace& trace) {
  if (!trace.effect) {
    return v;
  }
  bool applied = *trace.effect;
  const auto& r = trace.record;
  bool processed = r.state == TraceRecord::State::Present && !r.claim && !r.lapsed;
  if (v.id == "protected" && processed && !applied) {
    v.id = "effect-lost";
    v.text = "lost: its record says processed but its effect is absent: every delivery skips it, no seek will apply it";
  } else if (v.id == "exposed" || v.id == "state-lost") {
    v.text = fmt::format("{}; {}", applied ? "applied once, unguarded" : "never applied", v.text);
    v.text += applied ? " (a second time)" : " (for the first time: the seek repairs it)";
  }
  v.evidence.insert(v.evidence.begin(), applied ? "its effect exists (--effects)" : "its effect is absent (--effects)");
  return v;
}

TraceVerdict protected_verdict(const Trace& trace) {
  TraceVerdict v;
  v.id = "protected";
  if (trace.record.fails) {
    v.text = "protected, but held: the library fails on its record at every delivery (no status, or one it does not "
             "know): no delivery applies the event, and the consumer stops on it until the record is mended";
  } else if (trace.record.state == TraceRecord::State::Absent) {
    v.text = "protected: not consumed yet (above the committed offset); its first delivery is still ahead";
  } else {
    v.text = "protected: the placement holds its record, so a redelivery is skipped";
  }
  v.evidence.push_back(record_text(trace));
  if (trace.occurrences.size() > 1) {
    v.evidence.push_back(fmt::format("{} copies in the log, one payload", trace.occurrences.size()));
  }
  return v;
}

} // namespace

TraceVerdict decide_trace(const Trace& trace, const TracePolicy& policy) {
  const auto& occ = trace.occurrences;
  if (occ.empty()) {
    TraceVerdict v;
    v.id = "not-found";
    v.text = fmt::format("{} is not in the range read: no event carries it", trace.event_id);
    v.evidence = trace.notes;
    return v;
  }
  bool any_delivered = std::any_of(occ.begin(), occ.end(), [](const auto& o) { return o.delivered == true; });
  bool delivery_known = std::all_of(occ.begin(), occ.end(), [](const auto& o) { return o.delivered.has_value(); });
  auto ttl = policy.ttl.finite_ms();
  if (auto v = reused_id(trace)) {
    return with_effect(*v, trace);
  }
  if (auto v = dropped_by_window(trace, policy)) {
    return with_effect(*v, trace);
  }
  if (auto v = orphaned_claim(trace, policy, any_delivered)) {
    return with_effect(*v, trace);
  }
  if (auto v = applied_twice(trace, ttl)) {
    return with_effect(*v, trace);
  }
  if (auto v = reapplied_by_window(trace, policy)) {
    return with_effect(*v, trace);
  }
  if (auto v = absent_record(trace, policy, ttl, any_delivered, delivery_known)) {
    return with_effect(*v, trace);
  }
  return with_effect(protected_verdict(trace), trace);
}

namespace {

// What a replay of the range from its start does with the event, after the guard has applied the
// entity's earlier versions above `held` (nullopt: no row): "" when it applies the event too.
std::string replay_of_range(const GuardTrace& guard, const std::optional<VersionValue>& held,
                            const VersionValue& version) {
  std::optional<VersionValue> highest = held;
  for (const auto& text : guard.earlier) {
    auto earlier = parse_version(text, guard.order);
    if (earlier && (!highest || compare_versions(*highest, *earlier, guard.order) < 0)) {
      highest = earlier;
    }
  }
  if (!highest || compare_versions(*highest, version, guard.order) < 0) {
    return guard.higher_follows ? "; a higher version follows it in the range" : "";
  }
  return fmt::format("; a replay of the range from its start applies version {} first and then drops this one",
                     highest->text);
}

} // namespace

TraceVerdict decide_guard_trace(const Trace& trace, const GuardTrace& guard, const TracePolicy& policy) {
  if (trace.occurrences.empty() || trace.record.state == TraceRecord::State::Unknown) {
    return decide_trace(trace, policy);
  }
  TraceVerdict v;
  v.id = "exposed";
  if (guard.entity.empty()) {
    v.text = "exposed: the event gives no entity or no version the guard compares (--entity, --version), so "
             "nobody can say the guard drops a redelivery";
    return v;
  }
  std::string subject = fmt::format("entity {} version {}", guard.entity, guard.version);
  auto version = parse_version(guard.version, guard.order);
  if (trace.record.state == TraceRecord::State::Absent && version) {
    v.text = fmt::format("exposed: the projection has no row of entity {}, so a redelivery applies this event (its "
                         "change is not in the projection){}",
                         guard.entity, replay_of_range(guard, std::nullopt, *version));
    v.evidence.push_back(subject);
    v.evidence.push_back(record_text(trace));
    return v;
  }
  std::string held = trace.record.value.value_or("");
  auto projection = parse_version(held, guard.order);
  v.evidence.push_back(fmt::format("{}, {}", subject,
                                   trace.record.state == TraceRecord::State::Absent
                                       ? std::string("no row")
                                       : fmt::format("the projection's {}", held)));
  v.evidence.push_back(record_text(trace));
  if (!projection || !version) { // an absent row with an unreadable event version: the event's
    v.text = fmt::format("exposed: {} version '{}' of entity {} does not parse under --version-order {}, so nobody "
                         "can say the guard drops a redelivery",
                         version ? "the projection's" : "the event's", version ? held : guard.version, guard.entity,
                         to_string(guard.order));
    return v;
  }
  if (compare_versions(*projection, *version, guard.order) >= 0) {
    v.id = "protected";
    v.text = fmt::format("protected: the projection holds version {} of entity {}, at or above this event's {}, "
                         "so the guard drops a redelivery",
                         held, guard.entity, guard.version);
    return v;
  }
  v.text = fmt::format("exposed: the projection holds version {} of entity {}, below this event's {}, so a "
                       "redelivery applies it (its change is not in the projection){}",
                       held, guard.entity, guard.version, replay_of_range(guard, projection, *version));
  return v;
}

std::vector<std::string> id_notes(std::string_view requested, const std::vector<std::string>& longer_ids_in_log) {
  std::vector<std::string> notes;
  auto first = requested.find_first_not_of(" \t\r\n");
  auto last = requested.find_last_not_of(" \t\r\n");
  if (first == std::string_view::npos) {
    notes.push_back("the id is empty or only whitespace");
    return notes;
  }
  if (first != 0 || last != requested.size() - 1) {
    notes.push_back(fmt::format("the id has stray whitespace; the log was searched for '{}' too",
                                requested.substr(first, last - first + 1)));
  }
  if (!longer_ids_in_log.empty()) {
    std::string list;
    for (const auto& id : longer_ids_in_log) {
      list += (list.empty() ? "" : ", ") + id;
    }
    notes.push_back(fmt::format("the id looks truncated: the log has {} starting with it", list));
  }
  return notes;
}

std::vector<TimelineEntry> timeline(const Trace& trace, const TracePolicy& policy) {
  std::vector<TimelineEntry> out;
  for (const auto& o : trace.occurrences) {
    out.push_back(
        {o.timestamp_ms, fmt::format("copy at {}[{}]@{}: {}, payload {} ({} bytes){}{}", o.topic, o.partition, o.offset,
                                     o.type.empty() ? "no type" : o.type, fingerprint_text(o.fingerprint), o.size,
                                     !o.delivered   ? ""
                                     : *o.delivered ? ", consumed by the group"
                                                    : ", not consumed yet",
                                     o.window ? fmt::format("; {}", window_text(*o.window)) : std::string())});
  }
  const auto& r = trace.record;
  if (r.processed_at_ms) {
    out.push_back({*r.processed_at_ms, "inbox row written (processed_at)"});
  }
  auto ttl = policy.ttl.finite_ms();
  if (r.state == TraceRecord::State::Absent && ttl) {
    for (const auto& o : trace.occurrences) {
      if (o.delivered != false && o.timestamp_ms >= 0 && o.timestamp_ms + *ttl < policy.now_ms) {
        out.push_back(
            {o.timestamp_ms + *ttl, fmt::format("a record written for {}[{}]@{} lapses at the latest (TTL {})", o.topic,
                                                o.partition, o.offset, format_duration(*ttl))});
      }
    }
  }
  out.push_back({policy.now_ms, fmt::format("now: {}", record_text(trace))});
  if (r.state == TraceRecord::State::Present && r.pttl_ms) {
    out.push_back({policy.now_ms + *r.pttl_ms, "the record expires"});
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.at_ms < b.at_ms; });
  return out;
}

} // namespace dedupctl::core
