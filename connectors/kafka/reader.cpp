#include "connectors/kafka/client.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

// The range reader: assign(), a queue per partition, the canonical order.
namespace dedupctl::connectors::kafka {

namespace {

// Messages taken from the consumer queue at once.
constexpr std::size_t k_batch_messages = 4096;

} // namespace

namespace {

// The messages a batch's events point into, destroyed with the batch.
struct MessageSet {
  std::vector<rd_kafka_message_t*> messages;
  MessageSet() = default;
  MessageSet(const MessageSet&) = delete;
  MessageSet& operator=(const MessageSet&) = delete;
  ~MessageSet() {
    for (auto* message : messages) {
      rd_kafka_message_destroy(message);
    }
  }
};

// Reads the plans and delivers their events in the canonical order (core::canonical_seq):
// librdkafka hands over whatever partition a fetch answered first, so each partition's messages
// wait in its own queue until their round comes. When more than KafkaSettings::reorder_bytes wait,
// the partitions that already hold their next round pause (librdkafka drops what it had queued of
// them and fetches it again on resume, from the last message handed over), so the one being waited
// for gets the fetches; each resumes a round before the order needs what it has to fetch.
class KafkaReader final : public core::EventSource {
public:
  KafkaReader(const KafkaSettings& settings, std::vector<core::PartitionPlan> plans)
      : m_settings(settings), m_raw(k_batch_messages) {
    // A round needs a block of every partition, and a fetch brings up to max.partition.fetch.bytes
    // of each, which the reader may have to hold until the partitions before them arrive: with many
    // partitions each fetch brings less, so that one fetch of all stays near 8 MiB. A real broker
    // answers a fetch with all of it at once (the mock cluster trickles): at 32 MiB a fetch of 1M
    // events in 64 partitions held 300+ MB and the scan waited on its own queue (2.0-3.3 s, 310 MB);
    // at 8 MiB the same scan took 0.9 s in 190 MB and the audit 2.0-3.2 s in 205-220 MB instead of
    // 2.5-4.0 s in 343-361 MB (256 partitions alike; the mock cluster unchanged, both within its
    // noise). Measured 2026-11-26, docs/DECISIONS.md.
    std::size_t partitions = std::max<std::size_t>(1, plans.size());
    std::size_t fetch_bytes = std::clamp<std::size_t>((8U << 20) / partitions, 32U << 10, 1U << 20);
    m_reorder_cap = m_settings.reorder_bytes > 0 ? m_settings.reorder_bytes
                                                 : std::max<std::size_t>(64U << 20, 2 * partitions * fetch_bytes);
    // The prefetch scales with the partitions read (a shard reads a share of them), 512 KiB each
    // between 8 and 28 MiB: tests/bench/shards/run, a shard of 16 partitions 118 -> 77 MB at the
    // same speed.
    std::size_t queue_kbytes = std::clamp<std::size_t>(partitions * 512, 8192, 28672);
    m_rk = make_handle(RD_KAFKA_CONSUMER, m_settings,
                       {{"group.id", fmt::format("dedupctl-reader-{}", ::getpid())},
                        {"enable.auto.commit", "false"},
                        {"enable.auto.offset.store", "false"},
                        {"enable.partition.eof", "true"},
                        {"auto.offset.reset", "error"},
                        {"allow.auto.create.topics", "false"},
                        // Every partition's fetch queue is forwarded to the one consumer queue, and
                        // librdkafka compares the thresholds with that shared queue. The message count
                        // is therefore taken out of play and the bytes bound the prefetch: 28 MiB keeps
                        // a 1M-event scan within 160 MB (tests/bench/scan/run).
                        {"queued.min.messages", "10000000"},
                        {"queued.max.messages.kbytes", std::to_string(queue_kbytes)},
                        // Once the queue is over them, a partition's next fetch waits this long
                        // (librdkafka 2.2 and later; 1 s by default). A consumer slower than the
                        // broker (an audit waiting on its lookups, a replay on its claims) meets that
                        // again and again, and even a small scan met it in one run of three (1.13 s
                        // instead of 0.13 s, on the mock cluster): 10 ms. It replaces the 250 ms
                        // metadata refresh that woke librdkafka 2.0.2's idle broker thread.
                        {"fetch.queue.backoff.ms", "10"},
                        {"max.partition.fetch.bytes", std::to_string(fetch_bytes)}});
    std::stable_sort(plans.begin(), plans.end(),
                     [](const core::PartitionPlan& a, const core::PartitionPlan& b) { return a.rank < b.rank; });
    PartitionList assignment(rd_kafka_topic_partition_list_new(static_cast<int>(plans.size())));
    m_parts.reserve(plans.size());
    for (auto& plan : plans) {
      std::size_t index = m_parts.size();
      m_parts.emplace_back(plan);
      m_index[plan.topic].resize(std::max<std::size_t>(m_index[plan.topic].size(), plan.partition + 1), SIZE_MAX);
      m_index[plan.topic][plan.partition] = index;
      if (!m_parts.back().cursor.done()) {
        rd_kafka_topic_partition_list_add(assignment.get(), plan.topic.c_str(), plan.partition)->offset = plan.start;
        ++m_remaining;
      }
    }
    m_live = m_parts.size();
    if (m_remaining > 0) {
      rd_kafka_resp_err_t err = rd_kafka_assign(m_rk.get(), assignment.get());
      if (err) {
        unreachable(m_settings, "assign", err);
      }
    }
    m_queue.reset(rd_kafka_queue_get_consumer(m_rk.get()));
    m_last_progress = std::chrono::steady_clock::now();
  }

  ~KafkaReader() override {
    for (auto& part : m_parts) {
      for (auto* message : part.pending) {
        rd_kafka_message_destroy(message);
      }
    }
    // The queue goes before the handle; the handle goes without a consumer close (see
    // destroy_handle).
    m_queue.reset();
  }

  bool next_batch(core::EventBatch& batch) override {
    batch.clear();
    auto set = std::make_shared<MessageSet>();
    // Sized once: grown a message at a time it took a dozen allocations a batch, each a large one
    // that made glibc merge every small block freed since (tests/bench/replay/run, perf).
    set->messages.reserve(k_batch_messages);
    m_header_ranges.clear();
    while (true) {
      emit(batch, *set);
      if (batch.events.size() >= k_batch_messages || (!batch.events.empty()) || m_live == 0) {
        break;
      }
      if (m_settings.stop && m_settings.stop->load()) {
        throw InterruptedError("interrupted");
      }
      pull();
    }
    for (std::size_t i = 0; i < batch.events.size(); ++i) {
      batch.events[i].headers =
          std::span<const core::Header>(batch.headers.data() + m_header_ranges[i].first, m_header_ranges[i].second);
    }
    if (batch.events.empty()) {
      return false;
    }
    batch.owner = std::move(set);
    return true;
  }

  // What was delivered: events that arrived but wait for their round are not counted (an
  // interrupted run reports what it analysed).
  std::vector<core::PartitionPosition> positions() const override {
    std::vector<core::PartitionPosition> out;
    for (const auto& part : m_parts) {
      core::PartitionPosition position = part.delivered;
      position.topic = part.cursor.plan().topic;
      position.partition = part.cursor.plan().partition;
      if (part.exhausted) {
        position.stopped_at = part.cursor.position().stopped_at;
      }
      out.push_back(std::move(position));
    }
    return out;
  }

private:
  struct Part {
    explicit Part(core::PartitionPlan plan) : cursor(std::move(plan)) {}
    core::PartitionCursor cursor;
    std::deque<rd_kafka_message_t*> pending; // admitted, not yet delivered, in offset order
    core::PartitionPosition delivered;       // of the events delivered
    bool exhausted = false;                  // done and delivered
    bool paused = false;
  };

  std::int64_t block_end(const Part& part) const {
    return part.cursor.plan().order_base + (m_round + 1) * core::order_block(part.cursor.plan().ranks);
  }

  // Moves to the next partition in the round, and past rounds in which no partition has events.
  void advance() {
    if (++m_turn < m_parts.size()) {
      return;
    }
    m_turn = 0;
    if (m_round_delivered > 0) {
      ++m_round;
    } else {
      // Every partition still read waits with an event of a later round (offset gaps): skip to it.
      std::int64_t next = INT64_MAX;
      for (const auto& part : m_parts) {
        if (!part.exhausted && !part.pending.empty()) {
          const auto& plan = part.cursor.plan();
          next = std::min(next, (part.pending.front()->offset - plan.order_base) / core::order_block(plan.ranks));
        }
      }
      m_round = next == INT64_MAX ? m_round + 1 : std::max(next, m_round + 1);
    }
    m_round_delivered = 0;
  }

  // Delivers events in the canonical order until the batch is full, every partition is delivered,
  // or the partition whose turn it is has nothing yet.
  void emit(core::EventBatch& batch, MessageSet& set) {
    while (batch.events.size() < k_batch_messages && m_live > 0) {
      Part& part = m_parts[m_turn];
      if (part.exhausted) {
        advance();
        continue;
      }
      if (part.pending.empty()) {
        if (part.cursor.done()) {
          part.exhausted = true;
          --m_live;
          advance();
          continue;
        }
        bool was_paused = part.paused;
        if (was_paused) {
          toggle_pause(part, false);
        }
        if (part.delivered.last_offset && *part.delivered.last_offset >= block_end(part) - 1) {
          advance(); // its block of this round is delivered: the next partition need not wait for its fetch
          continue;
        }
        if (was_paused && m_settings.reader_counters) {
          ++m_settings.reader_counters->waits_on_paused;
        }
        return;
      }
      rd_kafka_message_t* message = part.pending.front();
      if (message->offset >= block_end(part)) {
        resume_if_short(part);
        advance();
        continue;
      }
      part.pending.pop_front();
      m_pending_bytes -= message->len;
      set.messages.push_back(message);
      convert(message, part, batch);
      ++m_round_delivered;
    }
  }

  // Takes what the consumer queue holds into the partitions' queues.
  void pull() {
    ssize_t n = rd_kafka_consume_batch_queue(m_queue.get(), k_poll_interval_ms, m_raw.data(), m_raw.size());
    if (n < 0) {
      unreachable(m_settings, "consume", rd_kafka_last_error());
    }
    if (n == 0) {
      throw_if_refused(m_rk.get()); // a token or a password that stopped working mid-run
      check_stall();
      return;
    }
    for (ssize_t i = 0; i < n; ++i) {
      try {
        arrive(m_raw[static_cast<std::size_t>(i)]);
      } catch (...) {
        for (ssize_t j = i + 1; j < n; ++j) {
          rd_kafka_message_destroy(m_raw[static_cast<std::size_t>(j)]);
        }
        throw;
      }
    }
    m_last_progress = std::chrono::steady_clock::now();
    if (m_pending_bytes > m_reorder_cap) {
      for (std::size_t i = 0; i < m_parts.size(); ++i) {
        Part& part = m_parts[i];
        if (i != m_turn && !part.paused && !part.exhausted && !part.cursor.done() && holds_next_round(part)) {
          toggle_pause(part, true);
        }
      }
    }
  }

  // Whether the partition already holds its events of the round after this one. Only those pause:
  // a partition paused with less would be the one the order waits for a round later, and a resumed
  // partition waits for the broker thread to fetch it again (in librdkafka 2.0.2 up to a metadata
  // refresh; since then a fetch backoff): pausing every partition that held anything made each one wait in turn, round
  // after round, once a single slow fetch had filled the cap (a 1M-event audit of 256 partitions took 128 s instead of
  // 4). So the reader holds at most about two rounds and a fetch of each partition.
  bool holds_next_round(const Part& part) const {
    return !part.pending.empty() &&
           part.pending.back()->offset >= block_end(part) + core::order_block(part.cursor.plan().ranks) - 1;
  }

  // Resumes a paused partition once it no longer holds the next round, a round before the order
  // reaches what it has to fetch.
  void resume_if_short(Part& part) {
    if (part.paused && !holds_next_round(part)) {
      toggle_pause(part, false);
    }
  }

  void toggle_pause(Part& part, bool pause) {
    PartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), part.cursor.plan().topic.c_str(), part.cursor.plan().partition);
    rd_kafka_resp_err_t err =
        pause ? rd_kafka_pause_partitions(m_rk.get(), list.get()) : rd_kafka_resume_partitions(m_rk.get(), list.get());
    if (err) {
      unreachable(m_settings, pause ? "pause" : "resume", err);
    }
    part.paused = pause;
    if (m_settings.reader_counters) {
      ++(pause ? m_settings.reader_counters->pauses : m_settings.reader_counters->resumes);
    }
    if (m_settings.verbosity >= 2) {
      std::fprintf(stderr, "dedupctl: kafka: %s %s[%d] (%zu bytes read ahead)\n", pause ? "paused" : "resumed",
                   part.cursor.plan().topic.c_str(), part.cursor.plan().partition, m_pending_bytes);
    }
  }

  Part* part_for(const char* topic, std::int32_t partition) {
    auto it = m_index.find(topic);
    if (it == m_index.end() || partition < 0 || static_cast<std::size_t>(partition) >= it->second.size() ||
        it->second[partition] == SIZE_MAX) {
      return nullptr;
    }
    return &m_parts[it->second[partition]];
  }

  void finish_partition(core::PartitionCursor& cursor, bool was_done) {
    if (!was_done && cursor.done()) {
      --m_remaining;
    }
  }

  // Admits a message into its partition's queue, or destroys it.
  void arrive(rd_kafka_message_t* message) {
    std::unique_ptr<rd_kafka_message_t, void (*)(rd_kafka_message_t*)> owned(message, rd_kafka_message_destroy);
    const char* topic = message->rkt ? rd_kafka_topic_name(message->rkt) : nullptr;
    Part* part = topic ? part_for(topic, message->partition) : nullptr;
    if (message->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      if (part) {
        bool was_done = part->cursor.done();
        part->cursor.mark_done();
        finish_partition(part->cursor, was_done);
      }
      return;
    }
    if (message->err) {
      const char* name = topic ? topic : "?";
      if (message->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
          message->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
        throw UnreachableError(fmt::format(
            "{}[{}]: the range start is no longer in the log (retention deleted it while reading: {}); run again", name,
            message->partition, rd_kafka_message_errstr(message)));
      }
      if (message->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
        // Every fetch of it will be refused: waiting for --timeout would only end with advice to raise it.
        throw UnreachableError(fmt::format("the principal may not READ topic {} ({}); grant it READ on {}", name,
                                           rd_kafka_err2str(message->err), name));
      }
      if (m_settings.verbosity >= 1) {
        std::fprintf(stderr, "dedupctl: kafka: %s\n", rd_kafka_message_errstr(message));
      }
      return;
    }
    if (!part) {
      return;
    }
    rd_kafka_timestamp_type_t type;
    std::int64_t timestamp = rd_kafka_message_timestamp(message, &type);
    bool was_done = part->cursor.done();
    bool admitted = part->cursor.admit(message->offset, timestamp);
    finish_partition(part->cursor, was_done);
    if (admitted) {
      part->pending.push_back(owned.release());
      m_pending_bytes += message->len;
    }
  }

  void convert(rd_kafka_message_t* message, Part& part, core::EventBatch& batch) {
    rd_kafka_timestamp_type_t type;
    core::Event event;
    event.topic = part.cursor.plan().topic;
    event.partition = message->partition;
    event.offset = message->offset;
    event.timestamp_ms = rd_kafka_message_timestamp(message, &type);
    event.seq = core::canonical_seq(part.cursor.plan(), message->offset);
    event.native_kind = &k_message_kind;
    event.native = message;
    auto& delivered = part.delivered;
    ++delivered.events;
    if (!delivered.first_offset) {
      delivered.first_offset = event.offset;
      delivered.first_timestamp = event.timestamp_ms;
    }
    delivered.last_offset = event.offset;
    delivered.last_timestamp = event.timestamp_ms;
    if (message->key) {
      event.key = std::string_view(static_cast<const char*>(message->key), message->key_len);
    }
    if (message->payload) {
      event.payload = std::string_view(static_cast<const char*>(message->payload), message->len);
    }
    auto first_header = static_cast<std::uint32_t>(batch.headers.size());
    rd_kafka_headers_t* headers = nullptr;
    if (rd_kafka_message_headers(message, &headers) == RD_KAFKA_RESP_ERR_NO_ERROR && headers) {
      const char* name = nullptr;
      const void* value = nullptr;
      std::size_t size = 0;
      for (std::size_t i = 0; rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
           ++i) {
        core::Header header{name, std::nullopt};
        if (value) {
          header.value = std::string_view(static_cast<const char*>(value), size);
        }
        batch.headers.push_back(header);
      }
    }
    m_header_ranges.emplace_back(first_header, static_cast<std::uint32_t>(batch.headers.size()) - first_header);
    batch.events.push_back(event);
  }

  void check_stall() {
    auto idle = std::chrono::steady_clock::now() - m_last_progress;
    if (idle < std::chrono::milliseconds(m_settings.timeout_ms)) {
      return;
    }
    std::string pending;
    int shown = 0;
    for (const auto& part : m_parts) {
      const auto& cursor = part.cursor;
      if (!cursor.done() && shown++ < 3) {
        auto at = cursor.position().last_offset ? *cursor.position().last_offset + 1 : cursor.plan().start;
        pending += fmt::format("{}{}[{}] at offset {}", pending.empty() ? "" : ", ", cursor.plan().topic,
                               cursor.plan().partition, at);
      }
    }
    throw UnreachableError(fmt::format("no data from Kafka at {} for {} ms while {} partitions were unfinished ({}); "
                                       "check that the brokers are up, or raise --timeout",
                                       m_settings.bootstrap, m_settings.timeout_ms, m_remaining, pending));
  }

  KafkaSettings m_settings;
  KafkaHandle m_rk;
  QueueHandle m_queue;
  std::vector<Part> m_parts; // by rank
  std::map<std::string, std::vector<std::size_t>, std::less<>> m_index;
  std::size_t m_remaining = 0; // partitions still arriving
  std::size_t m_live = 0;      // partitions not yet delivered to their end
  std::size_t m_turn = 0;
  std::int64_t m_round = 0;
  std::int64_t m_round_delivered = 0;
  std::size_t m_pending_bytes = 0;
  std::size_t m_reorder_cap = 0;
  std::vector<rd_kafka_message_t*> m_raw;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> m_header_ranges;
  std::chrono::steady_clock::time_point m_last_progress;
};

} // namespace

std::unique_ptr<core::EventSource> open_reader(const KafkaSettings& settings, std::vector<core::PartitionPlan> plans) {
  return std::make_unique<KafkaReader>(settings, std::move(plans));
}

} // namespace dedupctl::connectors::kafka
