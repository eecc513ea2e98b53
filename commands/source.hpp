#pragma once

// Opening the events a command reads: a Kafka range (resumed at a replay's checkpoint) or a kcat dump.
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "connectors/file/kcat_file.hpp"
#include "connectors/kafka/kafka.hpp"
#include "core/audit/retention.hpp"
#include "core/replay/replay.hpp"
#include "core/source/source_info.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::commands {

// An opened source with the ranges it will read.
struct OpenedSource {
  std::unique_ptr<core::EventSource> source;
  connectors::file::KcatFileSource* file = nullptr; // set for --input sources
  core::SourceInfo info;
  // Set (and `source` null) when the brokers could not be reached while resolving the range.
  std::optional<std::string> failure;
  // With --shard: the whole range, which every shard of one run resolves alike (a merge compares
  // it), and its partitions as "topic[partition]" in the canonical order's ranks.
  std::string range_key;
  std::vector<std::string> range_order;
  // A Kafka source: what the reader reads (--effects kafka: reads the output topic from their time).
  std::vector<core::PartitionPlan> plans;
};

// Validates the source flags (UsageError) and opens the source: resolves the Kafka range or opens
// the kcat dump. Brokers that cannot be reached are reported in `failure`, not thrown, so that the
// command can still write its incomplete report.
// With `resume` (a replay's checkpoint), each Kafka partition is read from its checkpointed offset
// instead of the range's start.
// A --seek on a kcat dump needs the group's committed offsets from `committed` (--committed FILE).
OpenedSource open_source(const SourceFlags& options, const Context& context,
                         const std::optional<std::string>& seek = std::nullopt,
                         const core::Checkpoint* resume = nullptr, const std::string& committed = {});

// --topic T or T:0,1,5 as a range request's topic; throws UsageError.
connectors::kafka::TopicRequest parse_topic(const std::string& text);

// The settings a reader of the log uses: the context's, with read_committed unless
// --read-uncommitted (a -X isolation.level wins).
connectors::kafka::KafkaSettings reader_settings(bool read_uncommitted, const Context& context);

// The topics' retention through DescribeConfigs, with a short leash (3 s): audit and watch go on
// without it (retention unknown), and say why(topic). Every topic given is asked in one request,
// the first time one of them is wanted; each is asked once.
class BrokerTopicConfigs final : public core::TopicConfigs {
public:
  explicit BrokerTopicConfigs(connectors::kafka::KafkaSettings settings, std::vector<std::string> topics = {})
      : m_settings(std::move(settings)), m_topics(std::move(topics)) {}
  std::optional<core::TopicRetention> retention(const std::string& topic) override;
  // Why retention(topic) had no retention to give ("the broker refused DescribeConfigs for T (…):
  // …", "the broker's configs for T have no retention.ms").
  std::string why(const std::string& topic) const;

private:
  connectors::kafka::KafkaSettings m_settings;
  std::vector<std::string> m_topics;
  std::map<std::string, connectors::kafka::DescribedRetention> m_answers;
};

// Prints the resolved ranges on stderr, as `topic[partition] from..to (log start..end)`.
void note_ranges(const core::SourceInfo& info, const Context& context);

} // namespace dedupctl::commands
