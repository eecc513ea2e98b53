#include "tests/support/kafka_tools.hpp"

#include <librdkafka/rdkafka.h>

#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <map>
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

// Queues one record (headers, key, payload, CreateTime); the headers belong to librdkafka once it
// took the record.
rd_kafka_resp_err_t produce_one(rd_kafka_t* rk, const OutgoingRecord& record) {
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
  rd_kafka_resp_err_t err = rd_kafka_producev(
      rk, RD_KAFKA_V_TOPIC(record.topic.c_str()), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, key_size), RD_KAFKA_V_VALUE(value, value_size),
      RD_KAFKA_V_TIMESTAMP(record.timestamp_ms), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
  if (err && headers) {
    rd_kafka_headers_destroy(headers);
  }
  return err;
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

TestProducer::TestProducer(const std::string& bootstrap, std::int64_t timeout_ms,
                           const std::vector<std::pair<std::string, std::string>>& properties)
    : m_state(std::make_unique<State>()) {
  m_state->timeout_ms = timeout_ms;
  // Idempotence: a retried produce must not write a record twice, or a test counting offsets sees
  // one record more than it sent (seen once in CI on the real broker).
  std::vector<std::pair<std::string, std::string>> all{{"acks", "all"},
                                                       {"enable.idempotence", "true"},
                                                       {"linger.ms", "5"},
                                                       {"queue.buffering.max.messages", "1000000"},
                                                       {"message.timeout.ms", std::to_string(timeout_ms)}};
  all.insert(all.end(), properties.begin(), properties.end());
  m_state->rk = make(RD_KAFKA_PRODUCER, bootstrap, all, &State::delivered, m_state.get());
}

TestProducer::~TestProducer() {
  rd_kafka_flush(m_state->rk, static_cast<int>(m_state->timeout_ms));
  rd_kafka_destroy(m_state->rk);
}

void TestProducer::connect(const std::string& topic) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(m_state->rk, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* metadata = nullptr;
  rd_kafka_resp_err_t err = rd_kafka_metadata(m_state->rk, 0, rkt, &metadata, static_cast<int>(m_state->timeout_ms));
  if (metadata) {
    rd_kafka_metadata_destroy(metadata);
  }
  rd_kafka_topic_destroy(rkt);
  if (err) {
    throw std::runtime_error(fmt::format("cannot reach the leaders of {}: {}", topic, rd_kafka_err2str(err)));
  }
}

void TestProducer::send(const OutgoingRecord& record) {
  for (;;) {
    rd_kafka_resp_err_t err = produce_one(m_state->rk, record);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(m_state->rk, 100);
      continue;
    }
    if (err) {
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

std::vector<ReadRecord> read_partition(const std::string& bootstrap, const std::string& topic, std::int32_t partition,
                                       std::int64_t timeout_ms) {
  rd_kafka_t* rk = make(RD_KAFKA_CONSUMER, bootstrap,
                        {{"group.id", "dedupctl-tests-reader"},
                         {"enable.auto.commit", "false"},
                         {"isolation.level", "read_committed"},
                         {"enable.partition.eof", "true"}});
  std::int64_t low = 0, high = 0;
  rd_kafka_resp_err_t err =
      rd_kafka_query_watermark_offsets(rk, topic.c_str(), partition, &low, &high, static_cast<int>(timeout_ms));
  std::vector<ReadRecord> out;
  std::string error = err ? fmt::format("watermarks of {}:{}: {}", topic, partition, rd_kafka_err2str(err)) : "";
  if (error.empty() && high > low) {
    rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(list, topic.c_str(), partition)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    bool at_end = false;
    while (!at_end && error.empty()) {
      if (std::chrono::steady_clock::now() > deadline) {
        error = fmt::format("{}:{}: read {} records short of offset {} in {} ms", topic, partition, out.size(), high,
                            timeout_ms);
        break;
      }
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
      if (!m) {
        continue;
      }
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        at_end = m->offset >= high; // read_committed: the end may sit past the last record read
      } else if (m->err) {
        error = fmt::format("{}:{}: {}", topic, partition, rd_kafka_message_errstr(m));
      } else {
        ReadRecord r;
        r.offset = m->offset;
        r.timestamp_ms = rd_kafka_message_timestamp(m, nullptr);
        if (m->key) {
          r.key = std::string(static_cast<const char*>(m->key), m->key_len);
        }
        if (m->payload) {
          r.value = std::string(static_cast<const char*>(m->payload), m->len);
        }
        out.push_back(std::move(r));
        at_end = m->offset + 1 >= high;
      }
      rd_kafka_message_destroy(m);
    }
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  if (!error.empty()) {
    throw std::runtime_error(error);
  }
  return out;
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
    // Both ends of every partition in two ListOffsets requests (the earliest and latest sentinels
    // as times): rd_kafka_query_watermark_offsets notices a reply only at the broker thread's
    // once-a-second scan (librdkafka#4878).
    out.resize(static_cast<std::size_t>(found->partition_cnt));
    for (std::int64_t end : {RD_KAFKA_OFFSET_BEGINNING, RD_KAFKA_OFFSET_END}) {
      rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(found->partition_cnt);
      for (int p = 0; p < found->partition_cnt; ++p) {
        rd_kafka_topic_partition_list_add(list, topic.c_str(), p)->offset = end;
      }
      err = rd_kafka_offsets_for_times(rk, list, static_cast<int>(timeout_ms));
      for (int i = 0; i < list->cnt && error.empty(); ++i) {
        const auto& elem = list->elems[i];
        if (err || elem.err) {
          error =
              fmt::format("watermarks of {}[{}]: {}", topic, elem.partition, rd_kafka_err2str(err ? err : elem.err));
        } else {
          auto& mark = out[static_cast<std::size_t>(elem.partition)];
          (end == RD_KAFKA_OFFSET_END ? mark.second : mark.first) = elem.offset;
        }
      }
      rd_kafka_topic_partition_list_destroy(list);
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

namespace {

// One admin request: `send` queues it on the queue given, `failed` reads the first error of its
// result event (empty if none). Returns the request's error, empty if none; waits 30 s at most.
std::string admin_request(rd_kafka_t* rk, const char* name, const std::function<void(rd_kafka_queue_t*)>& send,
                          const std::function<std::string(rd_kafka_event_t*)>& failed) {
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  send(queue);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue, 30'000);
  std::string error;
  if (!event) {
    error = fmt::format("no answer to {} within 30 s", name);
  } else if (rd_kafka_event_error(event)) {
    error = rd_kafka_event_error_string(event);
  } else {
    error = failed(event);
  }
  if (event) {
    rd_kafka_event_destroy(event);
  }
  rd_kafka_queue_destroy(queue);
  return error;
}

} // namespace

void create_topic(const std::string& bootstrap, const std::string& topic, int partitions,
                  const std::vector<std::pair<std::string, std::string>>& configs) {
  rd_kafka_t* rk = make(RD_KAFKA_PRODUCER, bootstrap, {});
  char errstr[512];
  rd_kafka_NewTopic_t* new_topic = rd_kafka_NewTopic_new(topic.c_str(), partitions, 1, errstr, sizeof errstr);
  for (const auto& [name, value] : configs) {
    rd_kafka_NewTopic_set_config(new_topic, name.c_str(), value.c_str());
  }
  std::string error = admin_request(
      rk, "CreateTopics", [&](rd_kafka_queue_t* queue) { rd_kafka_CreateTopics(rk, &new_topic, 1, nullptr, queue); },
      [](rd_kafka_event_t* event) {
        size_t count = 0;
        const rd_kafka_topic_result_t** results =
            rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(event), &count);
        for (size_t i = 0; i < count; ++i) {
          if (rd_kafka_topic_result_error(results[i])) {
            return std::string(rd_kafka_topic_result_error_string(results[i]));
          }
        }
        return std::string();
      });
  rd_kafka_NewTopic_destroy(new_topic);
  rd_kafka_destroy(rk);
  if (!error.empty()) {
    throw std::runtime_error(fmt::format("cannot create topic {}: {}", topic, error));
  }
}

void add_topic_acl(const std::string& bootstrap, const std::string& topic, const std::string& principal,
                   const std::string& operation, bool allow) {
  static const std::map<std::string, rd_kafka_AclOperation_t> operations{
      {"DESCRIBE", RD_KAFKA_ACL_OPERATION_DESCRIBE},
      {"DESCRIBE_CONFIGS", RD_KAFKA_ACL_OPERATION_DESCRIBE_CONFIGS},
      {"READ", RD_KAFKA_ACL_OPERATION_READ},
      {"WRITE", RD_KAFKA_ACL_OPERATION_WRITE}};
  auto op = operations.find(operation);
  if (op == operations.end()) {
    throw std::runtime_error("add_topic_acl: DESCRIBE, DESCRIBE_CONFIGS, READ or WRITE, not " + operation);
  }
  rd_kafka_t* rk = make(RD_KAFKA_PRODUCER, bootstrap, {});
  char errstr[512] = "";
  rd_kafka_AclBinding_t* binding = rd_kafka_AclBinding_new(
      RD_KAFKA_RESOURCE_TOPIC, topic.c_str(), RD_KAFKA_RESOURCE_PATTERN_LITERAL, principal.c_str(), "*", op->second,
      allow ? RD_KAFKA_ACL_PERMISSION_TYPE_ALLOW : RD_KAFKA_ACL_PERMISSION_TYPE_DENY, errstr, sizeof errstr);
  std::string error = binding ? "" : errstr;
  if (binding) {
    error = admin_request(
        rk, "CreateAcls", [&](rd_kafka_queue_t* queue) { rd_kafka_CreateAcls(rk, &binding, 1, nullptr, queue); },
        [](rd_kafka_event_t* event) {
          size_t count = 0;
          const rd_kafka_acl_result_t** results =
              rd_kafka_CreateAcls_result_acls(rd_kafka_event_CreateAcls_result(event), &count);
          for (size_t i = 0; i < count; ++i) {
            if (const rd_kafka_error_t* e = rd_kafka_acl_result_error(results[i])) {
              return std::string(rd_kafka_error_string(e));
            }
          }
          return std::string();
        });
    rd_kafka_AclBinding_destroy(binding);
  }
  rd_kafka_destroy(rk);
  if (!error.empty()) {
    throw std::runtime_error(
        fmt::format("cannot add the ACL {} {} on topic {}: {}", operation, principal, topic, error));
  }
}

bool answers_metadata(const std::string& bootstrap, std::int64_t timeout_ms) {
  rd_kafka_t* rk = make(RD_KAFKA_PRODUCER, bootstrap, {{"log_level", "0"}});
  const rd_kafka_metadata_t* metadata = nullptr;
  bool ok = rd_kafka_metadata(rk, 0, nullptr, &metadata, static_cast<int>(timeout_ms)) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            metadata->broker_cnt > 0;
  if (metadata) {
    rd_kafka_metadata_destroy(metadata);
  }
  rd_kafka_destroy(rk);
  return ok;
}

struct GroupMember::State {
  rd_kafka_t* rk = nullptr;
  std::atomic<bool> stop{false};
  std::atomic<int> assignments{0};
  std::thread poller;
  static void rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* partitions,
                        void* opaque) {
    auto* self = static_cast<State*>(opaque);
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      ++self->assignments;
      rd_kafka_assign(rk, partitions);
    } else {
      rd_kafka_assign(rk, nullptr);
    }
  }
};

GroupMember::GroupMember(const std::string& bootstrap, const std::string& group, const std::string& topic,
                         std::int64_t count)
    : m_state(std::make_unique<State>()) {
  char errstr[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{{"bootstrap.servers", bootstrap},
                                                                                    {"group.id", group},
                                                                                    {"enable.auto.commit", "false"},
                                                                                    {"auto.offset.reset", "earliest"},
                                                                                    {"session.timeout.ms", "45000"},
                                                                                    {"log_level", "3"}}) {
    rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr);
  }
  rd_kafka_conf_set_rebalance_cb(conf, &State::rebalance);
  rd_kafka_conf_set_opaque(conf, m_state.get());
  m_state->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (!m_state->rk) {
    throw std::runtime_error(fmt::format("cannot create a consumer: {}", errstr));
  }
  rd_kafka_poll_set_consumer(m_state->rk);
  rd_kafka_topic_partition_list_t* topics = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(topics, topic.c_str(), RD_KAFKA_PARTITION_UA);
  rd_kafka_subscribe(m_state->rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  std::int64_t consumed = 0;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (consumed < count && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* message = rd_kafka_consumer_poll(m_state->rk, 200);
    if (message) {
      consumed += message->err ? 0 : 1;
      rd_kafka_message_destroy(message);
    }
  }
  if (consumed < count) {
    throw std::runtime_error(fmt::format("consumed {} of {} records within 60 s", consumed, count));
  }
  if (rd_kafka_resp_err_t err = rd_kafka_commit(m_state->rk, nullptr, 0)) {
    throw std::runtime_error(fmt::format("commit: {}", rd_kafka_err2str(err)));
  }
  m_state->poller = std::thread([state = m_state.get()] {
    while (!state->stop) {
      rd_kafka_message_t* message = rd_kafka_consumer_poll(state->rk, 100);
      if (message) {
        rd_kafka_message_destroy(message);
      }
    }
  });
}

int GroupMember::rebalances() const { return m_state->assignments - 1; }

void GroupMember::leave() {
  if (!m_state->rk) {
    return;
  }
  m_state->stop = true;
  m_state->poller.join();
  rd_kafka_consumer_close(m_state->rk);
  rd_kafka_destroy(m_state->rk);
  m_state->rk = nullptr;
}

GroupMember::~GroupMember() { leave(); }

void produce_transaction(const std::string& bootstrap, const std::string& transactional_id,
                         const std::vector<OutgoingRecord>& records, bool commit) {
  rd_kafka_t* rk = make(RD_KAFKA_PRODUCER, bootstrap, {{"transactional.id", transactional_id}});
  auto check = [&](rd_kafka_error_t* error, const char* step) {
    if (error) {
      std::string message = fmt::format("{}: {}", step, rd_kafka_error_string(error));
      rd_kafka_error_destroy(error);
      rd_kafka_destroy(rk);
      throw std::runtime_error(message);
    }
  };
  check(rd_kafka_init_transactions(rk, 30'000), "init_transactions");
  check(rd_kafka_begin_transaction(rk), "begin_transaction");
  for (const auto& record : records) {
    if (rd_kafka_resp_err_t err = produce_one(rk, record)) {
      rd_kafka_destroy(rk);
      throw std::runtime_error(fmt::format("produce: {}", rd_kafka_err2str(err)));
    }
  }
  // Abort purges what is still queued: send everything first so that an aborted transaction's
  // records are in the log, as when a producer fails after sending.
  rd_kafka_flush(rk, 30'000);
  if (commit) {
    check(rd_kafka_commit_transaction(rk, 30'000), "commit_transaction");
  } else {
    check(rd_kafka_abort_transaction(rk, 30'000), "abort_transaction");
  }
  rd_kafka_destroy(rk);
}

} // namespace dedupctl::testing
