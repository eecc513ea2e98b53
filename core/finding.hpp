#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace dedupctl::core {

enum class Severity { Info = 0, Warning = 1, Error = 2 };

std::string_view to_string(Severity severity);

// The --fail-on threshold: a severity, or none (never fail on findings).
struct FailOn {
  std::optional<Severity> level = Severity::Error;
};
// Throws UsageError for anything but error, warning, info, none.
FailOn parse_fail_on(std::string_view text);

// One event that shows a finding.
struct Example {
  std::string event_id; // empty when the event has none
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = -1;
  std::string dedup_key;                              // audit only
  std::string note;                                   // e.g. why no id could be taken, or what the first occurrence was
  std::optional<bool> cross_partition = std::nullopt; // version-regression: the newer version was in another partition
  std::uint64_t seq = 0;                              // the event's place in the canonical order (not rendered)
};

struct Finding {
  std::string id; // stable, see docs/report-v1.md
  Severity severity = Severity::Info;
  std::string title;
  std::int64_t count = 0;
  std::vector<std::int32_t> partitions;
  std::vector<Example> examples;
  std::string advice;
  // Where in a declarations file the finding points (check), and what it is about.
  std::string file;
  int line = 0;
  int column = 0;
  std::string subject; // e.g. the consumer's name
};

// Accumulates one finding's count, partitions and first examples as events stream by.
class FindingBuilder {
public:
  explicit FindingBuilder(std::size_t max_examples = 5) : m_max_examples(max_examples) {}

  // Counts one event; `make_example` is only called while examples are still wanted.
  template <typename MakeExample> void add(std::int32_t partition, MakeExample&& make_example) {
    ++m_count;
    if (partition != m_last_partition) { // events come partition by partition
      m_partitions.insert(partition);
      m_last_partition = partition;
    }
    if (m_examples.size() < m_max_examples) {
      m_examples.push_back(make_example());
    }
  }

  // The same, for events that do not come in the canonical order (a merge of shards): keeps the
  // examples with the lowest `seq`.
  template <typename MakeExample> void add_at(std::int32_t partition, std::uint64_t seq, MakeExample&& make_example) {
    ++m_count;
    m_partitions.insert(partition);
    if (m_examples.size() < m_max_examples || (!m_examples.empty() && seq < m_examples.back().seq)) {
      insert_example(make_example());
    }
  }

  // Folds in another builder's events (a shard's): counts add up, partitions join, and the examples
  // are the lowest `seq` of both.
  void merge(const FindingBuilder& other);
  // A builder as a shard wrote it down.
  static FindingBuilder restore(std::size_t max_examples, std::int64_t count,
                                const std::vector<std::int32_t>& partitions, std::vector<Example> examples);

  std::int64_t count() const { return m_count; }
  std::vector<std::int32_t> partitions() const { return {m_partitions.begin(), m_partitions.end()}; }
  const std::vector<Example>& examples() const { return m_examples; }

  // Nullopt when nothing was counted.
  std::optional<Finding> build(std::string id, Severity severity, std::string title, std::string advice) const;

private:
  void insert_example(Example example);

  std::size_t m_max_examples;
  std::int64_t m_count = 0;
  std::set<std::int32_t> m_partitions;
  std::int32_t m_last_partition = -1;
  std::vector<Example> m_examples;
};

// Orders findings by severity (errors first), then by id, for every renderer.
void sort_findings(std::vector<Finding>& findings);

// 0 when no finding is at or above the threshold, 1 otherwise.
int exit_code_for(const std::vector<Finding>& findings, const FailOn& fail_on);

} // namespace dedupctl::core
