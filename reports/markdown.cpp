#include "core/util/time.hpp"
#include "reports/common.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>

namespace dedupctl::reports {

namespace {

// Markdown table cells cannot hold '|' or newlines.
std::string cell(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::string opt(const std::optional<std::int64_t>& value) { return value ? std::to_string(*value) : "–"; }

void print_source(const core::SourceInfo& source, std::FILE* out) {
  fmt::print(out, "## Source\n\n");
  fmt::print(out, "{} `{}`{}\n\n", source.kind == core::SourceKind::File ? "File" : "Kafka",
             source.kind == core::SourceKind::File ? source.path : source.bootstrap,
             source.group ? fmt::format(", group `{}`", *source.group) : "");
  fmt::print(out, "| partition | from | to | log start | log end | committed | events | first event | last event |\n");
  fmt::print(out, "|---|---:|---:|---:|---:|---:|---:|---|---|\n");
  for (const auto& range : source.partitions) {
    fmt::print(out, "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
               cell(detail::partition_name(range.topic, range.partition)), range.from, range.to, opt(range.log_start),
               opt(range.log_end), opt(range.committed), range.events,
               range.first_timestamp ? core::format_time(*range.first_timestamp) : "–",
               range.last_timestamp ? core::format_time(*range.last_timestamp) : "–");
  }
  fmt::print(out, "\n");
}

void print_placement(const PlacementInfo& p, std::FILE* out) {
  fmt::print(out, "## Placement\n\n{} `{}`, key template `{}`, TTL {} ({}){}.\n\n", p.kind, cell(p.store),
             cell(p.key_template), core::to_text(p.ttl.span), core::describe(p.ttl),
             p.retention
                 ? fmt::format(", retention {} ({})", core::to_text(p.retention->span), core::describe(*p.retention))
                 : std::string());
}

void print_coverage(const Report& report, std::FILE* out) {
  if (!report.coverage.empty()) {
    fmt::print(out, "## Coverage\n\n| partition |");
    for (auto state : detail::k_coverage_columns) {
      fmt::print(out, " {} |", core::to_string(state));
    }
    fmt::print(out, "\n|---|");
    for (std::size_t i = 0; i < std::size(detail::k_coverage_columns); ++i) {
      fmt::print(out, "---:|");
    }
    fmt::print(out, "\n");
    for (const auto& partition : report.coverage) {
      fmt::print(out, "| {} |", cell(detail::partition_name(partition.topic, partition.partition)));
      for (auto state : detail::k_coverage_columns) {
        fmt::print(out, " {} |", partition.states[static_cast<std::size_t>(state)]);
      }
      fmt::print(out, "\n");
    }
    fmt::print(out, "\n");
  }
}

// A table: the first row its headings (report-v1 names, worded as counters are), numbers right-aligned.
void print_table(const detail::Table& rows, bool word_heads, std::FILE* out) {
  fmt::print(out, "|");
  for (const auto& head : rows.front()) {
    fmt::print(out, " {} |", cell(word_heads ? detail::counter_label(head) : head));
  }
  fmt::print(out, "\n|");
  for (std::size_t c = 0; c < rows.front().size(); ++c) {
    fmt::print(out, "{}", c == 0 ? "---|" : "---:|");
  }
  fmt::print(out, "\n");
  for (std::size_t r = 1; r < rows.size(); ++r) {
    fmt::print(out, "|");
    for (const auto& value : rows[r]) {
      fmt::print(out, " {} |", cell(value));
    }
    fmt::print(out, "\n");
  }
  fmt::print(out, "\n");
}

void print_window(const core::WindowSummary& w, std::FILE* out) {
  fmt::print(out, "## Window\n\n{}{}.\n\n", cell(detail::window_shape(w)),
             w.exact ? "" : " (bounds: several partitions share it)");
  detail::Table rows{{"", "events"}};
  for (auto& row : detail::window_rows(w)) {
    rows.push_back(std::move(row));
  }
  print_table(rows, false, out);
}

void print_tiers(const std::vector<TierReport>& tiers, std::FILE* out) {
  fmt::print(out, "## Tiers\n\nLooked up in this order; an event's state is its best tier's.\n\n");
  print_table(detail::tier_table(tiers), true, out);
}

// An audit's replay window, or a replay's run or plan per partition.
void print_replay(const core::ReplaySummary& r, bool complete, std::FILE* out) {
  if (!r.run && !complete) {
    fmt::print(out, "## Replay window `{}`\n\n{} events read: {}.\n\n", r.window, r.events, detail::k_replay_unknown);
    return;
  }
  if (!r.run) {
    fmt::print(out,
               "## Replay window `{}`\n\n{} events: {} skipped, **{} re-applied**, {} skipped unfinished, {} "
               "first deliveries.\n\n",
               r.window, r.events, r.would_skip, r.would_reapply, r.would_skip_unfinished, r.first_delivery);
    if (auto split = core::reapply_split(r); !split.empty()) {
      fmt::print(out, "**{}**.\n\n", split);
    }
    for (const auto& safe : r.safe_from) {
      fmt::print(out, "- safe from `{}@{}`{}\n", detail::partition_name(safe.topic, safe.partition), safe.offset,
                 safe.timestamp_ms ? fmt::format(" ({})", core::format_time(*safe.timestamp_ms)) : "");
    }
    fmt::print(out, "\n");
    return;
  }
  const auto& run = *r.run;
  fmt::print(out, "## Replay {} `{}`\n\n", run.execute ? "run" : "plan", run.run_id);
  fmt::print(out, "{}\n\n",
             run.execute ? fmt::format("Into `{}`.", cell(run.sink))
                         : std::string("Nothing was published or claimed."));
  fmt::print(out, "| partition | from | to | events | {} | {} | next |\n|---|---:|---:|---:|---:|---:|---:|\n",
             run.execute ? "published" : "would publish", run.execute ? "skipped" : "would skip");
  for (const auto& p : run.partitions) {
    fmt::print(out, "| {} | {} | {} | {} | {} | {} | {} |\n", cell(detail::partition_name(p.topic, p.partition)),
               opt(p.from), opt(p.to), p.events, p.publish, p.skip, opt(p.next));
  }
  fmt::print(out, "\n");
}

void print_trace(const core::Trace& trace, std::FILE* out) {
  fmt::print(out, "## Trace `{}`\n\n**{}** ({})\n\n", cell(trace.event_id), cell(trace.verdict.text), trace.verdict.id);
  for (const auto& line : trace.verdict.evidence) {
    fmt::print(out, "- {}\n", cell(line));
  }
  if (!trace.verdict.evidence.empty()) {
    fmt::print(out, "\n");
  }
  if (trace.occurrences.empty()) {
    return;
  }
  fmt::print(out, "| partition | offset | timestamp | type | payload | size | consumed |\n"
                  "|---|---:|---|---|---|---:|---|\n");
  for (const auto& o : trace.occurrences) {
    fmt::print(out, "| {} | {} | {} | {} | `{:016x}` | {} | {} |\n", cell(detail::partition_name(o.topic, o.partition)),
               o.offset, o.timestamp_ms >= 0 ? core::format_time(o.timestamp_ms) : "–",
               o.type.empty() ? "–" : cell(o.type), o.fingerprint, o.size,
               !o.delivered   ? "unknown"
               : *o.delivered ? "yes"
                              : "no");
  }
  fmt::print(out, "\nDedup key{}: ", trace.dedup_keys.size() == 1 ? "" : "s");
  for (std::size_t k = 0; k < trace.dedup_keys.size(); ++k) {
    fmt::print(out, "{}`{}`", k ? ", " : "", cell(trace.dedup_keys[k]));
  }
  fmt::print(out, ". Record: {}.\n\n", core::to_string(trace.record.state));
  if (!trace.tiers.empty()) { // a chain: each tier alone, then the one that decides
    fmt::print(out, "| tier | key | record | alone |\n|---|---|---|---|\n");
    for (const auto& tier : trace.tiers) {
      fmt::print(out, "| {} | `{}` | {} | {} |\n", cell(tier.name),
                 cell(tier.dedup_keys.empty() ? "–" : tier.dedup_keys.front()), core::to_string(tier.record.state),
                 tier.verdict.id);
    }
    fmt::print(out, "\nDecided by {}.\n\n",
               trace.decided_by ? cell(trace.tiers[*trace.decided_by].name) : std::string("no tier"));
  }
  fmt::print(out, "Timeline:\n\n");
  for (const auto& entry : trace.timeline) {
    fmt::print(out, "1. {}: {}\n", core::format_time(entry.at_ms), cell(entry.what));
  }
  fmt::print(out, "\n");
}

void print_findings(const Report& report, std::FILE* out) {
  if (!report.summary.empty()) {
    fmt::print(out, "## Summary\n\n| | events |\n|---|---:|\n");
    for (const auto& [name, value] : report.summary) {
      fmt::print(out, "| {} | {} |\n", cell(detail::counter_label(name)), value);
    }
    if (report.effects) {
      for (const auto& row : detail::effect_rows(*report.effects)) {
        fmt::print(out, "| {} | {} |\n", cell(row.label), row.count);
      }
    }
    fmt::print(out, "\n");
  }
  fmt::print(out, "## Findings\n\n");
  if (report.findings.empty()) {
    fmt::print(out, "None.\n\n");
  }
  for (const auto& finding : report.findings) {
    fmt::print(out, "### {} `{}`: {}\n\n", core::to_string(finding.severity), finding.id, cell(finding.title));
    for (const auto& example : finding.examples) {
      fmt::print(out, "- `{}`\n", detail::example_line(example));
    }
    if (!finding.examples.empty()) {
      fmt::print(out, "\n");
    }
    fmt::print(out, "{}\n\n", finding.advice);
  }
}

void print_settings(const Report& report, std::FILE* out) {
  if (!report.settings.empty()) {
    fmt::print(out, "## Settings\n\n| setting | value | from |\n|---|---|---|\n");
    for (const auto& [name, value] : report.settings) {
      fmt::print(out, "| {} | `{}` | {} |\n", cell(name), cell(value), report.setting_origin(name));
    }
  }
}

} // namespace

void render_markdown(const Report& report, std::FILE* out) {
  fmt::print(out, "# dedupctl {}\n\n", report.command);
  fmt::print(out, "**{}**\n\n", cell(detail::verdict_sentence(report)));
  fmt::print(out, "Generated {}.\n\n", core::format_time(report.generated_at_ms));
  if (report.source) {
    print_source(*report.source, out);
  }
  if (report.placement) {
    print_placement(*report.placement, out);
  }
  print_coverage(report, out);
  if (report.window) {
    print_window(*report.window, out);
  }
  if (report.tiers.size() > 1) {
    print_tiers(report.tiers, out);
  }
  if (report.replay) {
    print_replay(*report.replay, report.complete, out);
  }
  for (const auto& trace : report.traces) {
    print_trace(trace, out);
  }
  print_findings(report, out);
  print_settings(report, out);
}

} // namespace dedupctl::reports
