#pragma once

// What the report tests share: a report rendered to a string, a golden file's text, a summary count.

#include "core/util/time.hpp"
#include "reports/report.hpp"
#include "tests/unit/test_data.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace dedupctl::testing {

inline std::string rendered(const reports::Report& report, reports::Format format) {
  return reports::render_to_string(report, format);
}

inline std::string golden(const std::string& name) {
  std::ifstream in(std::string(DEDUPCTL_TEST_DATA) + "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A summary counter of the report; a test failure (and -1) when it has none of that name.
inline std::int64_t summary(const reports::Report& report, const std::string& name) {
  for (const auto& [key, value] : report.summary) {
    if (key == name) {
      return value;
    }
  }
  ADD_FAILURE() << "no summary field " << name;
  return -1;
}

// A scan that could not finish (exit 3), for what every renderer must say of it.
inline reports::Report incomplete_report(std::string error) {
  reports::Report report;
  report.command = "scan";
  report.complete = false;
  report.exit_code = 3;
  report.error = std::move(error);
  return report;
}

// A scan report with a finding of each severity that has examples: what the renderers are tested on.
inline reports::Report sample() {
  using namespace core;
  using namespace reports;
  Report report;
  report.command = "scan";
  report.generated_at_ms = parse_time("2026-11-20T08:00:00Z");
  report.exit_code = 1;
  SourceInfo source;
  source.kind = core::SourceKind::Kafka;
  source.topics = {"orders"};
  source.bootstrap = "broker:9092";
  source.isolation = "read_committed";
  source.group = "billing";
  PartitionRange range;
  range.topic = "orders";
  range.from = 100;
  range.to = 1000;
  range.log_start = 100;
  range.log_end = 1000;
  range.committed = 900;
  range.events = 900;
  range.first_timestamp = parse_time("2026-11-20T07:00:00Z");
  range.last_timestamp = parse_time("2026-11-20T08:00:00Z");
  source.partitions.push_back(range);
  report.source = source;
  report.summary = {{"events", 900}, {"no_id", 3}, {"log_duplicates", 2}, {"id_reuse", 1}, {"semantic_duplicates", 0}};
  Finding reuse;
  reuse.id = "id-reuse";
  reuse.severity = Severity::Error;
  reuse.title = "1 events reuse an event id with a different payload";
  reuse.count = 1;
  reuse.partitions = {0};
  reuse.examples.push_back(
      Example{"e-17", "orders", 0, 117, parse_time("2026-11-20T07:30:00Z"), "", "payload differs"});
  reuse.advice = "Give every event a fresh id.";
  Finding missing;
  missing.id = "missing-event-id";
  missing.severity = Severity::Warning;
  missing.title = "3 events carry no event id";
  missing.count = 3;
  missing.partitions = {0};
  missing.examples.push_back(Example{"", "orders", 0, 5, -1, "", ""});
  missing.advice = "Check --id.";
  report.findings = {reuse, missing};
  return report;
}

} // namespace dedupctl::testing
