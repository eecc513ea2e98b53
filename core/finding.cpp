#include "core/finding.hpp"

#include "core/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

std::string_view to_string(Severity severity) {
  switch (severity) {
  case Severity::Info:
    return "info";
  case Severity::Warning:
    return "warning";
  case Severity::Error:
    return "error";
  }
  return "error";
}

FailOn parse_fail_on(std::string_view text) {
  if (text == "error") {
    return FailOn{Severity::Error};
  }
  if (text == "warning") {
    return FailOn{Severity::Warning};
  }
  if (text == "info") {
    return FailOn{Severity::Info};
  }
  if (text == "none") {
    return FailOn{std::nullopt};
  }
  throw UsageError(fmt::format("invalid --fail-on '{}': expected error, warning, info or none", text));
}

std::optional<Finding> FindingBuilder::build(std::string id, Severity severity, std::string title,
                                             std::string advice) const {
  if (m_count == 0) {
    return std::nullopt;
  }
  Finding finding;
  finding.id = std::move(id);
  finding.severity = severity;
  finding.title = std::move(title);
  finding.count = m_count;
  finding.partitions.assign(m_partitions.begin(), m_partitions.end());
  finding.examples = m_examples;
  finding.advice = std::move(advice);
  return finding;
}

void sort_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) {
      return a.severity > b.severity;
    }
    return a.id < b.id;
  });
}

int exit_code_for(const std::vector<Finding>& findings, const FailOn& fail_on) {
  if (!fail_on.level) {
    return k_exit_ok;
  }
  for (const auto& finding : findings) {
    if (finding.severity >= *fail_on.level) {
      return k_exit_findings;
    }
  }
  return k_exit_ok;
}

} // namespace dedupctl::core
