#include "commands/pipeline/check.hpp"

#include "commands/pipeline/common.hpp"
#include "core/audit/retention.hpp"
#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::commands {

std::string key_pattern(const core::ConsumerDeclaration& consumer) {
  // A one-key layout's one key, else the template's literal start and anything after it.
  bool one_key = core::one_key(consumer.layout);
  std::string literal = one_key ? core::collection_key(consumer.layout, consumer.collection) : consumer.key_template;
  std::string pattern;
  for (char c : literal) {
    if (c == '{' && !one_key) {
      break;
    }
    if (c == '*' || c == '?' || c == '[' || c == '\\') {
      pattern += '\\';
    }
    pattern += c;
  }
  if (consumer.layout.java_key) {
    // Java's serialized String: its header (as core::append_java_string writes it), two bytes of
    // length, then the text.
    std::string header;
    core::append_java_string("", header);
    header.resize(header.size() - 2);
    pattern = header + "??" + pattern;
  }
  return one_key ? pattern : pattern + "*";
}

namespace {

// Asks the live systems for the facts the check rules need, consumer by consumer; what cannot be
// asked becomes a check-unavailable finding, and what the schema contradicts an
// inbox-schema-mismatch.
class LiveChecks {
public:
  LiveChecks(core::LiveInspector& live, const std::string& file) : m_live(live), m_file(file) {}

  void check(const core::ConsumerDeclaration& consumer, core::LiveFacts& fact) {
    bool durable = consumer.placement == core::Placement::Redis || consumer.placement == core::Placement::Postgres ||
                   consumer.placement == core::Placement::Dynamodb;
    // A Kafka Streams store's retention is checked against the topic's too (its store is its changelog).
    bool against_retention = durable || consumer.placement == core::Placement::Kstreams;
    if (against_retention && !consumer.retention && !consumer.topic.empty()) {
      retention(consumer, fact);
    }
    if (!durable) {
      return;
    }
    if (consumer.store.empty()) {
      unavailable(consumer, "placement", fmt::format("the {} placement", core::to_string(consumer.placement)),
                  "no store is declared");
      return;
    }
    ++attempted;
    try {
      if (consumer.placement == core::Placement::Redis) {
        redis(consumer, fact);
      } else if (consumer.placement == core::Placement::Dynamodb) {
        auto table = m_live.dynamodb(consumer);
        fact.dynamodb_ttl_status = table.ttl_status;
        fact.dynamodb_ttl_attribute = table.ttl_attribute;
        fact.dynamodb_size_bytes = table.size_bytes;
        fact.dynamodb_items = table.items;
      } else {
        inbox(consumer, fact);
      }
    } catch (const UnreachableError& e) {
      ++failed;
      unavailable(consumer, "store", fmt::format("the {} store", core::to_string(consumer.placement)), e.what());
    }
  }

  int attempted = 0;
  int failed = 0;
  std::vector<core::Finding> findings;

private:
  void retention(const core::ConsumerDeclaration& consumer, core::LiveFacts& fact) {
    ++attempted;
    std::string what = fmt::format("the retention of topic '{}'", consumer.topic);
    try {
      auto configs = m_live.topic_retention(consumer.topic);
      auto span = configs ? core::retention_from_configs(*configs) : core::Span::unknown();
      if (span.known()) {
        fact.retention = span;
        fact.compacted = core::is_compacted(*configs);
        return;
      }
      ++failed;
      unavailable(consumer, "topic", what,
                  configs ? core::no_retention_in_configs(consumer.topic)
                          : std::string("the broker did not answer DescribeConfigs"));
    } catch (const UnreachableError& e) {
      ++failed;
      unavailable(consumer, "topic", what, e.what());
    }
  }

  void redis(const core::ConsumerDeclaration& consumer, core::LiveFacts& fact) {
    auto redis = m_live.redis(consumer);
    fact.maxmemory_policy = redis.maxmemory_policy;
    fact.persistence = redis.persistence;
    fact.policy_node = redis.policy_node;
    fact.persistence_node = redis.persistence_node;
    if (core::one_key(consumer.layout)) {
      return; // its one key's TTL says nothing of a record's (the declaration's no-expiry does)
    }
    fact.sampled_keys = redis.sampled_keys;
    fact.sampled_without_expiry = redis.sampled_without_expiry;
    fact.sampled_max_pttl_ms = redis.max_pttl_ms;
  }

  // The table and the declared columns must exist before its constraint means anything.
  void inbox(const core::ConsumerDeclaration& consumer, core::LiveFacts& fact) {
    auto inbox = m_live.inbox(consumer);
    if (!inbox.table_exists) {
      mismatch(consumer, "inbox_table", fmt::format("the inbox table {} does not exist", consumer.inbox_table),
               "Check inbox_table (schema-qualified if needed) against the consumer's database.");
      return;
    }
    std::vector<std::pair<std::string, std::string>> named{{"inbox_id_column", consumer.inbox_id_column},
                                                           {"inbox_consumer_column", consumer.inbox_consumer_column},
                                                           {"inbox_time_column", consumer.inbox_time_column},
                                                           {"inbox_status_column", consumer.inbox_status_column}};
    std::string existing;
    for (const auto& c : inbox.columns) {
      existing += (existing.empty() ? "" : ", ") + c;
    }
    bool columns_ok = true;
    for (const auto& [field, column] : named) {
      if (column.empty() || std::find(inbox.columns.begin(), inbox.columns.end(), column) != inbox.columns.end()) {
        continue;
      }
      columns_ok = false;
      mismatch(consumer, field,
               fmt::format("the inbox {} has no column {} (it has {})", consumer.inbox_table, column, existing),
               fmt::format("Set {} to the column the consumer writes.", field));
    }
    if (columns_ok) {
      fact.inbox_unique = inbox.unique_over_id;
    }
  }

  void mismatch(const core::ConsumerDeclaration& consumer, const std::string& field, std::string title,
                std::string advice) {
    findings.push_back(core::consumer_finding(consumer, m_file, field, "inbox-schema-mismatch", core::Severity::Error,
                                              std::move(title), std::move(advice)));
  }

  void unavailable(const core::ConsumerDeclaration& consumer, const std::string& field, const std::string& what,
                   const std::string& why) {
    findings.push_back(core::consumer_finding(
        consumer, m_file, field, "check-unavailable", core::Severity::Warning,
        fmt::format("{} could not be checked: {}", what, why),
        "Run again where the system can be reached, or declare the value to check it statically."));
  }

  core::LiveInspector& m_live;
  const std::string& m_file;
};

} // namespace

reports::Report run_check(const core::Declarations& declarations, const std::string& file, core::LiveInspector* live,
                          const core::FailOn& fail_on, const std::string& fail_on_text, std::int64_t now_ms) {
  reports::Report report = start_report("check", now_ms, fail_on_text);
  std::map<std::string, core::LiveFacts> facts;
  std::optional<LiveChecks> checks;
  if (live) {
    checks.emplace(*live, file);
    for (const auto& consumer : declarations.consumers) {
      checks->check(consumer, facts[consumer.name]);
    }
  }
  report.findings = core::check_consumers(declarations.consumers, file, facts);
  if (checks) {
    for (auto& finding : checks->findings) {
      report.findings.push_back(std::move(finding));
    }
  }
  core::sort_findings(report.findings);
  for (const auto& consumer : declarations.consumers) {
    report.subjects.push_back(consumer.name);
  }
  int attempted = checks ? checks->attempted : 0;
  int failed = checks ? checks->failed : 0;
  report.summary = {{"consumers", static_cast<std::int64_t>(declarations.consumers.size())},
                    {"live_checks", attempted},
                    {"live_checks_failed", failed}};
  report.settings = {{"file", file}, {"live", live ? "yes" : "no"}, {"fail on", fail_on_text}};
  if (live && attempted > 0 && failed == attempted) {
    report.complete = false;
    report.error = "no live check could run (see the check-unavailable findings)";
    report.exit_code = k_exit_unreachable;
  } else {
    report.exit_code = core::exit_code_for(report.findings, fail_on);
  }
  return report;
}

} // namespace dedupctl::commands
