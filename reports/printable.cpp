#include "reports/printable.hpp"

#include <fmt/format.h>

namespace dedupctl::reports {

std::string printable(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (keep_newlines && c == '\n') {
      out += '\n';
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      // A C1 control in UTF-8 (CSI, OSC …): terminals obey these as they do ESC sequences.
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(text[++i]));
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

void clean(std::string& s) { s = printable(s, false); }
void clean(std::optional<std::string>& s) {
  if (s) {
    clean(*s);
  }
}
void clean(std::vector<std::string>& v) {
  for (auto& s : v) {
    clean(s);
  }
}
void clean(core::Example& e) {
  clean(e.event_id);
  clean(e.topic);
  clean(e.dedup_key);
  clean(e.note);
}

void clean(core::SourceInfo& source) {
  clean(source.topics);
  clean(source.path);
  clean(source.bootstrap);
  clean(source.group);
  for (auto& range : source.partitions) {
    clean(range.topic);
  }
}

void clean(core::ReplaySummary& replay) {
  std::map<std::string, core::TypeRisk> by_type;
  for (auto& [type, risk] : replay.by_type) {
    by_type[printable(type, false)] = risk;
  }
  replay.by_type = std::move(by_type);
  for (auto& safe : replay.safe_from) {
    clean(safe.topic);
  }
  if (replay.run) {
    clean(replay.run->sink);
    clean(replay.run->run_id);
    for (auto& p : replay.run->partitions) {
      clean(p.topic);
    }
  }
}

void clean(core::Trace& trace) {
  clean(trace.event_id);
  for (auto& o : trace.occurrences) {
    clean(o.topic);
    clean(o.type);
  }
  clean(trace.dedup_keys);
  clean(trace.record.value);
  clean(trace.record.status);
  clean(trace.notes);
  clean(trace.verdict.text);
  clean(trace.verdict.evidence);
  for (auto& entry : trace.timeline) {
    clean(entry.what);
  }
}

} // namespace

Report printable(Report report) {
  clean(report.error);
  if (report.source) {
    clean(*report.source);
  }
  for (auto& f : report.findings) {
    // A finding's own words may run over lines; what the log put in them may not.
    f.title = printable(f.title, true);
    f.advice = printable(f.advice, true);
    clean(f.file);
    clean(f.subject);
    for (auto& e : f.examples) {
      clean(e);
    }
  }
  if (report.placement) {
    clean(report.placement->store);
    clean(report.placement->key_template);
    clean(report.placement->consumer);
  }
  if (report.replay) {
    clean(*report.replay);
  }
  for (auto& c : report.coverage) {
    clean(c.topic);
  }
  clean(report.subjects);
  for (auto& t : report.traces) {
    clean(t);
  }
  for (auto& [name, value] : report.settings) {
    clean(name);
    clean(value);
  }
  return report;
}

} // namespace dedupctl::reports
