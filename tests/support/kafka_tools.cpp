#include "tests/support/kafka_tools.hpp"

#include <librdkafka/rdkafka.h>

#include <fmt/format.h>

#include <stdexcept>

namespace dedupctl::testing {

namespace {

rd_kafka_t* make(rd_kafka_type_t type, const std::string& bootstrap,
                 const std::vector<std::pair<std::string, std::string>>& properties,
                 void (*on_delivery)(rd_kafka_t*, const rd_kafka_message_t*, void*) = nullptr, void* opaque = nullptr) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  auto set = [&](const std::string& name, const std::string& value) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw std::runtime_error(fmt::format("{}={}: {}", name, value, errstr));
    }
  };
  set("bootstrap.servers", bootstrap);
  set("log_level", "3");
  for (const auto& [name, value] : properties) {
    set(name, value);
  }
  if (on_delivery) {
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_opaque(conf, opaque);
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  if (!rk) {
    throw std::runtime_error(fmt::format("cannot create a Kafka client: {}", errstr));
  }
  return rk;
}

} // namespace

struct TestProducer::State {
  rd_kafka_t* rk = nullptr;
  std::int64_t timeout_ms = 0;
  std::int64_t failed = 0;
  std::string first_error;
  static void delivered(rd_kafka_t*, const rd_kafka_message_t* message, void* opaque) {
    auto* self = static_cast<State*>(opaque);
    if (message->err && self->failed++ == 0) {
      self->first_error = rd_kafka_err2str(message->err);
    }
  }
};

TestProducer::TestProducer(const std::string& bootstrap, std::int64_t timeout_ms) : m_state(std::make_unique<State>()) {
  m_state->timeout_ms = timeout_ms;
  m_state->rk = make(RD_KAFKA_PRODUCER, bootstrap,
                     {{"acks", "all"},
                      {"linger.ms", "5"},
                      {"queue.buffering.max.messages", "1000000"},
                      {"message.timeout.ms", std::to_string(timeout_ms)}},
                     &State::delivered, m_state.get());
}

TestProducer::~TestProducer() {
  rd_kafka_flush(m_state->rk, static_cast<int>(m_state->timeout_ms));
  rd_kafka_destroy(m_state->rk);
}

void TestProducer::send(const OutgoingRecord& record) {
  rd_kafka_headers_t* headers = nullptr;
  if (!record.headers.empty()) {
    headers = rd_kafka_headers_new(record.headers.size());
    for (const auto& [name, value] : record.headers) {
      rd_kafka_header_add(headers, name.data(), static_cast<ssize_t>(name.size()), value ? value->data() : nullptr,
                          value ? static_cast<ssize_t>(value->size()) : 0);
    }
  }
  // The V_ macros cast their arguments: compute them first.
  const void* key = record.key ? record.key->data() : nullptr;
  std::size_t key_size = record.key ? record.key->size() : 0;
  void* value = record.payload ? const_cast<char*>(record.payload->data()) : nullptr;
  std::size_t value_size = record.payload ? record.payload->size() : 0;
  std::int32_t partition = record.partition.value_or(RD_KAFKA_PARTITION_UA);
  for (;;) {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        m_state->rk, RD_KAFKA_V_TOPIC(record.topic.c_str()), RD_KAFKA_V_PARTITION(partition),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, key_size), RD_KAFKA_V_VALUE(value, value_size),
        RD_KAFKA_V_TIMESTAMP(record.timestamp_ms), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(m_state->rk, 100);
      continue;
    }
    if (err) {
      if (headers) {
        rd_kafka_headers_destroy(headers);
      }
      throw std::runtime_error(fmt::format("cannot produce to {}: {}", record.topic, rd_kafka_err2str(err)));
    }
    break;
  }
  rd_kafka_poll(m_state->rk, 0);
}

std::int64_t TestProducer::flush(std::string& first_error) {
  if (rd_kafka_flush(m_state->rk, static_cast<int>(m_state->timeout_ms * 6)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw std::runtime_error(fmt::format("Kafka did not acknowledge {} records", rd_kafka_outq_len(m_state->rk)));
  }
  first_error = m_state->first_error;
  return m_state->failed;
}

void commit_offsets(const std::string& bootstrap, const std::string& group, const std::string& topic,
                    const std::vector<std::pair<std::int32_t, std::int64_t>>& offsets) {
  rd_kafka_t* rk = make(RD_KAFKA_CONSUMER, bootstrap, {{"group.id", group}, {"enable.auto.commit", "false"}});
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(offsets.size()));
  for (const auto& [partition, offset] : offsets) {
    rd_kafka_topic_partition_list_add(list, topic.c_str(), partition)->offset = offset;
  }
  rd_kafka_resp_err_t err = rd_kafka_commit(rk, list, 0);
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (err) {
    throw std::runtime_error(fmt::format("commit for group '{}': {}", group, rd_kafka_err2str(err)));
  }
}

std::vector<std::pair<std::int64_t, std::int64_t>> watermarks(const std::string& bootstrap, const std::string& topic,
                                                              std::int64_t timeout_ms) {
  rd_kafka_t* rk = make(RD_KAFKA_PRODUCER, bootstrap, {});
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  std::string error;
  // Metadata of all topics: a request for one may auto-create it.
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 1, nullptr, &metadata, static_cast<int>(timeout_ms));
  const rd_kafka_metadata_topic_t* found = nullptr;
  for (int i = 0; !err && i < metadata->topic_cnt; ++i) {
    if (topic == metadata->topics[i].topic) {
      found = &metadata->topics[i];
    }
  }
  if (err || !found || found->err) {
    error = fmt::format("metadata of {}: {}", topic,
                        err     ? rd_kafka_err2str(err)
                        : found ? rd_kafka_err2str(found->err)
                                : "no such topic");
  } else {
    for (int p = 0; p < found->partition_cnt && error.empty(); ++p) {
      std::int64_t low = 0, high = 0;
      err = rd_kafka_query_watermark_offsets(rk, topic.c_str(), p, &low, &high, static_cast<int>(timeout_ms));
      if (err) {
        error = fmt::format("watermarks of {}[{}]: {}", topic, p, rd_kafka_err2str(err));
      }
      out.emplace_back(low, high);
    }
  }
  if (metadata) {
    rd_kafka_metadata_destroy(metadata);
  }
  rd_kafka_destroy(rk);
  if (!error.empty()) {
    throw std::runtime_error(error);
  }
  return out;
}

} // namespace dedupctl::testing
