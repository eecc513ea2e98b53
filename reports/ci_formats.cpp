// Formats for CI: SARIF 2.1.0 (code scanning), JUnit XML (test reports), GitHub workflow commands,
// GitLab Code Quality.
#include "core/util/build_info.hpp"
#include "core/util/fingerprint.hpp"
#include "reports/common.hpp"
#include "reports/report.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>

namespace dedupctl::reports {

namespace {

using Json = nlohmann::ordered_json;

std::string_view sarif_level(core::Severity severity) {
  switch (severity) {
  case core::Severity::Error:
    return "error";
  case core::Severity::Warning:
    return "warning";
  case core::Severity::Info:
    return "note";
  }
  return "note";
}

// "ttl-shorter-than-retention" -> "TtlShorterThanRetention" (a rule's name) and "ttl shorter than
// retention" (its short description).
std::string rule_name(std::string_view id) {
  std::string name;
  bool upper = true;
  for (char c : id) {
    if (c == '-' || c == '_') {
      upper = true;
    } else {
      name += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    }
  }
  return name;
}

std::string rule_words(std::string_view id) {
  std::string words(id);
  std::replace(words.begin(), words.end(), '-', ' ');
  return words;
}

std::string message_of(const core::Finding& finding) { return fmt::format("{}. {}", finding.title, finding.advice); }

bool fails(const Report& report, const core::Finding& finding) {
  auto threshold = core::parse_fail_on(report.fail_on).level;
  return threshold && finding.severity >= *threshold;
}

// GitHub workflow command escaping: data escapes %, CR, LF; properties also ':' and ','.
std::string gh_escape(std::string_view text, bool property) {
  std::string out;
  for (char c : text) {
    if (c == '%') {
      out += "%25";
    } else if (c == '\r') {
      out += "%0D";
    } else if (c == '\n') {
      out += "%0A";
    } else if (property && c == ':') {
      out += "%3A";
    } else if (property && c == ',') {
      out += "%2C";
    } else {
      out += c;
    }
  }
  return out;
}

// A path as a SARIF artifact URI (RFC 3986): a relative path stays a relative reference (GitHub
// resolves it against the checkout), an absolute one becomes file:///…; bytes outside the
// unreserved set and '/' are percent-encoded.
std::string artifact_uri(std::string_view path) {
  std::string uri = path.starts_with('/') ? "file://" : "";
  for (char c : path) {
    auto byte = static_cast<unsigned char>(c);
    if (std::isalnum(byte) || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
      uri += c;
    } else {
      uri += fmt::format("%{:02X}", byte);
    }
  }
  return uri;
}

// What a finding is about, where no declarations file names it: the kcat dump read, or kafka:TOPIC.
std::string source_name(const Report& report) {
  if (report.source && report.source->kind == core::SourceKind::File && !report.source->path.empty()) {
    return report.source->path;
  }
  if (report.source && !report.source->topics.empty()) {
    return "kafka:" + report.source->topics.front();
  }
  return "dedupctl";
}

// Every result has a location (GitHub's upload-sarif refuses one without): the declaration a
// check finding points at; else what was read, the kcat dump or kafka:TOPIC, with the first
// example's partition and offset as a logical location.
Json sarif_location(const Report& report, const core::Finding& finding) {
  Json region{{"startLine", std::max(1, finding.line)}};
  if (!finding.file.empty()) {
    if (finding.column > 0) {
      region["startColumn"] = finding.column;
    }
    return Json{{"physicalLocation",
                 Json{{"artifactLocation", Json{{"uri", artifact_uri(finding.file)}}}, {"region", region}}}};
  }
  std::string name = source_name(report);
  std::string uri = report.source && report.source->kind == core::SourceKind::File ? artifact_uri(name) : name;
  Json location{{"physicalLocation", Json{{"artifactLocation", Json{{"uri", uri}}}, {"region", region}}}};
  if (!finding.examples.empty() && !finding.examples.front().topic.empty()) {
    const auto& ex = finding.examples.front();
    location["logicalLocations"] = Json::array({Json{
        {"fullyQualifiedName", fmt::format("{}[{}]@{}", ex.topic, ex.partition, ex.offset)}, {"kind", "offset"}}});
  }
  return location;
}

} // namespace

void render_sarif(const Report& report, std::FILE* out) {
  Json rules = Json::array();
  std::map<std::string, std::size_t> rule_index;
  for (const auto& finding : report.findings) {
    if (rule_index.count(finding.id)) {
      continue;
    }
    rule_index[finding.id] = rules.size();
    // SARIF wants a name other than the id, for people; GitHub wants a fullDescription.
    rules.push_back(Json{{"id", finding.id},
                         {"name", rule_name(finding.id)},
                         {"shortDescription", Json{{"text", rule_words(finding.id)}}},
                         {"fullDescription", Json{{"text", finding.advice}}},
                         {"help", Json{{"text", finding.advice}}},
                         {"defaultConfiguration", Json{{"level", sarif_level(finding.severity)}}}});
  }
  Json results = Json::array();
  for (const auto& finding : report.findings) {
    Json result{{"ruleId", finding.id},
                {"ruleIndex", rule_index[finding.id]},
                {"level", sarif_level(finding.severity)},
                {"message", Json{{"text", message_of(finding)}}}};
    result["locations"] = Json::array({sarif_location(report, finding)});
    if (finding.count > 1) {
      result["properties"] = Json{{"count", finding.count}};
    }
    results.push_back(std::move(result));
  }
  Json invocation{{"executionSuccessful", report.complete}, {"exitCode", report.exit_code}};
  if (report.error) {
    invocation["toolExecutionNotifications"] =
        Json::array({Json{{"level", "error"}, {"message", Json{{"text", *report.error}}}}});
  }
  Json driver{{"name", "dedupctl"}, {"version", std::string(core::build::version())}, {"rules", rules}};
  Json doc{{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
           {"version", "2.1.0"},
           {"runs", Json::array({Json{{"tool", Json{{"driver", driver}}},
                                      {"invocations", Json::array({invocation})},
                                      {"results", results}}})}};
  std::string text = doc.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), out);
}

void render_junit(const Report& report, std::FILE* out) {
  // One test case per subject (check: per consumer), else per finding id; a failure per finding at
  // or above --fail-on. An incomplete run is an <error>.
  std::vector<std::string> cases = report.subjects;
  bool by_subject = !cases.empty();
  if (!by_subject) {
    for (const auto& finding : report.findings) {
      if (std::find(cases.begin(), cases.end(), finding.id) == cases.end()) {
        cases.push_back(finding.id);
      }
    }
    if (cases.empty()) {
      cases.push_back(report.command);
    }
  }
  std::size_t failures = 0;
  std::string body;
  for (const auto& name : cases) {
    std::string failed;
    for (const auto& finding : report.findings) {
      bool mine = by_subject ? finding.subject == name : finding.id == name;
      if (!mine || !fails(report, finding)) {
        continue;
      }
      ++failures;
      std::string where =
          finding.file.empty() ? "" : fmt::format("{}:{}:{}: ", finding.file, finding.line, finding.column);
      failed +=
          fmt::format("      <failure type=\"{}\" message=\"{}\">{}{}</failure>\n", detail::xml_escape(finding.id),
                      detail::xml_escape(finding.title), detail::xml_escape(where), detail::xml_escape(finding.advice));
    }
    body += fmt::format("    <testcase classname=\"dedupctl.{}\" name=\"{}\">\n{}    </testcase>\n",
                        detail::xml_escape(report.command), detail::xml_escape(name), failed);
  }
  std::size_t errors = 0;
  if (!report.complete) {
    ++errors;
    body += fmt::format("    <testcase classname=\"dedupctl.{}\" name=\"complete\">\n      <error message=\"{}\"/>\n"
                        "    </testcase>\n",
                        detail::xml_escape(report.command), detail::xml_escape(report.error.value_or("incomplete")));
  }
  std::size_t tests = cases.size() + errors;
  fmt::print(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fmt::print(out,
             "<testsuites name=\"dedupctl {0}\" tests=\"{1}\" failures=\"{2}\" errors=\"{3}\">\n"
             "  <testsuite name=\"dedupctl {0}\" tests=\"{1}\" failures=\"{2}\" errors=\"{3}\">\n{4}"
             "  </testsuite>\n</testsuites>\n",
             detail::xml_escape(report.command), tests, failures, errors, body);
}

void render_github(const Report& report, std::FILE* out) {
  for (const auto& finding : report.findings) {
    std::string_view level = finding.severity == core::Severity::Error     ? "error"
                             : finding.severity == core::Severity::Warning ? "warning"
                                                                           : "notice";
    std::string properties;
    if (!finding.file.empty()) {
      properties = fmt::format("file={},line={},col={},", gh_escape(finding.file, true), finding.line, finding.column);
    }
    properties += fmt::format("title={}", gh_escape("dedupctl " + finding.id, true));
    fmt::print(out, "::{} {}::{}\n", level, properties, gh_escape(message_of(finding), false));
  }
  if (!report.complete) {
    fmt::print(out, "::error title=dedupctl {}::{}\n", gh_escape(report.command, true),
               gh_escape("incomplete: " + report.error.value_or("the run did not finish"), false));
  }
}

void render_gitlab(const Report& report, std::FILE* out) {
  // GitLab's Code Quality report: the CodeClimate issue's required fields (type, check_name,
  // description, categories, location) and GitLab's (fingerprint, severity, location.path,
  // location.lines.begin). A fingerprint stands for what the finding is about, never its wording or
  // counts, so a finding keeps it from run to run and GitLab tells new ones from fixed ones; two
  // findings alike in all of that are told apart by their order.
  auto severity_of = [](core::Severity severity) {
    switch (severity) {
    case core::Severity::Error:
      return "critical";
    case core::Severity::Warning:
      return "major";
    case core::Severity::Info:
      return "info";
    }
    return "info";
  };
  std::map<std::string, int> seen;
  auto issue = [&](const std::string& check, std::string_view severity, const std::string& description,
                   const std::string& path, int line, const std::string& about) {
    std::string identity = fmt::format("{}\x1f{}\x1f{}\x1f{}\x1f{}", report.command, check, path, line, about);
    int ordinal = seen[identity]++;
    std::string fingerprint = core::fingerprint_hex(core::hash64(identity, static_cast<std::uint64_t>(ordinal))) +
                              core::fingerprint_hex(core::hash64(identity, 0x9e3779b97f4a7c15ULL + ordinal));
    return Json{{"type", "issue"},
                {"check_name", check},
                {"description", description},
                {"categories", Json::array({"Bug Risk"})},
                {"severity", severity},
                {"fingerprint", fingerprint},
                {"location", Json{{"path", path}, {"lines", Json{{"begin", std::max(1, line)}}}}}};
  };
  Json issues = Json::array();
  for (const auto& finding : report.findings) {
    std::string path = finding.file.empty() ? source_name(report) : finding.file;
    std::string about = finding.subject;
    if (finding.file.empty() && !finding.examples.empty() && !finding.examples.front().topic.empty()) {
      about += fmt::format("\x1f{}[{}]", finding.examples.front().topic, finding.examples.front().partition);
    }
    issues.push_back(issue("dedupctl/" + finding.id, severity_of(finding.severity), message_of(finding), path,
                           finding.file.empty() ? 1 : finding.line, about));
  }
  if (!report.complete) {
    issues.push_back(issue("dedupctl/incomplete", "blocker",
                           "incomplete: " + report.error.value_or("the run did not finish") +
                               ". dedupctl could not see everything, so no verdict stands for what it did not see.",
                           source_name(report), 1, ""));
  }
  std::string text = issues.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  std::fwrite(text.data(), 1, text.size(), out);
}

} // namespace dedupctl::reports
