#pragma once

#include "core/audit/retention.hpp"
#include "core/event.hpp"
#include "core/identity/field_spec.hpp"
#include "core/replay/replay.hpp"
#include "core/source/offset_spec.hpp"
#include "core/source/range.hpp"
#include "core/source/source_info.hpp"
#include "core/store/effect_store.hpp"
#include "core/store/kstreams_window.hpp"
#include "core/util/time.hpp"

#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// Kafka through librdkafka, split by job: client (handles, shared requests; client.hpp is the only
// header that includes librdkafka, and only this folder includes it), range (resolution), reader,
// sink (the replay's producer) and admin (DescribeConfigs).
namespace dedupctl::connectors::kafka {

// How a reader held partitions back to deliver the canonical order.
struct ReaderCounters {
  std::int64_t pauses = 0;
  std::int64_t resumes = 0;
  // Turns that found their partition paused with nothing to deliver: the order waited for a fetch
  // that the pause had put off.
  std::int64_t waits_on_paused = 0;
};

struct KafkaSettings {
  std::string bootstrap;
  std::vector<std::pair<std::string, std::string>> properties; // -F's, then -X's, applied last
  std::vector<std::string> property_sources; // where each came from, for errors ("-X"; "-X" when missing)
  // SASL OAUTHBEARER with a token a command prints (core::parse_bearer_token), run when a handle
  // needs one and again before it expires; empty: none. It makes OAUTHBEARER over SASL_SSL the
  // defaults, which properties override.
  std::string token_command;
  std::int64_t timeout_ms = core::k_default_timeout_ms; // each broker request, and a read that stalls
  int verbosity = 0;                                    // librdkafka's own log lines show from -vv
  const std::atomic<bool>* stop = nullptr;              // raised by SIGINT/SIGTERM
  // A reader holds at most about this much of the partitions that are ahead of the canonical order
  // before it pauses those that hold their next round already (see KafkaReader); 0: twice what one
  // fetch brings of every partition, at least 64 MiB.
  std::size_t reorder_bytes = 0;
  // When set, a reader counts here how it held the partitions that were ahead (tests).
  ReaderCounters* reader_counters = nullptr;
};

struct TopicRequest {
  std::string topic;
  std::vector<std::int32_t> partitions; // empty: all of the topic's partitions
};

struct RangeRequest {
  std::vector<TopicRequest> topics;
  core::OffsetSpec from;
  core::OffsetSpec to;
  std::optional<std::string> group;
  std::optional<core::OffsetSpec> seek;
  // More seeks resolved against the same watermarks and offsets (watch's --seek NAME=SPEC).
  std::vector<core::OffsetSpec> seeks;
  std::int64_t now_ms = 0;
};

struct ResolvedRange {
  core::SourceInfo info;                  // as the report's `source`, before reading
  std::vector<core::PartitionPlan> plans; // what the reader reads
  // Where each of request.seeks falls: [seek][partition, in info.partitions' order].
  std::vector<std::vector<std::int64_t>> seek_offsets;
};

// Asks the brokers for partitions, watermarks, committed offsets and timestamp lookups and
// resolves the SPECs (core::resolve_offset). Throws UnreachableError when the brokers cannot be
// reached within the timeout, UsageError for an unknown topic or partition or a bad -X property.
ResolvedRange resolve_range(const KafkaSettings& settings, const RangeRequest& request);

// Reads the planned ranges with assign() (no group join, nothing committed) and stops when every
// partition reached its end, never by a timeout; a read that makes no progress for the timeout is
// an UnreachableError.
std::unique_ptr<core::EventSource> open_reader(const KafkaSettings& settings, std::vector<core::PartitionPlan> plans);

// --sink kafka:TOPIC: an idempotent producer (acks=all) with a delivery report per event; records
// keep their key, headers and CreateTime, and the partitioner places them by key. Its position is
// the topic's high watermarks ("0:17,1:4"). Throws UsageError when the topic does not exist.
std::unique_ptr<core::ReplaySink> open_sink(const KafkaSettings& settings, const std::string& topic);

// What DescribeConfigs said of one topic: its retention configs, or why there are none ("the broker
// refused DescribeConfigs for T (…): the principal needs DESCRIBE_CONFIGS on it", "… did not answer
// … within N ms", "… failed (…)").
struct DescribedRetention {
  std::optional<core::TopicRetention> configs;
  std::string why;
};

// The retention.ms, cleanup.policy and segment.ms of each of `topics` (named once each in the
// answer), in one DescribeConfigs request within `timeout_ms` (the mock cluster never answers;
// verified against real Kafka only). Throws UnreachableError when the login or TLS is refused.
std::map<std::string, DescribedRetention>
describe_retentions(const KafkaSettings& settings, const std::vector<std::string>& topics, std::int64_t timeout_ms);

// One topic's: nullopt when the broker does not answer or refuses, with why in `why` when given.
std::optional<core::TopicRetention> describe_retention(const KafkaSettings& settings, const std::string& topic,
                                                       std::int64_t timeout_ms, std::string* why = nullptr);

// --effects kafka:TOPIC. The earliest timestamp the plans' events can have: a partition's time
// filter where it has one, its first record's otherwise (a read of one record a partition); nullopt
// when no plan holds an event.
std::optional<std::int64_t> earliest_timestamp(const KafkaSettings& settings,
                                               const std::vector<core::PartitionPlan>& plans);

// The consumer's effects as the records it produces to `topic`: read once, at the first lookup, from
// each partition's first offset whose timestamp is >= from_ms to its end as it is then (never the
// topic's older records), every record's id taken by `id` (the first spec that yields one) and kept
// exactly. A key is present when some record carried it as its id. `follow` (watch): every later
// lookup first reads what was produced since, from where the last read ended.
std::unique_ptr<core::EffectStore> open_topic_effects(const KafkaSettings& settings, const std::string& topic,
                                                      std::int64_t from_ms, std::vector<core::FieldSpec> id,
                                                      bool follow = false);

// A Kafka Streams store's changelog topic (kstreams://), read whole on a thread of its own while the log
// is read: every partition from its log start to its end as resolved at the start, read_committed
// (librdkafka's default: an exactly-once application's aborted puts are never read), folded in offset
// order into the store each task restores. Resolving the topic happens in the constructor: a topic that
// does not exist is a UsageError naming it, a cluster that cannot be reached an UnreachableError.
class ChangelogReader {
public:
  ChangelogReader(const KafkaSettings& settings, const std::string& topic, std::int64_t retention_ms, bool key_value);
  ~ChangelogReader(); // waits for the read
  ChangelogReader(const ChangelogReader&) = delete;
  ChangelogReader& operator=(const ChangelogReader&) = delete;

  // Waits for the fold; rethrows what the read threw (UnreachableError; UsageError naming a record that is
  // no window store key).
  core::WindowStoreChangelog& fold();
  std::size_t partitions() const { return m_partitions; }
  const std::string& topic() const { return m_topic; }

private:
  std::string m_topic;
  std::size_t m_partitions = 0;
  core::WindowStoreChangelog m_fold;
  std::future<void> m_read;
  bool m_waited = false;
};

} // namespace dedupctl::connectors::kafka
