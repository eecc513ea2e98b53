#include "core/time.hpp"
#include "reports/report.hpp"

#include <nlohmann/json.hpp>

namespace dedupctl::reports {

namespace {

using Json = nlohmann::ordered_json;

template <typename T> Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

Json time_json(const std::optional<std::int64_t>& ms) {
  return ms && *ms >= 0 ? Json(core::format_time(*ms)) : Json(nullptr);
}

Json source_json(const core::SourceInfo& source) {
  Json out;
  out["kind"] = source.kind;
  out["topic"] = source.topics.size() == 1 ? Json(source.topics.front()) : Json(nullptr);
  out["topics"] = source.topics;
  if (source.kind == "file") {
    out["path"] = source.path;
    out["invalid_lines"] = source.invalid_lines;
  } else {
    out["bootstrap"] = source.bootstrap;
  }
  out["group"] = optional_json(source.group);
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
    e["event_id"] = ex.event_id.empty() ? Json(nullptr) : Json(ex.event_id);
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
    examples.push_back(std::move(e));
  }
  out["examples"] = std::move(examples);
  out["advice"] = finding.advice;
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
  Json summary = Json::object();
  for (const auto& [name, value] : report.summary) {
    summary[name] = value;
  }
  doc["summary"] = std::move(summary);
  Json findings = Json::array();
  for (const auto& finding : report.findings) {
    findings.push_back(finding_json(finding));
  }
  doc["findings"] = std::move(findings);
  std::string text = doc.dump(2);
  text += '\n';
  std::fwrite(text.data(), 1, text.size(), out);
}

} // namespace dedupctl::reports
