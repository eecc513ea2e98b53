#include "connectors/kafka/client.hpp"

#include <fmt/format.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

// Admin requests: DescribeConfigs for a topic's retention.
namespace dedupctl::connectors::kafka {

namespace {

// Why DescribeConfigs gave nothing for `topic`: refused, unanswered within `timeout_ms`, or failed.
std::string why_not_described(const std::string& topic, rd_kafka_resp_err_t err, const char* text,
                              std::int64_t timeout_ms) {
  if (err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
    return fmt::format("the broker refused DescribeConfigs for {} ({}): the principal needs DESCRIBE_CONFIGS on it",
                       topic, rd_kafka_err2str(err));
  }
  if (err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
    return fmt::format("the broker did not answer DescribeConfigs for {} within {} ms", topic, timeout_ms);
  }
  return fmt::format("DescribeConfigs for {} failed ({})", topic, text && *text ? text : rd_kafka_err2str(err));
}

core::TopicRetention retention_configs(const rd_kafka_ConfigResource_t* resource) {
  core::TopicRetention config;
  std::size_t entries = 0;
  const rd_kafka_ConfigEntry_t** configs = rd_kafka_ConfigResource_configs(resource, &entries);
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

} // namespace

std::map<std::string, DescribedRetention>
describe_retentions(const KafkaSettings& settings, const std::vector<std::string>& topics, std::int64_t timeout_ms) {
  std::map<std::string, DescribedRetention> answers;
  for (const auto& topic : topics) {
    answers[topic]; // once each: the broker refuses a request that names a resource twice
  }
  if (answers.empty()) {
    return answers;
  }
  auto all_failed = [&](rd_kafka_resp_err_t err, const char* text) {
    for (auto& [topic, answer] : answers) {
      answer.why = why_not_described(topic, err, text, timeout_ms);
    }
    return answers;
  };
  KafkaHandle rk = make_handle(RD_KAFKA_PRODUCER, settings, {});
  std::vector<rd_kafka_ConfigResource_t*> resources;
  for (const auto& [topic, answer] : answers) {
    resources.push_back(rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str()));
  }
  QueueHandle queue(rd_kafka_queue_new(rk.get()));
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  char errstr[256];
  rd_kafka_AdminOptions_set_request_timeout(options, static_cast<int>(timeout_ms), errstr, sizeof errstr);
  rd_kafka_DescribeConfigs(rk.get(), resources.data(), resources.size(), options, queue.get());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy_array(resources.data(), resources.size());
  // Polled in short waits: a refused login or TLS handshake ends it at once.
  rd_kafka_event_t* event = nullptr;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms + 500);
  while (!event && std::chrono::steady_clock::now() < deadline) {
    throw_if_refused(rk.get());
    event = rd_kafka_queue_poll(queue.get(), k_refusal_check_ms);
  }
  if (!event) {
    throw_if_refused(rk.get());
    return all_failed(RD_KAFKA_RESP_ERR__TIMED_OUT, "");
  }
  std::unique_ptr<rd_kafka_event_t, decltype(&rd_kafka_event_destroy)> guard(event, rd_kafka_event_destroy);
  if (rd_kafka_resp_err_t err = rd_kafka_event_error(event)) {
    return all_failed(err, rd_kafka_event_error_string(event));
  }
  const rd_kafka_DescribeConfigs_result_t* result = rd_kafka_event_DescribeConfigs_result(event);
  std::size_t count = 0;
  const rd_kafka_ConfigResource_t** described = rd_kafka_DescribeConfigs_result_resources(result, &count);
  for (auto& [topic, answer] : answers) {
    answer.why = why_not_described(topic, RD_KAFKA_RESP_ERR__BAD_MSG, "the topic is not in the answer", timeout_ms);
  }
  for (std::size_t i = 0; i < count; ++i) {
    auto at = answers.find(rd_kafka_ConfigResource_name(described[i]));
    if (at == answers.end()) {
      continue;
    }
    if (rd_kafka_resp_err_t err = rd_kafka_ConfigResource_error(described[i])) {
      at->second.why =
          why_not_described(at->first, err, rd_kafka_ConfigResource_error_string(described[i]), timeout_ms);
    } else {
      at->second.configs = retention_configs(described[i]);
      at->second.why.clear();
    }
  }
  return answers;
}

std::optional<core::TopicRetention> describe_retention(const KafkaSettings& settings, const std::string& topic,
                                                       std::int64_t timeout_ms, std::string* why) {
  auto answer = describe_retentions(settings, {topic}, timeout_ms).at(topic);
  if (why && !answer.configs) {
    *why = answer.why;
  }
  return answer.configs;
}

} // namespace dedupctl::connectors::kafka
