#include "reports/common.hpp"

#include "core/util/encoding.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::reports::detail {

std::string partition_name(const std::string& topic, std::int32_t partition) {
  return fmt::format("{}[{}]", topic, partition);
}

std::vector<EffectRow> effect_rows(const core::EffectCounts& e) {
  return {{"effects.checked", "effects checked", e.checked},
          {"effects.applied", "applied", e.applied},
          {"effects.not_applied", "not applied", e.not_applied},
          {"effects.lost", "lost (marked processed, never applied)", e.lost},
          {"effects.unguarded", "unguarded (applied, no record guards it)", e.unguarded}};
}

std::string counter_label(const std::string& name) {
  if (name == "no_id") {
    return "without an event id";
  }
  if (name == "id_unfit") {
    return "with an id the placement cannot hold";
  }
  std::string out = name;
  for (char& c : out) {
    if (c == '_') {
      c = ' ';
    }
  }
  return out;
}

std::string severity_tally(const Report& report) {
  int errors = 0;
  int warnings = 0;
  int infos = 0;
  for (const auto& finding : report.findings) {
    switch (finding.severity) {
    case core::Severity::Error:
      ++errors;
      break;
    case core::Severity::Warning:
      ++warnings;
      break;
    case core::Severity::Info:
      ++infos;
      break;
    }
  }
  return fmt::format("{} error{}, {} warning{}, {} info", errors, errors == 1 ? "" : "s", warnings,
                     warnings == 1 ? "" : "s", infos);
}

std::string verdict_sentence(const Report& report) {
  if (!report.complete) {
    return fmt::format("INCOMPLETE: {}. The counts cover only what was read; no verdict (exit {}).",
                       report.error.value_or("the run did not finish"), report.exit_code);
  }
  if (report.findings.empty()) {
    return fmt::format("clean: no findings (exit {}).", report.exit_code);
  }
  return fmt::format("{} (exit {}, --fail-on {}).", severity_tally(report), report.exit_code, report.fail_on);
}

std::string example_line(const core::Example& example) {
  std::string line = fmt::format("{}@{}", partition_name(example.topic, example.partition), example.offset);
  if (!example.event_id.empty()) {
    line += fmt::format("  id {}", example.event_id);
  }
  if (example.timestamp_ms >= 0) {
    line += fmt::format("  {}", core::format_time(example.timestamp_ms));
  }
  if (!example.dedup_key.empty()) {
    line += fmt::format("  key {}", example.dedup_key);
  }
  if (!example.note.empty()) {
    line += fmt::format("  ({})", example.note);
  }
  return line;
}

// XML and HTML text and attribute escaping: & < > " '.
std::string xml_escape(std::string_view bytes) {
  std::string out;
  std::string text = core::escape_non_utf8(bytes);
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

} // namespace dedupctl::reports::detail

namespace dedupctl::reports {

std::string_view to_string(EffectsKind kind) {
  switch (kind) {
  case EffectsKind::Postgres:
    return "postgres";
  case EffectsKind::Redis:
    return "redis";
  case EffectsKind::Kafka:
    return "kafka";
  }
  return "postgres";
}

detail::Table detail::tier_table(const std::vector<TierReport>& tiers) {
  Table rows{{"tier", "store", "layout", "ttl"}};
  if (tiers.empty()) {
    return rows;
  }
  for (const auto& [name, value] : tiers.front().counts) {
    rows.front().push_back(name);
  }
  rows.front().push_back("held_elsewhere");
  for (std::size_t t = 0; t < tiers.size(); ++t) {
    const auto& tier = tiers[t];
    std::vector<std::string> row{std::to_string(t + 1), tier.placement.store, tier.placement.layout,
                                 tier.survives_restart ? core::to_text(tier.placement.ttl.span) : "until restart"};
    for (const auto& [name, value] : tier.counts) {
      row.push_back(std::to_string(value));
    }
    row.push_back(std::to_string(tier.held_by_others));
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string detail::window_shape(const core::WindowSummary& w) {
  std::string shape = fmt::format("{} of {} ids, one window a {}", core::to_string(w.spec.kind), w.spec.capacity,
                                  core::to_string(w.spec.scope));
  if (w.bloom) {
    shape += fmt::format("; Bloom ({}) for {} ids at {}: {} bits, {} hashes", core::to_string(w.bloom->impl),
                         w.spec.bloom_items, w.spec.bloom_fp, w.bloom->bits, w.bloom->hashes);
  }
  return shape;
}

detail::Table detail::window_rows(const core::WindowSummary& w) {
  auto count = [&](const core::WindowCount& c) {
    return c.low == c.high ? std::to_string(c.high) : fmt::format("{} to {}", c.low, c.high);
  };
  return {{"events decided", std::to_string(w.events)},
          {"applied", std::to_string(w.applied)},
          {"duplicates caught", std::to_string(w.caught)},
          {"window misses (applied again)", count(w.window_misses)},
          {"false positives (dropped)", count(w.false_positives)}};
}

} // namespace dedupctl::reports
