#include "core/finding.hpp"

#include "core/util/errors.hpp"

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

void FindingBuilder::insert_example(Example example) {
  auto at = std::upper_bound(m_examples.begin(), m_examples.end(), example.seq,
                             [](std::uint64_t seq, const Example& ex) { return seq < ex.seq; });
  m_examples.insert(at, std::move(example));
  if (m_examples.size() > m_max_examples) {
    m_examples.pop_back();
  }
}

void FindingBuilder::merge(const FindingBuilder& other) {
  m_count += other.m_count;
  m_partitions.insert(other.m_partitions.begin(), other.m_partitions.end());
  for (const auto& example : other.m_examples) {
    if (m_examples.size() < m_max_examples || example.seq < m_examples.back().seq) {
      insert_example(example);
    }
  }
}

FindingBuilder FindingBuilder::restore(std::size_t max_examples, std::int64_t count,
                                       const std::vector<std::int32_t>& partitions, std::vector<Example> examples) {
  FindingBuilder out(max_examples);
  out.m_count = count;
  out.m_partitions.insert(partitions.begin(), partitions.end());
  out.m_examples = std::move(examples);
  return out;
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
