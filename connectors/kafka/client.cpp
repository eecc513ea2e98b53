#include "connectors/kafka/client.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace dedupctl::connectors::kafka {

namespace {

void log_callback(const rd_kafka_t* rk, int level, const char* facility, const char* text) {
  const auto* settings = static_cast<const KafkaSettings*>(rd_kafka_opaque(rk));
  // librdkafka logs every refused connection; an operator sees our one message instead, and the
  // library's own lines with -vv.
  if (settings && settings->verbosity >= 2) {
    std::fprintf(stderr, "dedupctl: librdkafka[%d] %s: %s\n", level, facility, text);
  }
}

} // namespace

KafkaHandle make_handle(rd_kafka_type_t type, const KafkaSettings& settings,
                        const std::vector<std::pair<std::string, std::string>>& defaults,
                        DeliveryCallback on_delivery) {
  if (settings.bootstrap.empty()) {
    throw UsageError("no Kafka brokers: give --bootstrap-server HOST:PORT (or DEDUPCTL_BOOTSTRAP_SERVER), "
                     "or read a kcat -J dump with --input");
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char errstr[512];
  auto set = [&](const std::string& name, const std::string& value, bool user) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      // A -X value may be a secret (sasl.password with its name misspelt), and librdkafka quotes
      // an invalid value in its message: the value is never shown.
      std::string why = errstr;
      if (!value.empty()) {
        for (auto at = why.find(value); at != std::string::npos; at = why.find(value, at + 3)) {
          why.replace(at, value.size(), "***");
        }
      }
      throw UsageError(
          user ? fmt::format("invalid -X {}: {} (value not shown); see librdkafka's CONFIGURATION.md", name, why)
               : fmt::format("cannot set Kafka property {}: {}", name, why));
    }
  };
  set("bootstrap.servers", settings.bootstrap, false);
  set("socket.connection.setup.timeout.ms", std::to_string(std::max<std::int64_t>(1000, settings.timeout_ms)), false);
  for (const auto& [name, value] : defaults) {
    set(name, value, false);
  }
  for (const auto& [name, value] : settings.properties) {
    set(name, value, true);
  }
  rd_kafka_conf_set_log_cb(conf, log_callback);
  if (on_delivery) {
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
  }
  rd_kafka_conf_set_opaque(conf, const_cast<KafkaSettings*>(&settings));
  rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    throw UsageError(fmt::format("cannot create a Kafka client: {}", errstr));
  }
  return KafkaHandle(rk);
}

[[noreturn]] void unreachable(const KafkaSettings& settings, std::string_view what, rd_kafka_resp_err_t err) {
  throw UnreachableError(fmt::format("cannot reach Kafka at {} ({}: {}); check --bootstrap-server and that the "
                                     "brokers are up, or raise --timeout",
                                     settings.bootstrap, what, rd_kafka_err2str(err)));
}

bool is_unreachable(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__TIMED_OUT ||
         err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__RESOLVE ||
         err == RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT || err == RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE;
}

int timeout_of(const KafkaSettings& settings) {
  return static_cast<int>(std::clamp<std::int64_t>(settings.timeout_ms, 1, 3'600'000));
}

// Asks for every topic's metadata rather than the one topic's: a per-topic request may create the
// topic on brokers with auto-creation on (the mock always does), and an audit must change nothing.
std::vector<std::int32_t> topic_partitions(rd_kafka_t* rk, const KafkaSettings& settings, const std::string& topic) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(settings.timeout_ms);
  while (true) {
    const rd_kafka_metadata_t* raw = nullptr;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, nullptr, &raw, timeout_of(settings));
    if (err) {
      unreachable(settings, fmt::format("metadata for topic '{}'", topic), err);
    }
    Metadata md(raw);
    const rd_kafka_metadata_topic_t* found = nullptr;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (topic == md->topics[i].topic) {
        found = &md->topics[i];
      }
    }
    if (!found || found->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
      throw UsageError(fmt::format("topic '{}' does not exist at {}; check --topic", topic, settings.bootstrap));
    }
    if (found->err == RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      continue;
    }
    if (found->err) {
      unreachable(settings, fmt::format("metadata for topic '{}'", topic), found->err);
    }
    std::vector<std::int32_t> ids;
    for (int i = 0; i < found->partition_cnt; ++i) {
      ids.push_back(found->partitions[i].id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  }
}

PartitionList make_list(const std::vector<std::pair<std::string, std::int32_t>>& partitions, std::int64_t value) {
  PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
  for (const auto& [topic, partition] : partitions) {
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition)->offset = value;
  }
  return list;
}

std::optional<std::int64_t> list_offset(const rd_kafka_topic_partition_list_t* list, const std::string& topic,
                                        std::int32_t partition) {
  for (int i = 0; i < list->cnt; ++i) {
    const auto& elem = list->elems[i];
    if (elem.partition == partition && topic == elem.topic && !elem.err) {
      return elem.offset;
    }
  }
  return std::nullopt;
}

std::vector<std::pair<std::int64_t, std::int64_t>> watermarks_of(rd_kafka_t* rk, const KafkaSettings& settings,
                                                                 const std::string& topic) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (auto partition : topic_partitions(rk, settings, topic)) {
    std::int64_t low = 0;
    std::int64_t high = 0;
    rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &low, &high, timeout_of(settings));
    if (err) {
      unreachable(settings, fmt::format("watermarks of {}[{}]", topic, partition), err);
    }
    out.emplace_back(low, high);
  }
  return out;
}

} // namespace dedupctl::connectors::kafka
