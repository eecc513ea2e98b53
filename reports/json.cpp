#include "core/util/encoding.hpp"
#include "core/util/time.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dedupctl::reports {

namespace {

using Json = nlohmann::ordered_json;

template <typename T> Json optional_json(const std::optional<T>& value) { return value ? Json(*value) : Json(nullptr); }

// An event id as a JSON document can hold it: as it is when it is UTF-8; otherwise with U+FFFD for
// each byte that is not, and its exact bytes in `event_id_base64` beside it (docs/report-v1.md).
void put_event_id(Json& out, const std::string& id) {
  if (core::is_utf8(id)) {
    out["event_id"] = id;
    return;
  }
  out["event_id"] = core::replace_non_utf8(id);
  std::string bytes;
  core::base64_encode(id, core::Base64::Standard, true, bytes);
  out["event_id_base64"] = bytes;
}

Json time_json(const std::optional<std::int64_t>& ms) {
  return ms && *ms >= 0 ? Json(core::format_time(*ms)) : Json(nullptr);
}

Json source_json(const core::SourceInfo& source) {
  Json out;
  out["kind"] = core::to_string(source.kind);
  out["topic"] = source.topics.size() == 1 ? Json(source.topics.front()) : Json(nullptr);
  out["topics"] = source.topics;
  if (source.kind == core::SourceKind::File) {
    out["path"] = source.path;
    out["invalid_lines"] = source.invalid_lines;
    out["repeated_records"] = source.repeated_records;
  } else {
    out["bootstrap"] = source.bootstrap;
    out["isolation"] = source.isolation; // additive to v1
  }
  out["group"] = optional_json(source.group);
  if (!source.payload_decoding.empty()) {
    out["payload_decoding"] = source.payload_decoding; // additive to v1
  }
  Json partitions = Json::array();
  for (const auto& range : source.partitions) {
    Json p;
    p["topic"] = range.topic;
    p["partition"] = range.partition;
    p["from"] = range.from;
    p["to"] = range.to;
    p["log_start"] = optional_json(range.log_start);
    p["log_end"] = optional_json(range.log_end);
    p["committed"] = optional_json(range.committed);
    p["seek"] = optional_json(range.seek);
    p["events"] = range.events;
    p["first_timestamp"] = time_json(range.first_timestamp);
    p["last_timestamp"] = time_json(range.last_timestamp);
    partitions.push_back(std::move(p));
  }
  out["partitions"] = std::move(partitions);
  return out;
}

Json finding_json(const core::Finding& finding) {
  Json out;
  out["id"] = finding.id;
  out["severity"] = core::to_string(finding.severity);
  out["title"] = finding.title;
  out["count"] = finding.count;
  out["partitions"] = finding.partitions;
  Json examples = Json::array();
  for (const auto& ex : finding.examples) {
    Json e;
    if (ex.event_id.empty()) {
      e["event_id"] = nullptr;
    } else {
      put_event_id(e, ex.event_id);
    }
    e["topic"] = ex.topic;
    e["partition"] = ex.partition;
    e["offset"] = ex.offset;
    e["timestamp"] = time_json(ex.timestamp_ms);
    if (!ex.dedup_key.empty()) {
      e["dedup_key"] = ex.dedup_key;
    }
    if (!ex.note.empty()) {
      e["note"] = ex.note;
    }
    if (ex.cross_partition) {
      e["cross_partition"] = *ex.cross_partition;
    }
    examples.push_back(std::move(e));
  }
  out["examples"] = std::move(examples);
  out["advice"] = finding.advice;
  if (!finding.file.empty()) {
    out["location"] = Json{{"file", finding.file}, {"line", finding.line}, {"column", finding.column}};
  }
  if (!finding.subject.empty()) {
    out["subject"] = finding.subject;
  }
  return out;
}

Json span_json(const core::Span& span) {
  auto ms = span.finite_ms();
  return ms ? Json(*ms) : Json(nullptr);
}

// summary.window: what the simulated window did; a count is a number when exact, {"low", "high"} when
// the consumer's interleaving of several partitions decides it.
Json window_json(const core::WindowSummary& w) {
  auto count = [&](const core::WindowCount& c) -> Json {
    return w.exact ? Json(c.high) : Json{{"low", c.low}, {"high", c.high}};
  };
  Json out{{"layout", core::to_string(w.spec.kind)},
           {"scope", core::to_string(w.spec.scope)},
           {"capacity", w.spec.capacity},
           {"exact", w.exact},
           {"windows", w.windows},
           {"events", w.events},
           {"applied", w.applied},
           {"caught", w.caught},
           {"window_misses", count(w.window_misses)},
           {"false_positives", count(w.false_positives)}};
  if (w.bloom) {
    out["bloom"] = Json{{"impl", core::to_string(w.bloom->impl)},
                        {"items", w.spec.bloom_items},
                        {"fp", w.spec.bloom_fp},
                        {"bits", w.bloom->bits},
                        {"hashes", w.bloom->hashes}};
  }
  return out;
}

Json placement_json(const PlacementInfo& placement) {
  Json out;
  out["kind"] = placement.kind;
  out["store"] = placement.store;
  out["key_template"] = placement.key_template;
  out["layout"] = placement.layout; // additive to v1
  if (!placement.collection.empty()) {
    out["collection"] = placement.collection;
  }
  out["consumer"] = placement.consumer.empty() ? Json(nullptr) : Json(placement.consumer);
  const auto& ttl = placement.ttl;
  out["ttl_ms"] = span_json(ttl.span);
  out["ttl_infinite"] = ttl.span.is_infinite();
  out["ttl_source"] = core::report_name(ttl.source);
  // Additive to v1: where a declared figure was given ("flag", "config", "environment"); null otherwise.
  bool ttl_declared = ttl.source == core::TtlSource::Flag || ttl.source == core::TtlSource::InboxRetentionFlag;
  out["ttl_origin"] = ttl_declared ? Json(core::origin_name(ttl.origin)) : Json(nullptr);
  if (ttl.estimate_low && ttl.estimate_high) {
    out["ttl_estimate_ms"] = Json{{"low", *ttl.estimate_low}, {"high", *ttl.estimate_high}};
  } else {
    out["ttl_estimate_ms"] = nullptr;
  }
  core::Span retention = placement.retention ? placement.retention->span : core::Span::unknown();
  out["retention_ms"] = span_json(retention);
  out["retention_infinite"] = retention.is_infinite();
  out["retention_source"] = placement.retention ? core::report_name(placement.retention->source) : "";
  out["retention_compacted"] = placement.retention && placement.retention->compacted; // additive to v1
  bool retention_declared = placement.retention && placement.retention->source == core::RetentionSource::Flag;
  out["retention_origin"] = retention_declared ? Json(core::origin_name(placement.retention->origin)) : Json(nullptr);
  if (placement.effects) {
    const auto& e = *placement.effects;
    Json effects{{"kind", to_string(e.kind)}, {"store", e.store}};
    if (e.kind == EffectsKind::Postgres) {
      effects["table"] = e.table;
      effects["column"] = e.column;
    } else if (e.kind == EffectsKind::Kafka) {
      effects["topic"] = e.topic;
    } else {
      effects["key_template"] = e.key_template;
    }
    out["effects"] = std::move(effects);
  }
  return out;
}

// `complete` false: what a seek would re-apply, by type, and where it is safe from are null (an
// incomplete report is never a clean verdict).
Json replay_json(const core::ReplaySummary& replay, bool complete) {
  Json out;
  out["window"] = replay.window;
  out["events"] = replay.events;
  out["would_skip"] = replay.would_skip;
  out["would_reapply"] = replay.would_reapply;
  out["would_skip_unfinished"] = replay.would_skip_unfinished;
  out["first_delivery"] = replay.first_delivery;
  if (!complete) {
    out["would_reapply"] = nullptr;
    out["by_type"] = nullptr;
    out["safe_from"] = nullptr;
  } else {
    if (replay.would_reapply_applied && replay.would_reapply_unapplied) {
      out["would_reapply_applied"] = *replay.would_reapply_applied;
      out["would_reapply_unapplied"] = *replay.would_reapply_unapplied;
    }
    Json by_type = Json::object();
    for (const auto& [type, risk] : replay.by_type) {
      by_type[type] = Json{{"side_effects", core::to_string(risk.side_effects)}, {"would_reapply", risk.would_reapply}};
    }
    out["by_type"] = std::move(by_type);
    Json safe = Json::array();
    for (const auto& s : replay.safe_from) {
      safe.push_back(Json{{"topic", s.topic},
                          {"partition", s.partition},
                          {"offset", s.offset},
                          {"timestamp", time_json(s.timestamp_ms)}});
    }
    out["safe_from"] = std::move(safe);
  }
  if (replay.run) {
    const auto& run = *replay.run;
    out["mode"] = run.execute ? "execute" : "plan";
    out["run_id"] = run.run_id;
    out["resumed"] = run.resumed;
    if (!run.sink.empty()) {
      out["sink"] = run.sink;
    }
    if (run.execute) {
      out["replayed"] = run.replayed;
      out["skipped_duplicate"] = run.skipped_duplicate;
      out["skipped_claimed"] = run.skipped_claimed;
      out["failed"] = run.failed;
      out["released"] = run.released;
      out["found_in_sink"] = run.found_in_sink;
    }
    out["no_id"] = run.no_id;
    out["id_unfit"] = run.id_unfit;
    Json partitions = Json::array();
    for (const auto& p : run.partitions) {
      partitions.push_back(Json{{"topic", p.topic},
                                {"partition", p.partition},
                                {"from", p.from ? Json(*p.from) : Json()},
                                {"to", p.to ? Json(*p.to) : Json()},
                                {"events", p.events},
                                {run.execute ? "published" : "would_publish", p.publish},
                                {run.execute ? "skipped" : "would_skip", p.skip},
                                {"next", p.next ? Json(*p.next) : Json()}});
    }
    out["partitions"] = std::move(partitions);
  }
  return out;
}

Json trace_record_json(const core::TraceRecord& r) {
  Json record{{"state", core::to_string(r.state)},
              {"pttl_ms", r.pttl_ms ? Json(*r.pttl_ms) : Json()},
              {"value", r.value ? Json(*r.value) : Json()},
              {"processed_at", r.processed_at_ms ? Json(core::format_time(*r.processed_at_ms)) : Json()},
              {"status", r.status ? Json(*r.status) : Json()}};
  if (!r.fields.empty()) { // additive to v1: the record as the layout's library wrote it
    Json fields = Json::object();
    for (const auto& [name, value] : r.fields) {
      fields[name] = value;
    }
    record["fields"] = std::move(fields);
  }
  return record;
}

Json verdict_json(const core::TraceVerdict& verdict) {
  return Json{{"id", verdict.id}, {"text", verdict.text}, {"evidence", verdict.evidence}};
}

Json trace_json(const core::Trace& trace) {
  Json occurrences = Json::array();
  for (const auto& o : trace.occurrences) {
    Json occurrence{{"topic", o.topic},
                    {"partition", o.partition},
                    {"offset", o.offset},
                    {"timestamp", o.timestamp_ms >= 0 ? Json(core::format_time(o.timestamp_ms)) : Json()},
                    {"type", o.type.empty() ? Json() : Json(o.type)},
                    {"fingerprint", fmt::format("{:016x}", o.fingerprint)},
                    {"size", o.size},
                    {"delivered", o.delivered ? Json(*o.delivered) : Json()},
                    // --effects: the id's effect, the same for each of its occurrences
                    {"effect", trace.effect ? Json(*trace.effect ? "applied" : "not_applied") : Json()}};
    if (o.decoded) { // additive to v1: the decoded record of a framed payload
      occurrence["decoded_payload"] = Json::parse(*o.decoded, nullptr, false);
    }
    if (o.window) { // additive to v1: what a window in memory did with the copy
      occurrence["window"] = core::to_string(*o.window);
    }
    occurrences.push_back(std::move(occurrence));
  }
  Json record = trace_record_json(trace.record);
  Json timeline = Json::array();
  for (const auto& entry : trace.timeline) {
    timeline.push_back(Json{{"at", core::format_time(entry.at_ms)}, {"what", entry.what}});
  }
  Json out;
  put_event_id(out, trace.event_id);
  Json rest{{"found", !trace.occurrences.empty()},    {"occurrences", std::move(occurrences)},
            {"dedup_keys", trace.dedup_keys},         {"record", std::move(record)},
            {"verdict", verdict_json(trace.verdict)}, {"notes", trace.notes},
            {"timeline", std::move(timeline)}};
  out.update(rest);
  if (!trace.tiers.empty()) { // additive to v1: a chain's tiers, and the one whose record decides
    Json tiers = Json::array();
    for (const auto& tier : trace.tiers) {
      tiers.push_back(Json{{"tier", tier.name},
                           {"dedup_keys", tier.dedup_keys},
                           {"record", trace_record_json(tier.record)},
                           {"verdict", verdict_json(tier.verdict)}});
    }
    out["tiers"] = std::move(tiers);
    out["decided_by"] = trace.decided_by ? Json(*trace.decided_by + 1) : Json();
  }
  return out;
}

// placement.tiers: each tier in lookup order, as placement names a store and its TTL (the topic's
// retention and the consumer are the placement's).
Json tiers_json(const std::vector<TierReport>& tiers) {
  Json out = Json::array();
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    Json tier = placement_json(tiers[t].placement);
    for (const char* key : {"consumer", "retention_ms", "retention_infinite", "retention_source", "retention_compacted",
                            "retention_origin", "effects"}) {
      tier.erase(key);
    }
    tier["tier"] = t + 1;
    tier["survives_restart"] = tiers[t].survives_restart;
    out.push_back(std::move(tier));
  }
  return out;
}

// summary.tiers: what each tier alone holds, and what it lacks that another holds.
Json tier_counts_json(const std::vector<TierReport>& tiers) {
  Json out = Json::array();
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    Json tier{{"tier", t + 1}, {"store", tiers[t].placement.store}};
    for (const auto& [name, value] : tiers[t].counts) {
      tier[name] = value;
    }
    tier["key_collisions"] = tiers[t].key_collisions;
    tier["held_by_others"] = tiers[t].held_by_others;
    out.push_back(std::move(tier));
  }
  return out;
}

} // namespace

void render_json(const Report& report, std::FILE* out) {
  Json doc;
  doc["schema"] = "dedupctl.report/v1";
  doc["command"] = report.command;
  doc["generated_at"] = core::format_time(report.generated_at_ms);
  doc["complete"] = report.complete;
  doc["exit_code"] = report.exit_code;
  if (report.error) {
    doc["error"] = Json{{"message", *report.error}};
  }
  if (report.source) {
    doc["source"] = source_json(*report.source);
  }
  if (report.placement) {
    doc["placement"] = placement_json(*report.placement);
    if (!report.tiers.empty()) { // additive to v1: a chain of tiers
      doc["placement"]["tiers"] = tiers_json(report.tiers);
    }
  }
  Json summary = Json::object();
  for (const auto& [name, value] : report.summary) {
    summary[name] = value;
  }
  if (report.effects) {
    const auto& e = *report.effects;
    summary["effects"] = Json{{"checked", e.checked},
                              {"applied", e.applied},
                              {"not_applied", e.not_applied},
                              {"lost", e.lost},
                              {"unguarded", e.unguarded}};
  }
  if (report.window) {
    summary["window"] = window_json(*report.window);
  }
  if (!report.tiers.empty()) {
    summary["tiers"] = tier_counts_json(report.tiers);
  }
  doc["summary"] = std::move(summary);
  if (report.replay) {
    doc["replay"] = replay_json(*report.replay, report.complete);
  }
  Json findings = Json::array();
  for (const auto& finding : report.findings) {
    findings.push_back(finding_json(finding));
  }
  doc["findings"] = std::move(findings);
  if (report.command == "trace") {
    Json traces = Json::array();
    for (const auto& trace : report.traces) {
      traces.push_back(trace_json(trace));
    }
    doc["traces"] = std::move(traces);
  }
  if (!report.settings.empty()) {
    Json settings = Json::object(); // what the run used, as people read it (additive to v1)
    for (const auto& [name, value] : report.settings) {
      settings[name] = value;
    }
    doc["settings"] = std::move(settings);
    doc["settings_origin"] = report.settings_origin; // additive: "flag", "config", "environment", "default"
  }
  // Bytes that are not UTF-8 anywhere else (a key, a type read from a payload) become U+FFFD rather
  // than an exception: the document stays valid JSON.
  std::string text = doc.dump(2, ' ', false, Json::error_handler_t::replace);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), out);
}

} // namespace dedupctl::reports
