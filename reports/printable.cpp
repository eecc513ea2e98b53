#include "reports/printable.hpp"

#include "core/util/encoding.hpp"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <vector>

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
    } else if (c >= 0x80) {
      std::size_t next = i;
      if (core::next_code_point(text, next) == 0xfffd && next - i == 1) {
        out += fmt::format("\\x{:02x}", c); // not part of whole UTF-8: an id read as bytes, shown escaped
      } else {
        out.append(text.substr(i, next - i)); // a whole sequence at once
        i = next - 1;
      }
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {

// Calls `fix` on every string of the report that came from outside or may echo it; `multiline`
// marks a finding's own words (title, advice), which may run over lines.
class StringVisitor {
public:
  explicit StringVisitor(const StringFix& fix) : m_fix(fix) {}

  void report(Report& report) {
    one(report.error);
    if (report.source) {
      source(*report.source);
    }
    for (auto& f : report.findings) {
      m_fix(f.title, true);
      m_fix(f.advice, true);
      one(f.file);
      one(f.subject);
      for (auto& e : f.examples) {
        example(e);
      }
    }
    if (report.placement) {
      one(report.placement->store);
      one(report.placement->key_template);
      one(report.placement->consumer);
    }
    if (report.replay) {
      replay(*report.replay);
    }
    for (auto& c : report.coverage) {
      one(c.topic);
    }
    all(report.subjects);
    for (auto& t : report.traces) {
      trace(t);
    }
    for (auto& [name, value] : report.settings) {
      one(name);
      one(value);
    }
  }

private:
  void one(std::string& s) { m_fix(s, false); }
  void one(std::optional<std::string>& s) {
    if (s) {
      one(*s);
    }
  }
  void all(std::vector<std::string>& v) {
    for (auto& s : v) {
      one(s);
    }
  }
  void example(core::Example& e) {
    one(e.event_id);
    one(e.topic);
    one(e.dedup_key);
    one(e.note);
  }
  void source(core::SourceInfo& source) {
    all(source.topics);
    one(source.path);
    one(source.bootstrap);
    one(source.group);
    for (auto& range : source.partitions) {
      one(range.topic);
    }
  }
  void replay(core::ReplaySummary& replay) {
    std::map<std::string, core::TypeRisk> by_type;
    for (auto [type, risk] : replay.by_type) {
      std::string key = type;
      one(key);
      by_type[key] = risk;
    }
    replay.by_type = std::move(by_type);
    for (auto& safe : replay.safe_from) {
      one(safe.topic);
    }
    if (replay.run) {
      one(replay.run->sink);
      one(replay.run->run_id);
      for (auto& p : replay.run->partitions) {
        one(p.topic);
      }
    }
  }
  void trace(core::Trace& trace) {
    one(trace.event_id);
    for (auto& o : trace.occurrences) {
      one(o.topic);
      one(o.type);
    }
    all(trace.dedup_keys);
    one(trace.record.value);
    one(trace.record.status);
    all(trace.notes);
    one(trace.verdict.text);
    all(trace.verdict.evidence);
    for (auto& entry : trace.timeline) {
      one(entry.what);
    }
  }

  const StringFix& m_fix;
};

} // namespace

Report with_strings_fixed(Report report, const StringFix& fix) {
  StringVisitor(fix).report(report);
  return report;
}

Report printable(Report report) {
  return with_strings_fixed(std::move(report), [](std::string& s, bool multiline) { s = printable(s, multiline); });
}

} // namespace dedupctl::reports
