#include "core/util/time.hpp"
#include "reports/common.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace dedupctl::reports {

namespace {

using detail::partition_name;

std::string opt(const std::optional<std::int64_t>& value) { return value ? std::to_string(*value) : "-"; }

std::string opt_time(const std::optional<std::int64_t>& value) {
  return value && *value >= 0 ? core::format_time(*value) : "-";
}

// Prints rows as left-aligned columns separated by two spaces.
void print_table(std::FILE* out, const std::vector<std::vector<std::string>>& rows, std::string_view indent) {
  std::vector<std::size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()), 0);
    for (std::size_t i = 0; i < row.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line(indent);
    for (std::size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) {
        line.append(widths[i] - row[i].size() + 2, ' ');
      }
    }
    fmt::print(out, "{}\n", line);
  }
}

// Wraps prose at ~96 columns under an indent.
void print_wrapped(std::FILE* out, std::string_view text, std::string_view indent) {
  constexpr std::size_t k_width = 96;
  std::string line(indent);
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t space = text.find(' ', pos);
    std::string_view word = text.substr(pos, space == std::string_view::npos ? std::string_view::npos : space - pos);
    if (line.size() > indent.size() && line.size() + 1 + word.size() > k_width) {
      fmt::print(out, "{}\n", line);
      line = std::string(indent);
    }
    if (line.size() > indent.size()) {
      line += ' ';
    }
    line += word;
    pos = space == std::string_view::npos ? text.size() : space + 1;
  }
  if (line.size() > indent.size()) {
    fmt::print(out, "{}\n", line);
  }
}

std::string paint(std::string_view text, core::Severity severity, bool color) {
  if (!color) {
    return std::string(text);
  }
  const char* code = severity == core::Severity::Error ? "31;1" : severity == core::Severity::Warning ? "33;1" : "36";
  return fmt::format("\x1b[{}m{}\x1b[0m", code, text);
}

// The header line and the partitions read (or the command alone, without a source).
void print_source(const Report& report, std::FILE* out) {
  std::int64_t events = 0;
  for (const auto& [name, value] : report.summary) {
    if (name == "events") {
      events = value;
    }
  }
  if (report.source) {
    const auto& source = *report.source;
    std::string topics;
    for (const auto& topic : source.topics) {
      topics += (topics.empty() ? "" : ", ") + topic;
    }
    fmt::print(out, "dedupctl {}: {} ({} partitions, {} events) from {}{}\n", report.command,
               topics.empty() ? "-" : topics, source.partitions.size(), events,
               source.kind == core::SourceKind::File ? source.path : source.bootstrap,
               source.group ? fmt::format(", group {}", *source.group) : "");
    if (source.isolation == "read_uncommitted") {
      fmt::print(out, "  read_uncommitted: records of aborted transactions are included (consumers never saw them)\n");
    }
    if (!source.payload_decoding.empty()) {
      fmt::print(out, "  payloads: {}\n", source.payload_decoding);
    }
    if (source.invalid_lines > 0) {
      fmt::print(out, "  {} invalid input lines were skipped (--skip-invalid)\n", source.invalid_lines);
    }
    if (source.repeated_records > 0) {
      fmt::print(out,
                 "  {} records appeared more than once in the input (same topic, partition, offset) and were "
                 "counted once\n",
                 source.repeated_records);
    }
    if (!source.partitions.empty()) {
      std::vector<std::vector<std::string>> rows;
      bool kafka = source.kind == core::SourceKind::Kafka;
      bool group = source.group.has_value();
      std::vector<std::string> head{"PARTITION", "FROM", "TO"};
      if (kafka) {
        head.insert(head.end(), {"LOG START", "LOG END"});
      }
      if (group) {
        head.push_back("COMMITTED");
      }
      head.insert(head.end(), {"EVENTS", "FIRST EVENT", "LAST EVENT"});
      rows.push_back(head);
      for (const auto& range : source.partitions) {
        std::vector<std::string> row{partition_name(range.topic, range.partition), std::to_string(range.from),
                                     std::to_string(range.to)};
        if (kafka) {
          row.insert(row.end(), {opt(range.log_start), opt(range.log_end)});
        }
        if (group) {
          row.push_back(opt(range.committed));
        }
        row.insert(row.end(),
                   {std::to_string(range.events), opt_time(range.first_timestamp), opt_time(range.last_timestamp)});
        rows.push_back(std::move(row));
      }
      fmt::print(out, "\n");
      print_table(out, rows, "  ");
    }
  } else {
    fmt::print(out, "dedupctl {}\n", report.command);
  }
}

void print_placement(const Report& report, std::FILE* out) {
  if (report.placement) {
    const auto& p = *report.placement;
    fmt::print(out, "\nPLACEMENT  {} {}  key {}{}{}\n", p.kind, p.store, p.key_template,
               p.layout == "plain" ? "" : "  layout " + p.layout,
               p.collection.empty() ? "" : "  collection " + p.collection);
    std::string estimate;
    if (p.ttl.estimate_low && p.ttl.estimate_high) {
      estimate = fmt::format(", records say {}..{}", core::format_duration(*p.ttl.estimate_low),
                             core::format_duration(*p.ttl.estimate_high));
      if (*p.ttl.estimate_low > *p.ttl.estimate_high) {
        estimate += ": the records disagree, they were not all written with one TTL";
      }
    }
    std::string retention = p.retention ? fmt::format("  retention {} ({})", core::to_text(p.retention->span),
                                                      core::describe(*p.retention))
                                        : ""; // replay: not its concern
    fmt::print(out, "  ttl {} ({}{}){}\n", core::to_text(p.ttl.span), core::describe(p.ttl), estimate, retention);
    if (p.effects) {
      const auto& e = *p.effects;
      fmt::print(out, "  effects {} {}  {}\n", to_string(e.kind), e.store,
                 e.kind == EffectsKind::Postgres ? fmt::format("table {} column {}", e.table, e.column)
                 : e.kind == EffectsKind::Kafka  ? "records of topic " + e.topic
                                                 : "key " + e.key_template);
    }
  }
}

// A counter's name as a table's column: "in_progress" is IN-PROGRESS.
std::string column_head(std::string_view name) {
  std::string head(name);
  for (char& c : head) {
    c = c == '_' ? '-' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return head;
}

void print_coverage(const Report& report, std::FILE* out) {
  if (!report.coverage.empty()) {
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> head{"PARTITION"};
    for (auto state : detail::k_coverage_columns) {
      head.push_back(column_head(core::to_string(state)));
    }
    rows.push_back(head);
    for (const auto& partition : report.coverage) {
      std::vector<std::string> row{partition_name(partition.topic, partition.partition)};
      for (auto state : detail::k_coverage_columns) {
        row.push_back(std::to_string(partition.states[static_cast<std::size_t>(state)]));
      }
      rows.push_back(std::move(row));
    }
    fmt::print(out, "\nCOVERAGE\n");
    print_table(out, rows, "  ");
  }
}

// memory:'s window as simulated over the log: its shape, then what it did (bounds as "L to H").
void print_window(const core::WindowSummary& w, std::FILE* out) {
  fmt::print(out, "\nWINDOW  {}{}\n", detail::window_shape(w),
             w.exact ? "" : "  (bounds: several partitions share it)");
  print_table(out, detail::window_rows(w), "  ");
}

// A chain of tiers: each tier in lookup order with what it alone holds; the summary above is the best
// tier's of each event.
void print_tiers(const std::vector<TierReport>& tiers, std::FILE* out) {
  auto rows = detail::tier_table(tiers);
  for (auto& head : rows.front()) {
    head = column_head(head);
  }
  fmt::print(out, "\nTIERS  (looked up in this order; an event's state above is its best tier's)\n");
  print_table(out, rows, "  ");
}

void print_summary(const Report& report, std::FILE* out) {
  if (!report.summary.empty()) {
    fmt::print(out, "\nSUMMARY\n");
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, value] : report.summary) {
      rows.push_back({detail::counter_label(name), std::to_string(value)});
    }
    print_table(out, rows, "  ");
  }
  if (report.effects) {
    fmt::print(out, "\nEFFECTS\n");
    std::vector<std::vector<std::string>> rows;
    for (const auto& row : detail::effect_rows(*report.effects)) {
      rows.push_back({row.label, std::to_string(row.count)});
    }
    print_table(out, rows, "  ");
  }
  if (report.window) {
    print_window(*report.window, out);
  }
  if (!report.tiers.empty()) {
    print_tiers(report.tiers, out);
  }
}

// A trace's record in one line: its state, value or status, and the time it has left.
std::string record_line(const core::TraceRecord& r) {
  return fmt::format("{}{}{}{}", core::to_string(r.state), r.value ? fmt::format(", value '{}'", *r.value) : "",
                     r.status ? fmt::format(", status '{}'", *r.status) : "",
                     r.state == core::TraceRecord::State::Present
                         ? (r.pttl_ms ? fmt::format(", {} left", core::format_duration(*r.pttl_ms)) : ", no expiry")
                         : "");
}

// A chain's tiers: each one's key, record and verdict alone, and which one decides.
void print_trace_tiers(const core::Trace& trace, std::FILE* out) {
  std::vector<std::vector<std::string>> rows{{"TIER", "KEY", "RECORD", "ALONE"}};
  for (const auto& tier : trace.tiers) {
    rows.push_back({tier.name, tier.dedup_keys.empty() ? "-" : tier.dedup_keys.front(), record_line(tier.record),
                    tier.verdict.id});
  }
  print_table(out, rows, "  ");
  fmt::print(out, "  decided by {}\n",
             trace.decided_by ? trace.tiers[*trace.decided_by].name : std::string("no tier: none holds the event"));
}

// trace: per id the verdict first, then the occurrences, the record, the timeline, the evidence.
void print_trace(const core::Trace& trace, std::FILE* out) {
  fmt::print(out, "\nTRACE {}  {}\n", trace.event_id, trace.verdict.text);
  if (!trace.occurrences.empty()) {
    bool windowed = trace.occurrences.front().window.has_value();
    std::vector<std::vector<std::string>> rows{
        {"PARTITION", "OFFSET", "TIMESTAMP", "TYPE", "PAYLOAD", "SIZE", "CONSUMED"}};
    if (windowed) {
      rows.front().emplace_back("WINDOW");
    }
    for (const auto& o : trace.occurrences) {
      rows.push_back({partition_name(o.topic, o.partition), std::to_string(o.offset),
                      o.timestamp_ms >= 0 ? core::format_time(o.timestamp_ms) : "-", o.type.empty() ? "-" : o.type,
                      fmt::format("{:016x}", o.fingerprint), std::to_string(o.size),
                      !o.delivered   ? "unknown"
                      : *o.delivered ? "yes"
                                     : "no"});
      if (windowed) {
        rows.back().emplace_back(o.window ? core::to_string(*o.window) : "-");
      }
    }
    print_table(out, rows, "  ");
    for (const auto& o : trace.occurrences) {
      if (o.decoded) {
        fmt::print(out, "  decoded    {} {}\n", partition_name(o.topic, o.partition) + "@" + std::to_string(o.offset),
                   *o.decoded);
      }
    }
    for (const auto& key : trace.dedup_keys) {
      fmt::print(out, "  dedup key  {}\n", key);
    }
    fmt::print(out, "  record     {}\n", record_line(trace.record));
    if (!trace.tiers.empty()) {
      print_trace_tiers(trace, out);
    }
    if (trace.effect) {
      fmt::print(out, "  effect     {}\n", *trace.effect ? "applied" : "not applied");
    }
    fmt::print(out, "  TIMELINE\n");
    for (const auto& entry : trace.timeline) {
      fmt::print(out, "    {}  {}\n", core::format_time(entry.at_ms), entry.what);
    }
  }
  for (const auto& line : trace.verdict.evidence) {
    fmt::print(out, "  - {}\n", line);
  }
  for (const auto& note : trace.notes) {
    if (std::find(trace.verdict.evidence.begin(), trace.verdict.evidence.end(), note) == trace.verdict.evidence.end()) {
      fmt::print(out, "  note: {}\n", note);
    }
  }
  fmt::print(out, "  verdict: {}\n", trace.verdict.id);
}

void print_findings(const Report& report, std::FILE* out, const RenderOptions& options) {
  fmt::print(out, "\nFINDINGS\n");
  if (report.findings.empty()) {
    fmt::print(out, "  none\n");
  }
  for (const auto& finding : report.findings) {
    fmt::print(out, "  {:<8} {}  {}\n", paint(core::to_string(finding.severity), finding.severity, options.color),
               finding.id, finding.title);
    for (const auto& example : finding.examples) {
      fmt::print(out, "           {}\n", detail::example_line(example));
    }
    if (finding.count > static_cast<std::int64_t>(finding.examples.size()) && !finding.examples.empty()) {
      fmt::print(out, "           … and {} more\n", finding.count - static_cast<std::int64_t>(finding.examples.size()));
    }
    print_wrapped(out, finding.advice, "           ");
  }
}

// A replay's run or plan per partition, or an audit's replay window.
void print_replay(const Report& report, std::FILE* out) {
  if (report.replay && report.replay->run) {
    // replay: per partition what this run read, published (or would) and skipped, and where a
    // rerun with the checkpoint would start.
    const auto& run = *report.replay->run;
    fmt::print(out, "\n{} {}{}\n", run.execute ? "REPLAY RUN" : "REPLAY PLAN", run.run_id,
               run.execute ? fmt::format(" into {}", run.sink) : " (nothing published, nothing claimed)");
    std::vector<std::vector<std::string>> rows{{"PARTITION", "FROM", "TO", "EVENTS",
                                                run.execute ? "PUBLISHED" : "WOULD-PUBLISH",
                                                run.execute ? "SKIPPED" : "WOULD-SKIP", "NEXT"}};
    auto offset = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("-"); };
    for (const auto& p : run.partitions) {
      rows.push_back({partition_name(p.topic, p.partition), offset(p.from), offset(p.to), std::to_string(p.events),
                      std::to_string(p.publish), std::to_string(p.skip), offset(p.next)});
    }
    print_table(out, rows, "  ");
  } else if (report.replay) {
    const auto& r = *report.replay;
    fmt::print(out, "\nREPLAY WINDOW {}\n", r.window);
    if (!report.complete) {
      fmt::print(out, "  {} events read: {}\n", r.events, detail::k_replay_unknown);
      return;
    }
    fmt::print(out,
               "  {} events: {} would be skipped, {} re-applied, {} skipped unfinished (orphaned), {} first "
               "deliveries\n",
               r.events, r.would_skip, r.would_reapply, r.would_skip_unfinished, r.first_delivery);
    if (auto split = core::reapply_split(r); !split.empty()) {
      fmt::print(out, "  {}\n", split);
    }
    for (const auto& [type, risk] : r.by_type) {
      fmt::print(out, "  {:<24} {:>8} re-applied  ({})\n", type, risk.would_reapply,
                 core::to_string(risk.side_effects));
    }
    for (const auto& safe : r.safe_from) {
      fmt::print(out, "  safe from {}@{}{}\n", partition_name(safe.topic, safe.partition), safe.offset,
                 safe.timestamp_ms ? fmt::format(" ({})", core::format_time(*safe.timestamp_ms)) : "");
    }
  }
}

void print_settings(const Report& report, std::FILE* out) {
  if (!report.settings.empty()) {
    fmt::print(out, "\nSETTINGS\n");
    std::vector<std::vector<std::string>> rows;
    for (const auto& [name, value] : report.settings) {
      auto origin = report.setting_origin(name);
      rows.push_back({name, value, origin.empty() ? "" : fmt::format("({})", origin)});
    }
    print_table(out, rows, "  ");
  }
}

} // namespace

void render_text(const Report& report, std::FILE* out, const RenderOptions& options) {
  print_source(report, out);
  print_placement(report, out);
  print_coverage(report, out);
  print_summary(report, out);
  for (const auto& trace : report.traces) {
    print_trace(trace, out);
  }
  print_findings(report, out, options);
  print_replay(report, out);
  print_settings(report, out);
  fmt::print(out, "\n{}\n", detail::verdict_sentence(report));
}

} // namespace dedupctl::reports
