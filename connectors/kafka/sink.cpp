#include "connectors/kafka/client.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <thread>

// The replay sink: an idempotent producer with a delivery report per record.
namespace dedupctl::connectors::kafka {

namespace {

// Errors that refuse every record of the run, not only one: the principal may not write to the
// topic (or, on brokers before 2.8, produce idempotently), it could not authenticate, or the
// idempotent producer failed for good. Why, with what to do; nullopt for an error of one record.
std::optional<std::string> refusal_of(rd_kafka_t* rk, rd_kafka_resp_err_t err, const std::string& topic) {
  std::string what = rd_kafka_err2str(err);
  switch (err) {
  case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    return fmt::format("the sink topic {} refused this run's records ({}): the principal needs WRITE on it", topic,
                       what);
  case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
    return fmt::format("the cluster refused this run's records for {} ({}): an idempotent producer needs "
                       "IDEMPOTENT_WRITE on the cluster before Kafka 2.8, WRITE on the topic since",
                       topic, what);
  case RD_KAFKA_RESP_ERR__AUTHENTICATION:
  case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
    return fmt::format("the sink's producer could not authenticate ({}); check the -X sasl.* and ssl.* properties",
                       what);
  case RD_KAFKA_RESP_ERR__FATAL: {
    char reason[512] = "";
    rd_kafka_resp_err_t cause = rd_kafka_fatal_error(rk, reason, sizeof reason);
    return fmt::format("the sink's producer for {} failed for good ({}: {})", topic, rd_kafka_err2str(cause), reason);
  }
  default:
    return std::nullopt;
  }
}

// The replay sink's producer: idempotent, acks=all, a delivery report per record kept for the sink,
// and per partition the offset after the last delivered record.
class KafkaProducer final {
public:
  explicit KafkaProducer(const KafkaSettings& settings) : m_settings(settings) {
    std::vector<std::pair<std::string, std::string>> defaults{
        {"acks", "all"},
        {"enable.idempotence", "true"},
        // A replay produces in bursts of --batch events over every partition: lingering 100 ms
        // sends batches 3.7 × the size of 5 ms's, and the broker validates and appends a batch at a
        // time (docs/DECISIONS.md). poll_reports never lets the run wait for a lingering record.
        // librdkafka wants it under message.timeout.ms: a short --timeout shortens it.
        {"linger.ms", std::to_string(std::min<std::int64_t>(100, settings.timeout_ms / 2))},
        {"batch.size", "1000000"},
        {"queue.buffering.max.messages", "1000000"},
        {"message.timeout.ms", std::to_string(settings.timeout_ms)}};
    m_rk = make_handle(RD_KAFKA_PRODUCER, m_settings, defaults, &KafkaProducer::delivered);
  }

  ~KafkaProducer() {
    if (m_rk) {
      rd_kafka_flush(m_rk.get(), timeout_of(m_settings));
    }
  }

  // An event as it is (key, payload, headers, CreateTime) to `topic`, placed by the partitioner;
  // the bytes are copied once, by librdkafka. A message a KafkaReader read hands its parsed headers
  // over as they are (detached: the event's header views end here): building them again and
  // freeing both copies was a fifth of a replay's main thread (tests/bench/replay/run).
  void send_event(const std::string& topic, const core::Event& event, std::uint64_t tag) {
    rd_kafka_headers_t* headers = nullptr;
    if (!event.headers.empty() && event.native_kind == &k_message_kind &&
        rd_kafka_message_detach_headers(static_cast<rd_kafka_message_t*>(event.native), &headers) !=
            RD_KAFKA_RESP_ERR_NO_ERROR) {
      headers = nullptr;
    }
    if (!headers && !event.headers.empty()) {
      headers = rd_kafka_headers_new(event.headers.size());
      for (const auto& h : event.headers) {
        rd_kafka_header_add(headers, h.name.data(), static_cast<ssize_t>(h.name.size()),
                            h.value ? h.value->data() : nullptr, h.value ? static_cast<ssize_t>(h.value->size()) : 0);
      }
    }
    produce(topic, RD_KAFKA_PARTITION_UA, event.key, event.payload, event.timestamp_ms, headers, tag);
  }

  // Serves delivery reports for up to timeout_ms and hands over what was reported (all records,
  // failed or not) since the last call.
  void poll_reports(std::vector<core::Delivery>& out, int timeout_ms) {
    if (timeout_ms > 0 && m_reports.empty() && rd_kafka_outq_len(m_rk.get()) == 0) {
      // Asked to wait for reports of records librdkafka no longer holds: they were lost (a bug).
      throw std::logic_error("waiting for delivery reports that can no longer come");
    }
    if (m_settings.stop && m_settings.stop->load() && timeout_ms > 0) {
      timeout_ms = std::min(timeout_ms, k_poll_interval_ms); // still deliver what is in flight
    }
    if (timeout_ms > 0 && m_reports.empty()) {
      // The run waits for deliveries: what lingers goes out now. A flush makes librdkafka send every
      // queued record at once, but only while it lasts (1 ms here, a kick rather than a drain); a
      // broker thread that missed it is kicked again at the next wait.
      rd_kafka_flush(m_rk.get(), 1);
    }
    rd_kafka_poll(m_rk.get(), m_reports.empty() ? timeout_ms : 0);
    for (auto& report : m_reports) {
      out.push_back(std::move(report));
    }
    m_reports.clear();
    if (rd_kafka_outq_len(m_rk.get()) == 0) {
      m_tags.clear(); // every report is in: no message points at them any more
    }
  }

  rd_kafka_t* handle() const { return m_rk.get(); }
  // Per partition, the offset after the last record delivered.
  const std::map<std::int32_t, std::int64_t>& next_offsets() const { return m_next_offsets; }

private:
  void produce(const std::string& topic, std::int32_t partition, std::optional<std::string_view> key_view,
               std::optional<std::string_view> value_view, std::int64_t timestamp_ms, rd_kafka_headers_t* headers,
               std::uint64_t tag) {
    m_tags.push_back(Tagged{this, tag});
    // The V_ macros cast their arguments: compute them first.
    const void* key = key_view ? key_view->data() : nullptr;
    std::size_t key_size = key_view ? key_view->size() : 0;
    void* value = value_view ? const_cast<char*>(value_view->data()) : nullptr;
    std::size_t value_size = value_view ? value_view->size() : 0;
    while (true) {
      rd_kafka_resp_err_t err =
          rd_kafka_producev(m_rk.get(), RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key, key_size),
                            RD_KAFKA_V_VALUE(value, value_size), RD_KAFKA_V_TIMESTAMP(timestamp_ms),
                            RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(&m_tags.back()), RD_KAFKA_V_END);
      if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        rd_kafka_poll(m_rk.get(), k_poll_interval_ms);
        continue;
      }
      if (err) {
        m_tags.pop_back();
        if (headers) {
          rd_kafka_headers_destroy(headers);
        }
        if (auto refusal = refusal_of(m_rk.get(), err, topic)) {
          throw UnreachableError(*refusal);
        }
        // This record alone (larger than message.max.bytes): it fails as if the broker had refused
        // it, and the run goes on.
        std::string error = rd_kafka_err2str(err);
        if (err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE) {
          error += " for the producer (-X message.max.bytes raises its limit)";
        }
        m_reports.push_back(core::Delivery{tag, false, false, error});
        return;
      }
      break;
    }
    // Delivery reports are served every 64 records (and by every poll_reports): one poll a record
    // took the queue's lock and the clock a million times a run.
    if (++m_since_poll == 64) {
      m_since_poll = 0;
      rd_kafka_poll(m_rk.get(), 0);
    }
  }

  // Each record carries its producer and tag as the message opaque (a deque keeps them in place).
  struct Tagged {
    KafkaProducer* producer;
    std::uint64_t tag;
  };

  static void delivered(rd_kafka_t*, const rd_kafka_message_t* message, void*) {
    auto* tagged = static_cast<Tagged*>(message->_private);
    if (!tagged) {
      return;
    }
    KafkaProducer* self = tagged->producer;
    std::optional<std::string> refusal;
    if (message->err) {
      refusal = refusal_of(self->m_rk.get(), message->err, rd_kafka_topic_name(message->rkt));
      // A record's own error that made the idempotent producer give up (a sequence out of order):
      // every record after it is refused too, even when no produce comes after to say so.
      if (!refusal && rd_kafka_fatal_error(self->m_rk.get(), nullptr, 0)) {
        refusal = refusal_of(self->m_rk.get(), RD_KAFKA_RESP_ERR__FATAL, rd_kafka_topic_name(message->rkt));
      }
    }
    self->m_reports.push_back(core::Delivery{tagged->tag, !message->err, refusal.has_value(),
                                             refusal        ? *refusal
                                             : message->err ? rd_kafka_err2str(message->err)
                                                            : std::string()});
    if (!message->err) {
      auto& next = self->m_next_offsets[message->partition];
      next = std::max(next, message->offset + 1);
    }
  }

  std::deque<Tagged> m_tags;
  unsigned m_since_poll = 0; // records produced since the last poll
  std::map<std::int32_t, std::int64_t> m_next_offsets;
  std::vector<core::Delivery> m_reports;

  KafkaSettings m_settings;
  KafkaHandle m_rk;
};

class KafkaSink final : public core::ReplaySink {
public:
  KafkaSink(const KafkaSettings& settings, std::string topic)
      : m_settings(settings), m_topic(std::move(topic)), m_producer(m_settings) {
    // The sink's end now (this also fails early on a topic that does not exist); later, what this
    // run's deliveries reported: no broker round trip per batch.
    auto marks = watermarks_of(m_producer.handle(), m_settings, m_topic);
    for (std::size_t p = 0; p < marks.size(); ++p) {
      m_start.emplace(static_cast<std::int32_t>(p), marks[p].second);
    }
  }

  std::string describe() const override { return "kafka:" + m_topic; }

  void publish(const core::Event& event, std::uint64_t tag) override { m_producer.send_event(m_topic, event, tag); }

  void poll(std::vector<core::Delivery>& out, int timeout_ms) override { m_producer.poll_reports(out, timeout_ms); }

  std::string position() override {
    std::string out;
    for (auto [partition, next] : m_start) {
      auto delivered = m_producer.next_offsets().find(partition);
      if (delivered != m_producer.next_offsets().end()) {
        next = std::max(next, delivered->second);
      }
      out += fmt::format("{}{}:{}", out.empty() ? "" : ",", partition, next);
    }
    return out;
  }

  std::unique_ptr<core::EventSource> read_after(const std::string& position) override {
    auto marks = settled_watermarks();
    std::vector<core::PartitionPlan> plans;
    std::size_t pos = 0;
    while (pos < position.size()) {
      auto comma = position.find(',', pos);
      std::string item = position.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      pos = comma == std::string::npos ? position.size() : comma + 1;
      auto colon = item.find(':');
      if (colon == std::string::npos) {
        throw UsageError(fmt::format("the checkpoint's sink position {} is not PARTITION:OFFSET,…", position));
      }
      auto partition = static_cast<std::size_t>(std::stoll(item.substr(0, colon)));
      std::int64_t from = std::stoll(item.substr(colon + 1));
      if (partition < marks.size() && from < marks[partition].second) {
        core::PartitionPlan plan;
        plan.topic = m_topic;
        plan.partition = static_cast<std::int32_t>(partition);
        plan.start = std::max(from, marks[partition].first);
        plan.end = marks[partition].second;
        plan.rank = static_cast<std::uint32_t>(partition);
        plan.ranks = static_cast<std::uint32_t>(marks.size());
        plan.order_base = plan.start;
        plans.push_back(plan);
      }
    }
    return open_reader(m_settings, std::move(plans));
  }

private:
  // A produce request the interrupted run had sent can reach the log after that run died (still in
  // a socket or the broker's queue when it was killed): on a loaded real broker four such records
  // landed after a rerun had read the sink back, and were published twice. So the sink is read back
  // once its end offsets have held still for k_quiet (at most k_settle: a sink other producers
  // write to never holds still). Exact would be fencing the dead producer (a transactional sink).
  std::vector<std::pair<std::int64_t, std::int64_t>> settled_watermarks() {
    constexpr auto k_quiet = std::chrono::milliseconds(500);
    constexpr auto k_settle = std::chrono::milliseconds(5000);
    constexpr auto k_poll = std::chrono::milliseconds(100);
    auto marks = watermarks_of(m_producer.handle(), m_settings, m_topic);
    auto started = std::chrono::steady_clock::now();
    auto quiet_since = started;
    while (std::chrono::steady_clock::now() - quiet_since < k_quiet &&
           std::chrono::steady_clock::now() - started < k_settle) {
      if (m_settings.stop && m_settings.stop->load()) {
        throw InterruptedError("interrupted");
      }
      std::this_thread::sleep_for(k_poll);
      auto again = watermarks_of(m_producer.handle(), m_settings, m_topic);
      if (again != marks) {
        marks = std::move(again);
        quiet_since = std::chrono::steady_clock::now();
      }
    }
    return marks;
  }

  KafkaSettings m_settings;
  std::string m_topic;
  KafkaProducer m_producer;
  std::map<std::int32_t, std::int64_t> m_start;
};

} // namespace

std::unique_ptr<core::ReplaySink> open_sink(const KafkaSettings& settings, const std::string& topic) {
  return std::make_unique<KafkaSink>(settings, topic);
}

} // namespace dedupctl::connectors::kafka
