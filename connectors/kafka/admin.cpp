#include "connectors/kafka/client.hpp"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <string_view>

// Admin requests: DescribeConfigs for a topic's retention.
namespace dedupctl::connectors::kafka {

std::optional<core::TopicRetention> describe_retention(const KafkaSettings& settings, const std::string& topic,
                                                       std::int64_t timeout_ms, std::string* why) {
  auto failed = [&](rd_kafka_resp_err_t err, const char* text) -> std::optional<core::TopicRetention> {
    if (why) {
      if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
        *why = fmt::format("the broker refused DescribeConfigs for {} ({}): the principal needs DESCRIBE_CONFIGS on it",
                           topic, rd_kafka_err2str(err));
      } else if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
        *why = fmt::format("the broker did not answer DescribeConfigs for {} within {} ms", topic, timeout_ms);
      } else {
        *why = fmt::format("DescribeConfigs for {} failed ({})", topic, text);
      }
    }
    return std::nullopt;
  };
  KafkaHandle rk = make_handle(RD_KAFKA_PRODUCER, settings, {});
  rd_kafka_ConfigResource_t* resource = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  QueueHandle queue(rd_kafka_queue_new(rk.get()));
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  char errstr[256];
  rd_kafka_AdminOptions_set_request_timeout(options, static_cast<int>(timeout_ms), errstr, sizeof errstr);
  rd_kafka_DescribeConfigs(rk.get(), &resource, 1, options, queue.get());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy(resource);
  // Polled in short waits: a refused login or TLS handshake ends it at once.
  rd_kafka_event_t* event = nullptr;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms + 500);
  while (!event && std::chrono::steady_clock::now() < deadline) {
    throw_if_refused(rk.get());
    event = rd_kafka_queue_poll(queue.get(), k_refusal_check_ms);
  }
  if (!event) {
    throw_if_refused(rk.get());
    return failed(RD_KAFKA_RESP_ERR__TIMED_OUT, "");
  }
  std::unique_ptr<rd_kafka_event_t, decltype(&rd_kafka_event_destroy)> guard(event, rd_kafka_event_destroy);
  if (rd_kafka_resp_err_t err = rd_kafka_event_error(event)) {
    return failed(err, rd_kafka_event_error_string(event));
  }
  const rd_kafka_DescribeConfigs_result_t* result = rd_kafka_event_DescribeConfigs_result(event);
  std::size_t count = 0;
  const rd_kafka_ConfigResource_t** resources = rd_kafka_DescribeConfigs_result_resources(result, &count);
  if (count != 1) {
    return failed(RD_KAFKA_RESP_ERR__BAD_MSG, "no topic in the answer");
  }
  if (rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(resources[0])) {
    const char* text = rd_kafka_ConfigResource_error_string(resources[0]);
    return failed(err, text && *text ? text : rd_kafka_err2str(err));
  }
  core::TopicRetention config;
  std::size_t entries = 0;
  const rd_kafka_ConfigEntry_t** configs = rd_kafka_ConfigResource_configs(resources[0], &entries);
  for (std::size_t i = 0; i < entries; ++i) {
    std::string_view name = rd_kafka_ConfigEntry_name(configs[i]);
    const char* value = rd_kafka_ConfigEntry_value(configs[i]);
    if (name == "retention.ms" && value) {
      config.retention_ms = value;
    } else if (name == "cleanup.policy" && value) {
      config.cleanup_policy = value;
    } else if (name == "segment.ms" && value) {
      config.segment_ms = value;
    }
  }
  return config;
}

} // namespace dedupctl::connectors::kafka
