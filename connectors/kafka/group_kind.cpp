#include "connectors/kafka/client.hpp"
#include "connectors/kafka/kafka.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstring>

// What kind of group a --group names when librdkafka does not see it as a consumer group.
// librdkafka (2.8) lists only groups of protocol type "consumer" or "" (its ListConsumerGroups drops
// the rest of the broker's answer) and describes share and Streams groups as "Dead", exactly as it
// describes a group that does not exist. So: (1) ListConsumerGroups: listed there, it is a consumer
// group; (2) the legacy group listing (ListGroups, then DescribeGroups) lists every group: not
// there, the group does not exist (a misspelt name, said as before); a protocol type other than
// "consumer" names it; (3) its records in __consumer_offsets state its type.
namespace dedupctl::connectors::kafka {

namespace {

constexpr const char* k_offsets_topic = "__consumer_offsets";
// A bound on the __consumer_offsets records read for one group's type (the partition is compacted;
// a busy one holds many groups' records).
constexpr std::int64_t k_max_coordinator_records = 2'000'000;

struct EventDeleter {
  void operator()(rd_kafka_event_t* event) const { rd_kafka_event_destroy(event); }
};

// true/false: listed as a consumer group or not; nullopt when the listing failed.
std::optional<bool> listed_as_consumer_group(rd_kafka_t* rk, const KafkaSettings& settings, const std::string& group) {
  QueueHandle queue(rd_kafka_queue_new(rk));
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
  char err[256];
  rd_kafka_AdminOptions_set_request_timeout(options, timeout_of(settings), err, sizeof err);
  rd_kafka_ListConsumerGroups(rk, options, queue.get());
  rd_kafka_AdminOptions_destroy(options);
  std::unique_ptr<rd_kafka_event_t, EventDeleter> event(rd_kafka_queue_poll(queue.get(), timeout_of(settings) + 1000));
  if (!event || rd_kafka_event_error(event.get())) {
    return std::nullopt;
  }
  const auto* result = rd_kafka_event_ListConsumerGroups_result(event.get());
  std::size_t count = 0;
  const rd_kafka_ConsumerGroupListing_t** listings = rd_kafka_ListConsumerGroups_result_valid(result, &count);
  for (std::size_t i = 0; i < count; ++i) {
    if (group == rd_kafka_ConsumerGroupListing_group_id(listings[i])) {
      return true;
    }
  }
  return false;
}

struct Listed {
  std::string protocol_type;
  std::string state;
};

std::optional<Listed> listed_at_all(rd_kafka_t* rk, const KafkaSettings& settings, const std::string& group) {
  const rd_kafka_group_list* list = nullptr;
  if (rd_kafka_list_groups(rk, group.c_str(), &list, timeout_of(settings)) != RD_KAFKA_RESP_ERR_NO_ERROR || !list) {
    return std::nullopt;
  }
  std::optional<Listed> out;
  for (int i = 0; i < list->group_cnt; ++i) {
    if (group == list->groups[i].group) {
      out = Listed{list->groups[i].protocol_type ? list->groups[i].protocol_type : "",
                   list->groups[i].state ? list->groups[i].state : ""};
    }
  }
  rd_kafka_group_list_destroy(list);
  return out;
}

// The group's type as its latest records in __consumer_offsets state it.
core::GroupKindInfo from_coordinator_records(rd_kafka_t* rk, const KafkaSettings& settings, const std::string& group) {
  core::GroupKindInfo info;
  try {
    auto partitions = topic_partitions(rk, settings, k_offsets_topic);
    std::int32_t partition = core::coordinator_partition(group, static_cast<std::int32_t>(partitions.size()));
    auto marks = watermarks(rk, settings, {{k_offsets_topic, partition}});
    core::PartitionPlan plan;
    plan.topic = k_offsets_topic;
    plan.partition = partition;
    plan.start = std::max(marks[0].first, marks[0].second - k_max_coordinator_records);
    plan.end = marks[0].second;
    std::optional<core::CoordinatorRecord> latest;
    if (plan.start < plan.end) {
      auto reader = open_reader(settings, {plan});
      core::EventBatch batch;
      while (reader->next_batch(batch)) {
        for (const auto& event : batch.events) {
          if (!event.key || !event.payload) { // a tombstone deletes a record; the group's type stays
            continue;
          }
          auto record = core::coordinator_record_of(*event.key, group);
          if (record && *record != core::CoordinatorRecord::Offsets && *record != core::CoordinatorRecord::Unknown) {
            latest = record;
          }
        }
      }
    }
    if (latest == core::CoordinatorRecord::Share) {
      info.kind = core::GroupKind::Share;
    } else if (latest == core::CoordinatorRecord::Streams) {
      info.kind = core::GroupKind::Streams;
    } else {
      info.unread_why = fmt::format("{}[{}] holds no record of its type", k_offsets_topic, partition);
    }
  } catch (const std::exception& e) {
    info.unread_why = fmt::format("reading {}: {}", k_offsets_topic, e.what());
  }
  return info;
}

} // namespace

std::optional<core::GroupKindInfo> non_consumer_group_kind(rd_kafka_t* rk, const KafkaSettings& settings,
                                                           const std::string& group) {
  if (listed_as_consumer_group(rk, settings, group).value_or(true)) {
    return std::nullopt;
  }
  auto listed = listed_at_all(rk, settings, group);
  if (!listed || listed->protocol_type == "consumer") {
    return std::nullopt;
  }
  if (!listed->protocol_type.empty()) {
    core::GroupKindInfo info;
    info.kind = core::GroupKind::Other;
    info.protocol_type = listed->protocol_type;
    return info;
  }
  if (listed->state != "Dead") { // described as a classic group with no protocol: offsets only
    return std::nullopt;
  }
  return from_coordinator_records(rk, settings, group);
}

} // namespace dedupctl::connectors::kafka
