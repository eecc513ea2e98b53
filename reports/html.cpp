// --format html: one self-contained page (inline CSS and SVG, no script, no external request) that
// reads at desktop and phone widths: the verdict first, the numbers, for an audit a chart of
// coverage states over event time per partition with now - TTL, now - retention and the seek point
// marked, the replay window, the findings with examples, and the settings used.
#include "reports/common.hpp"
#include "reports/report.hpp"

#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <string>

namespace dedupctl::reports {

namespace {

std::string esc(std::string_view text) { return detail::xml_escape(text); }

constexpr const char* k_style = R"(
*{box-sizing:border-box}body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1b1f24;background:#f6f7f9}
main{max-width:1100px;margin:0 auto;padding:16px}h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .5em}
.verdict{padding:14px 16px;border-radius:8px;font-weight:600;border-left:6px solid}.verdict.error{background:#fdecea;border-color:#c62828}
.verdict.warning{background:#fff6e0;border-color:#e0a100}.verdict.clean{background:#e8f5e9;border-color:#2e7d32}.verdict.incomplete{background:#eceff1;border-color:#455a64}
.meta{color:#57606a;font-size:.9em}.cards{display:flex;flex-wrap:wrap;gap:8px}.card{background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:8px 12px;min-width:120px;flex:1 1 120px}
.card .n{font-size:1.3em;font-weight:700;font-variant-numeric:tabular-nums}.card .l{color:#57606a;font-size:.85em}
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%;background:#fff;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d8dee4;padding:4px 8px;text-align:left;vertical-align:top}td.num{text-align:right}
.chart{background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:8px;margin:8px 0;overflow-x:auto}.chart svg{width:100%;min-width:540px;height:auto;display:block}
.legend{display:flex;flex-wrap:wrap;gap:10px;font-size:.85em;margin:6px 0}.legend span::before{content:"";display:inline-block;width:10px;height:10px;margin-right:4px;background:var(--c)}
.finding{background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:10px 12px;margin:8px 0}.sev{display:inline-block;padding:0 6px;border-radius:4px;color:#fff;font-size:.8em;margin-right:6px}
.sev.error{background:#c62828}.sev.warning{background:#b07d00}.sev.info{background:#546e7a}.ex{font-family:ui-monospace,monospace;font-size:.85em;overflow-wrap:anywhere}
code{font-family:ui-monospace,monospace;overflow-wrap:anywhere}@media (max-width:600px){main{padding:8px}body{font-size:14px}.card{min-width:45%}}
)";

// One colour per coverage state, in k_coverage_columns order.
constexpr const char* k_colors[] = {"#2e7d32", "#9ccc65", "#ef6c00", "#c62828",
                                    "#90a4ae", "#42a5f5", "#8e24aa", "#455a64"};

std::string severity_class(const Report& report) {
  if (!report.complete) {
    return "incomplete";
  }
  bool warning = false;
  for (const auto& f : report.findings) {
    if (f.severity == core::Severity::Error) {
      return "error";
    }
    warning |= f.severity == core::Severity::Warning;
  }
  return warning ? "warning" : "clean";
}

// A stacked bar per bucket, and dashed lines at the marks that fall inside the partition's span.
void chart(std::string& out, const core::PartitionCoverage& p, const Report& report) {
  const auto& h = p.histogram;
  if (h.empty()) {
    return;
  }
  constexpr double w = 720, ht = 224, left = 44, right = 8, top = 44, bottom = 26;
  const auto& buckets = h.buckets();
  std::int64_t peak = 1;
  for (const auto& b : buckets) {
    std::int64_t sum = 0;
    for (auto n : b) {
      sum += n;
    }
    peak = std::max(peak, sum);
  }
  std::int64_t start = h.origin_ms();
  std::int64_t end = start + static_cast<std::int64_t>(buckets.size()) * h.width_ms();
  double plot_w = w - left - right, plot_h = ht - top - bottom;
  auto x_of = [&](std::int64_t ms) {
    return left + plot_w * static_cast<double>(ms - start) / static_cast<double>(end - start);
  };
  out += fmt::format("<div class=\"chart\" data-partition=\"{}\"><div><strong>{}</strong> <span class=\"meta\">{} "
                     "buckets of {}</span></div>",
                     p.partition, esc(detail::partition_name(p.topic, p.partition)), buckets.size(),
                     core::format_duration(h.width_ms()));
  out += fmt::format("<svg viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"coverage states over event time of {}\">", w,
                     ht, esc(detail::partition_name(p.topic, p.partition)));
  out += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#8c959f\"/>", left, top + plot_h,
                     w - right);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>", left - 4, top + 8, peak);
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">0</text>", left - 4, top + plot_h);
  double bar_w = plot_w / static_cast<double>(buckets.size());
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    double y = top + plot_h;
    for (std::size_t c = 0; c < std::size(detail::k_coverage_columns); ++c) {
      auto n = buckets[i][static_cast<std::size_t>(detail::k_coverage_columns[c])];
      if (n == 0) {
        continue;
      }
      double bh = plot_h * static_cast<double>(n) / static_cast<double>(peak);
      y -= bh;
      out += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"><title>{}: {} "
                         "{}</title></rect>",
                         left + bar_w * static_cast<double>(i) + 0.5, y, std::max(bar_w - 1, 0.5), bh, k_colors[c],
                         core::format_time(start + static_cast<std::int64_t>(i) * h.width_ms()), n,
                         core::to_string(detail::k_coverage_columns[c]));
    }
  }
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>", left, ht - 6, core::format_time(start));
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"11\" text-anchor=\"end\">{}</text>", w - right, ht - 6,
                     core::format_time(end));
  int marks = 0; // labels go on rows of their own so that close marks stay legible
  auto mark = [&](std::int64_t at, const std::string& label, const char* color) {
    double label_y = 12.0 + 13.0 * marks++;
    std::int64_t clamped = std::clamp(at, start, end);
    double x = x_of(clamped);
    std::string text = at < start ? label + " (earlier)" : at > end ? label + " (later)" : label;
    out += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1.5\" "
                       "stroke-dasharray=\"4 3\"/><text x=\"{0:.1f}\" y=\"{4}\" font-size=\"11\" fill=\"{3}\" "
                       "text-anchor=\"{5}\" data-mark=\"{6}\">{6}</text>",
                       x, label_y + 2, top + plot_h, color, label_y, x > w / 2 ? "end" : "start", esc(text));
  };
  std::int64_t now = report.generated_at_ms;
  if (report.placement) {
    const auto& pl = *report.placement;
    if (auto ttl = pl.ttl.span.finite_ms()) {
      mark(now - *ttl, "now − TTL", "#c62828");
    }
    if (auto retention = pl.retention ? pl.retention->span.finite_ms() : std::nullopt) {
      mark(now - *retention, "now − retention", "#1565c0");
    }
  }
  if (p.window_start_ms) {
    mark(*p.window_start_ms, "seek", "#6a1b9a");
  }
  out += "</svg></div>";
}

// When the report was made and from what.
void meta(std::string& out, const Report& report) {
  out += fmt::format("<p class=\"meta\">Generated {}", core::format_time(report.generated_at_ms));
  if (report.source) {
    std::string topics;
    for (const auto& t : report.source->topics) {
      topics += (topics.empty() ? "" : ", ") + t;
    }
    out +=
        fmt::format(" from {} <code>{}</code>{}", report.source->kind == core::SourceKind::File ? "file" : "Kafka",
                    esc(report.source->kind == core::SourceKind::File ? report.source->path : report.source->bootstrap),
                    topics.empty() ? "" : fmt::format(", topic <code>{}</code>", esc(topics)));
    if (report.source->group) {
      out += fmt::format(", group <code>{}</code>", esc(*report.source->group));
    }
  }
  out += ".</p>";
}

void placement(std::string& out, const Report& report) {
  if (report.placement) {
    const auto& p = *report.placement;
    out += fmt::format("<p class=\"meta\">Placement {} <code>{}</code>, key <code>{}</code>, TTL {} ({}){}.</p>",
                       esc(p.kind), esc(p.store), esc(p.key_template), esc(core::to_text(p.ttl.span)),
                       esc(core::describe(p.ttl)),
                       p.retention ? fmt::format(", retention {} ({})", esc(core::to_text(p.retention->span)),
                                                 esc(core::describe(*p.retention)))
                                   : std::string());
  }
}

void summary(std::string& out, const Report& report) {
  if (!report.summary.empty()) {
    out += "<h2>Summary</h2><div class=\"cards\">";
    for (const auto& [name, value] : report.summary) {
      out += fmt::format("<div class=\"card\" data-summary=\"{}\"><div class=\"n\">{}</div><div class=\"l\">{}</div>"
                         "</div>",
                         esc(name), value, esc(detail::counter_label(name)));
    }
    if (report.effects) {
      for (const auto& row : detail::effect_rows(*report.effects)) {
        out += fmt::format("<div class=\"card\" data-summary=\"{}\"><div class=\"n\">{}</div><div class=\"l\">{}</div>"
                           "</div>",
                           esc(row.name), row.count, esc(row.label));
      }
    }
    out += "</div>";
  }
}

// The coverage of each partition over event time (a chart each), then as a table.
void coverage(std::string& out, const Report& report) {
  if (!report.coverage.empty()) {
    out += "<h2>Coverage over event time</h2><div class=\"legend\">";
    for (std::size_t c = 0; c < std::size(detail::k_coverage_columns); ++c) {
      out +=
          fmt::format("<span style=\"--c:{}\">{}</span>", k_colors[c], core::to_string(detail::k_coverage_columns[c]));
    }
    out += "</div>";
    for (const auto& p : report.coverage) {
      chart(out, p, report);
    }
    out += "<div class=\"scroll\"><table id=\"coverage\"><tr><th>partition</th>";
    for (auto state : detail::k_coverage_columns) {
      out += fmt::format("<th>{}</th>", core::to_string(state));
    }
    out += "</tr>";
    for (const auto& p : report.coverage) {
      out += fmt::format("<tr><td>{}</td>", esc(detail::partition_name(p.topic, p.partition)));
      for (auto state : detail::k_coverage_columns) {
        out += fmt::format("<td class=\"num\" data-state=\"{}\">{}</td>", core::to_string(state),
                           p.states[static_cast<std::size_t>(state)]);
      }
      out += "</tr>";
    }
    out += "</table></div>";
  }
}

// An audit's replay window, or a replay's run or plan per partition.
void replay(std::string& out, const Report& report) {
  if (report.replay && !report.replay->run && !report.complete) {
    out += fmt::format("<h2>Replay window <code>{}</code></h2><p id=\"replay\">{} events read: {}.</p>",
                       esc(report.replay->window), report.replay->events, esc(detail::k_replay_unknown));
  } else if (report.replay && !report.replay->run) {
    const auto& r = *report.replay;
    out +=
        fmt::format("<h2>Replay window <code>{}</code></h2><p id=\"replay\">{} events: {} would be skipped, "
                    "<strong>{} re-applied</strong>, {} skipped unfinished (orphaned), {} first deliveries.</p>",
                    esc(r.window), r.events, r.would_skip, r.would_reapply, r.would_skip_unfinished, r.first_delivery);
    if (auto split = core::reapply_split(r); !split.empty()) {
      out += fmt::format("<p id=\"replay-effects\"><strong>{}</strong>.</p>", esc(split));
    }
    if (!r.safe_from.empty()) {
      out += "<ul id=\"safe-from\">";
      for (const auto& s : r.safe_from) {
        out += fmt::format("<li>safe from <code>{}@{}</code>{}</li>", esc(detail::partition_name(s.topic, s.partition)),
                           s.offset, s.timestamp_ms ? " (" + core::format_time(*s.timestamp_ms) + ")" : "");
      }
      out += "</ul>";
    }
  }
  if (report.replay && report.replay->run) {
    const auto& run = *report.replay->run;
    out += fmt::format("<h2>Replay {} <code>{}</code></h2><div class=\"scroll\"><table><tr><th>partition</th><th>from"
                       "</th><th>to</th><th>events</th><th>{}</th><th>{}</th><th>next</th></tr>",
                       run.execute ? "run" : "plan", esc(run.run_id), run.execute ? "published" : "would publish",
                       run.execute ? "skipped" : "would skip");
    auto opt = [](const std::optional<std::int64_t>& v) { return v ? std::to_string(*v) : std::string("–"); };
    for (const auto& p : run.partitions) {
      out += fmt::format("<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
                         "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
                         esc(detail::partition_name(p.topic, p.partition)), opt(p.from), opt(p.to), p.events, p.publish,
                         p.skip, opt(p.next));
    }
    out += "</table></div>";
  }
}

void traces(std::string& out, const Report& report) {
  for (const auto& trace : report.traces) {
    out += fmt::format("<h2>Trace <code>{}</code></h2><p class=\"verdict {}\" data-trace-verdict=\"{}\">{}</p><ul>",
                       esc(trace.event_id),
                       trace.verdict.id == "protected" || trace.verdict.id == "not-found" ? "clean" : "error",
                       esc(trace.verdict.id), esc(trace.verdict.text));
    for (const auto& e : trace.verdict.evidence) {
      out += fmt::format("<li>{}</li>", esc(e));
    }
    out += "</ul>";
    if (!trace.timeline.empty() && !trace.occurrences.empty()) {
      out += "<ol class=\"ex\">";
      for (const auto& entry : trace.timeline) {
        out += fmt::format("<li>{}: {}</li>", core::format_time(entry.at_ms), esc(entry.what));
      }
      out += "</ol>";
    }
  }
}

void findings(std::string& out, const Report& report) {
  out += "<h2>Findings</h2>";
  if (report.findings.empty()) {
    out += "<p>None.</p>";
  }
  for (const auto& f : report.findings) {
    out += fmt::format("<div class=\"finding\" data-finding=\"{}\" data-count=\"{}\"><span class=\"sev {}\">{}</span>"
                       "<strong>{}</strong> {}",
                       esc(f.id), f.count, core::to_string(f.severity), core::to_string(f.severity), esc(f.id),
                       esc(f.title));
    if (!f.examples.empty()) {
      out += "<ul class=\"ex\">";
      for (const auto& ex : f.examples) {
        out += fmt::format("<li>{}</li>", esc(detail::example_line(ex)));
      }
      if (f.count > static_cast<std::int64_t>(f.examples.size())) {
        out += fmt::format("<li>… and {} more</li>", f.count - static_cast<std::int64_t>(f.examples.size()));
      }
      out += "</ul>";
    }
    if (!f.advice.empty()) {
      out += fmt::format("<p>{}</p>", esc(f.advice));
    }
    out += "</div>";
  }
}

// A table with an id: the first row its headings (report-v1 names, worded as counters are).
void table(std::string& out, const char* id, const detail::Table& rows) {
  out += fmt::format("<div class=\"scroll\"><table id=\"{}\"><tr>", id);
  for (const auto& head : rows.front()) {
    out += fmt::format("<th>{}</th>", esc(detail::counter_label(head)));
  }
  out += "</tr>";
  for (std::size_t r = 1; r < rows.size(); ++r) {
    out += "<tr>";
    for (std::size_t c = 0; c < rows[r].size(); ++c) {
      const std::string& value = rows[r][c];
      bool number =
          !value.empty() && std::all_of(value.begin(), value.end(), [](char d) { return d >= '0' && d <= '9'; });
      out += fmt::format("<td{}>{}</td>", number && c > 0 ? " class=\"num\"" : "", esc(value));
    }
    out += "</tr>";
  }
  out += "</table></div>";
}

// memory:'s window as simulated, and a chain's tiers in lookup order.
void window_and_tiers(std::string& out, const Report& report) {
  if (report.window) {
    const auto& w = *report.window;
    out += fmt::format("<h2>Window</h2><p class=\"meta\">{}{}.</p>", esc(detail::window_shape(w)),
                       w.exact ? "" : " (bounds: several partitions share it)");
    detail::Table rows{{"", "events"}};
    for (auto& row : detail::window_rows(w)) {
      rows.push_back(std::move(row));
    }
    table(out, "window", rows);
  }
  if (report.tiers.size() > 1) {
    out += "<h2>Tiers</h2><p class=\"meta\">Looked up in this order; an event's state is its best tier's.</p>";
    table(out, "tiers", detail::tier_table(report.tiers));
  }
}

void settings(std::string& out, const Report& report) {
  if (!report.settings.empty()) {
    out += "<h2>Settings</h2><div class=\"scroll\"><table id=\"settings\">";
    for (const auto& [name, value] : report.settings) {
      out += fmt::format("<tr><th>{}</th><td>{}</td><td>{}</td></tr>", esc(name), esc(value),
                         esc(report.setting_origin(name)));
    }
    out += "</table></div>";
  }
}

} // namespace

void render_html(const Report& report, std::FILE* out) {
  std::string page;
  page += "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
          "content=\"width=device-width, initial-scale=1\">";
  page += fmt::format("<title>dedupctl {}</title><style>{}</style></head><body><main>", esc(report.command), k_style);
  page += fmt::format("<h1>dedupctl {}</h1>", esc(report.command));
  page += fmt::format("<p class=\"verdict {}\" id=\"verdict\">{}</p>", severity_class(report),
                      esc(detail::verdict_sentence(report)));
  meta(page, report);
  placement(page, report);
  summary(page, report);
  coverage(page, report);
  window_and_tiers(page, report);
  replay(page, report);
  traces(page, report);
  findings(page, report);
  settings(page, report);
  page += "</main></body></html>\n";
  std::fwrite(page.data(), 1, page.size(), out);
}

} // namespace dedupctl::reports
