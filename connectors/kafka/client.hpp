#pragma once

// What the Kafka connector's parts share: RAII over librdkafka's handles, making a client from
// KafkaSettings, and the requests that range resolution, the reader, the sink and admin all make.
// Included by connectors/kafka/*.cpp only: librdkafka stays inside this folder.
#include "connectors/kafka/kafka.hpp"

#include <librdkafka/rdkafka.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dedupctl::connectors::kafka {

// How long one consume call waits before the loop checks the stop flag and the stall timer.
constexpr int k_poll_interval_ms = 100;
// core::Event::native_kind of the events a KafkaReader delivers: their `native` is the message (the
// sink copies a read event's headers from it).
inline constexpr char k_message_kind = 'K';

// Destroys the handle, then what make_handle kept for it (its opaque).
void destroy_handle(rd_kafka_t* rk);
struct KafkaDeleter {
  void operator()(rd_kafka_t* rk) const { destroy_handle(rk); }
};
using KafkaHandle = std::unique_ptr<rd_kafka_t, KafkaDeleter>;

struct TopicDeleter {
  void operator()(rd_kafka_topic_t* rkt) const { rd_kafka_topic_destroy(rkt); }
};
using TopicHandle = std::unique_ptr<rd_kafka_topic_t, TopicDeleter>;

struct ListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* list) const { rd_kafka_topic_partition_list_destroy(list); }
};
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, ListDeleter>;

struct MetadataDeleter {
  void operator()(const rd_kafka_metadata_t* md) const { rd_kafka_metadata_destroy(md); }
};
using Metadata = std::unique_ptr<const rd_kafka_metadata_t, MetadataDeleter>;

struct QueueDeleter {
  void operator()(rd_kafka_queue_t* queue) const { rd_kafka_queue_destroy(queue); }
};
using QueueHandle = std::unique_ptr<rd_kafka_queue_t, QueueDeleter>;

// Creates a handle; `opaque` must outlive it. Throws UsageError for a bad property.
using DeliveryCallback = void (*)(rd_kafka_t*, const rd_kafka_message_t*, void*);

KafkaHandle make_handle(rd_kafka_type_t type, const KafkaSettings& settings,
                        const std::vector<std::pair<std::string, std::string>>& defaults,
                        DeliveryCallback on_delivery = nullptr);

// An authentication or TLS failure librdkafka met on this handle's connections, in words ("SASL
// authentication failed for user 'app' (SCRAM-SHA-512): invalid credentials"); empty while none.
// Whatever waits on the brokers checks it between short waits, so that a refused login ends the
// run within a second or so instead of at --timeout.
std::string connection_failure(rd_kafka_t* rk);
// Throws UnreachableError with connection_failure() when there is one.
void throw_if_refused(rd_kafka_t* rk);
// How long one of those short waits is.
constexpr int k_refusal_check_ms = 250;
// How long to wait before asking again for a partition (or a topic's leaders) not yet taking
// requests.
constexpr std::chrono::milliseconds k_transient_backoff{200};

// Throws UnreachableError naming the brokers, what was asked and librdkafka's error.
[[noreturn]] void unreachable(const KafkaSettings& settings, std::string_view what, rd_kafka_resp_err_t err);
// The errors that mean the brokers could not be reached (rather than refused the request).
bool is_unreachable(rd_kafka_resp_err_t err);
// settings.timeout_ms as librdkafka's int, clamped to [1 ms, 1 h].
int timeout_of(const KafkaSettings& settings);

// A topic's partition ids, sorted; UsageError when it does not exist.
std::vector<std::int32_t> topic_partitions(rd_kafka_t* rk, const KafkaSettings& settings, const std::string& topic);
// Offsets per partition for a list of (topic, partition, value) via a librdkafka list call.
PartitionList make_list(const std::vector<std::pair<std::string, std::int32_t>>& partitions, std::int64_t value);
std::optional<std::int64_t> list_offset(const rd_kafka_topic_partition_list_t* list, const std::string& topic,
                                        std::int32_t partition);
// The (low, high) watermarks of these partitions, in their order: two requests for all of them.
std::vector<std::pair<std::int64_t, std::int64_t>>
watermarks(rd_kafka_t* rk, const KafkaSettings& settings,
           const std::vector<std::pair<std::string, std::int32_t>>& partitions);
// The watermarks of each partition of a topic through an existing handle (the sink's producer: no
// new connection per call).
std::vector<std::pair<std::int64_t, std::int64_t>> watermarks_of(rd_kafka_t* rk, const KafkaSettings& settings,
                                                                 const std::string& topic);

// When `group` is listed by the cluster but not as a consumer group (a share group, a Streams
// group, Kafka Connect's): what it is. nullopt for a consumer group, a group not listed at all, or
// when the listing failed.
std::optional<core::GroupKindInfo> non_consumer_group_kind(rd_kafka_t* rk, const KafkaSettings& settings,
                                                           const std::string& group);

} // namespace dedupctl::connectors::kafka
