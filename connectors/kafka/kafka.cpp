#include "connectors/kafka/kafka.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace dedupctl::connectors::kafka {

namespace {

// How long one consume call waits before the loop checks the stop flag and the stall timer.
constexpr int k_poll_interval_ms = 100;
// Messages taken from the consumer queue at once.
constexpr std::size_t k_batch_messages = 4096;
// core::Event::native_kind of the events a KafkaReader delivers: their `native` is the message.
constexpr char k_message_kind = 'K';

struct KafkaDeleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
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

void log_callback(const rd_kafka_t* rk, int level, const char* facility, const char* text) {
  const auto* settings = static_cast<const KafkaSettings*>(rd_kafka_opaque(rk));
  // librdkafka logs every refused connection; an operator sees our one message instead, and the
  // library's own lines with -vv.
  if (settings && settings->verbosity >= 2) {
    std::fprintf(stderr, "dedupctl: librdkafka[%d] %s: %s\n", level, facility, text);
  }
}

// Creates a handle; `opaque` must outlive it. Throws UsageError for a bad property.
using DeliveryCallback = void (*)(rd_kafka_t*, const rd_kafka_message_t*, void*);

KafkaHandle make_handle(rd_kafka_type_t type, const KafkaSettings& settings,
                        const std::vector<std::pair<std::string, std::string>>& defaults,
                        DeliveryCallback on_delivery = nullptr) {
  if (settings.bootstrap.empty()) {
    throw UsageError("no Kafka brokers: give --bootstrap-server HOST:PORT (or DEDUPCTL_BOOTSTRAP_SERVER), "
                     "or read a kcat -J dump with --input");
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char errstr[512];
  auto set = [&](const std::string& name, const std::string& value, bool user) {
    if (rd_kafka_conf_set(conf, name.c_str(), value.c_str(), errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      throw UsageError(user ? fmt::format("invalid -X {}={}: {}", name, value, errstr)
                            : fmt::format("cannot set Kafka property {}: {}", name, errstr));
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

// Offsets per partition for a list of (topic, partition, value) via a librdkafka list call.
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

// Timestamp lookups for one SPEC over all partitions; -1 for every partition the broker could
// not answer (the mock answers -1 always), so the reader falls back to skipping by time.
std::map<std::pair<std::string, std::int32_t>, std::int64_t>
time_lookups(rd_kafka_t* rk, const KafkaSettings& settings,
             const std::vector<std::pair<std::string, std::int32_t>>& all, std::int64_t timestamp) {
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> out;
  PartitionList list = make_list(all, timestamp);
  rd_kafka_resp_err_t err = rd_kafka_offsets_for_times(rk, list.get(), timeout_of(settings));
  if (err && is_unreachable(err)) {
    unreachable(settings, "offsets for times", err);
  }
  for (const auto& key : all) {
    out[key] = err ? -1 : list_offset(list.get(), key.first, key.second).value_or(-1);
  }
  return out;
}

} // namespace

ResolvedRange resolve_range(const KafkaSettings& settings, const RangeRequest& request) {
  std::vector<std::pair<std::string, std::string>> defaults{{"enable.auto.commit", "false"},
                                                            {"allow.auto.create.topics", "false"}};
  defaults.emplace_back("group.id", request.group.value_or(fmt::format("dedupctl-resolve-{}", ::getpid())));
  KafkaHandle rk = make_handle(RD_KAFKA_CONSUMER, settings, defaults);

  ResolvedRange out;
  out.info.kind = "kafka";
  out.info.bootstrap = settings.bootstrap;
  out.info.group = request.group;
  std::vector<std::pair<std::string, std::int32_t>> all;
  for (const auto& topic : request.topics) {
    out.info.topics.push_back(topic.topic);
    auto existing = topic_partitions(rk.get(), settings, topic.topic);
    std::vector<std::int32_t> chosen = topic.partitions.empty() ? existing : topic.partitions;
    for (auto partition : chosen) {
      if (std::find(existing.begin(), existing.end(), partition) == existing.end()) {
        throw UsageError(fmt::format("topic '{}' has no partition {} (it has {}); check --topic", topic.topic,
                                     partition, existing.size()));
      }
      all.emplace_back(topic.topic, partition);
    }
  }

  std::map<std::pair<std::string, std::int32_t>, core::PartitionFacts> facts;
  for (const auto& key : all) {
    core::PartitionFacts f;
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(rk.get(), key.first.c_str(), key.second, &f.log_start,
                                                               &f.log_end, timeout_of(settings));
    if (err) {
      unreachable(settings, fmt::format("watermarks of {}[{}]", key.first, key.second), err);
    }
    facts[key] = f;
  }
  if (request.group && !all.empty()) {
    PartitionList list = make_list(all, RD_KAFKA_OFFSET_INVALID);
    rd_kafka_resp_err_t err = rd_kafka_committed(rk.get(), list.get(), timeout_of(settings));
    if (err) {
      unreachable(settings, fmt::format("committed offsets of group '{}'", *request.group), err);
    }
    for (const auto& key : all) {
      auto offset = list_offset(list.get(), key.first, key.second);
      if (offset && *offset >= 0) {
        facts[key].committed = *offset;
      }
    }
  }

  auto lookups_for = [&](const core::OffsetSpec& spec) {
    std::map<std::pair<std::string, std::int32_t>, std::int64_t> lookups;
    if (auto ts = core::spec_timestamp(spec, request.now_ms); ts && !all.empty()) {
      lookups = time_lookups(rk.get(), settings, all, *ts);
    }
    return lookups;
  };
  auto from_lookups = lookups_for(request.from);
  auto to_lookups = lookups_for(request.to);
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> seek_lookups;
  if (request.seek) {
    seek_lookups = lookups_for(*request.seek);
  }

  auto with_lookup = [](core::PartitionFacts f, const auto& lookups, const auto& key) {
    if (auto it = lookups.find(key); it != lookups.end()) {
      f.time_lookup = it->second;
    }
    return f;
  };
  bool has_group = request.group.has_value();
  for (const auto& key : all) {
    const core::PartitionFacts& f = facts[key];
    auto from = core::resolve_offset(request.from, core::SpecRole::From, with_lookup(f, from_lookups, key), has_group,
                                     request.now_ms);
    auto to = core::resolve_offset(request.to, core::SpecRole::To, with_lookup(f, to_lookups, key), has_group,
                                   request.now_ms);
    core::PartitionPlan plan;
    plan.topic = key.first;
    plan.partition = key.second;
    plan.start = from.offset;
    plan.end = std::max(from.offset, to.offset);
    plan.skip_before_ts = from.timestamp_filter;
    plan.stop_at_ts = to.timestamp_filter;
    plan.rank = static_cast<std::uint32_t>(out.plans.size());
    plan.ranks = static_cast<std::uint32_t>(all.size());
    plan.order_base = plan.start;

    core::PartitionRange range;
    range.topic = key.first;
    range.partition = key.second;
    range.from = plan.start;
    range.to = plan.end;
    range.log_start = f.log_start;
    range.log_end = f.log_end;
    range.committed = f.committed;
    range.clamped = from.clamped;
    range.requested_from = from.requested;
    range.from_timestamp = from.timestamp_filter;
    if (request.seek) {
      auto seek = core::resolve_offset(*request.seek, core::SpecRole::Seek, with_lookup(f, seek_lookups, key),
                                       has_group, request.now_ms);
      range.seek = seek.offset;
      range.seek_timestamp = seek.timestamp_filter;
    }
    out.plans.push_back(std::move(plan));
    out.info.partitions.push_back(std::move(range));
  }
  return out;
}

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
    // partitions each fetch brings less, so that one fetch of all stays near 32 MiB.
    std::size_t partitions = std::max<std::size_t>(1, plans.size());
    std::size_t fetch_bytes = std::clamp<std::size_t>((32U << 20) / partitions, 32U << 10, 1U << 20);
    m_reorder_cap =
        m_settings.reorder_bytes > 0 ? m_settings.reorder_bytes : std::max<std::size_t>(64U << 20, 2 * partitions * fetch_bytes);
    // The prefetch scales with the partitions read (a shard reads a share of them), 512 KiB each
    // between 8 and 28 MiB; a smaller queue drains sooner, so the broker thread is woken sooner
    // (see the refresh below): tests/bench/shards/run, a shard of 16 partitions 118 -> 77 MB at
    // the same speed.
    std::size_t queue_kbytes = std::clamp<std::size_t>(partitions * 512, 8192, 28672);
    std::size_t refresh_ms = std::clamp<std::size_t>(250 * queue_kbytes / 28672, 50, 250);
    m_rk = make_handle(RD_KAFKA_CONSUMER, m_settings,
                       {{"group.id", fmt::format("dedupctl-reader-{}", ::getpid())},
                        {"enable.auto.commit", "false"},
                        {"enable.auto.offset.store", "false"},
                        {"enable.partition.eof", "true"},
                        {"auto.offset.reset", "error"},
                        {"allow.auto.create.topics", "false"},
                        // Every partition's fetch queue is forwarded to the one consumer queue, and
                        // librdkafka 2.0.2 compares the thresholds with that shared queue: once it is
                        // over them all partitions stop fetching until the broker thread wakes again
                        // (~0.3 s; 2.2 added fetch.queue.backoff.ms for this). The message count is
                        // therefore taken out of play and the bytes bound the prefetch: 28 MiB keeps a
                        // 1M-event scan within 160 MB while stalls stay rare (tests/bench/scan/run).
                        {"queued.min.messages", "10000000"},
                        {"queued.max.messages.kbytes", std::to_string(queue_kbytes)},
                        // A consumer slower than the broker (an audit waiting on its lookups, a
                        // replay on its claims) fills that queue again and again, and in 2.0.2
                        // nothing wakes the idle broker thread once it is drained: each stall lasted
                        // up to a second and tripled an audit's read time. A metadata refresh is a
                        // request the broker thread serves, and waking it re-decides the fetches;
                        // every 250 ms bounds a stall to that (tests/bench/audit-redis/run: read
                        // 3.0 s -> 0.7 s of 1M events); a smaller queue, sooner, down to 50 ms. One
                        // small request per interval for our topics.
                        {"topic.metadata.refresh.interval.ms", std::to_string(refresh_ms)},
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
    if (m_rk) {
      rd_kafka_assign(m_rk.get(), nullptr);
      m_queue.reset();
      rd_kafka_consumer_close(m_rk.get());
    }
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
  // partition waits for the broker thread to fetch again (up to topic.metadata.refresh.interval.ms
  // in 2.0.2): pausing every partition that held anything made each one wait in turn, round after
  // round, once a single slow fetch had filled the cap (a 1M-event audit of 256 partitions took
  // 128 s instead of 4). So the reader holds at most about two rounds and a fetch of each partition.
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
      if (message->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET ||
          message->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
        throw UnreachableError(fmt::format(
            "{}[{}]: the range start is no longer in the log (retention deleted it while reading: {}); run again",
            topic ? topic : "?", message->partition, rd_kafka_message_errstr(message)));
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

// The watermarks through an existing handle (the sink's producer: no new connection per call).
std::vector<std::pair<std::int64_t, std::int64_t>> watermarks_of(rd_kafka_t* rk, const KafkaSettings& settings,
                                                                 const std::string& topic);

namespace {

// The replay sink's producer: idempotent, acks=all, a delivery report per record kept for the sink,
// and per partition the offset after the last delivered record.
class KafkaProducer final {
public:
  explicit KafkaProducer(const KafkaSettings& settings) : m_settings(settings) {
    std::vector<std::pair<std::string, std::string>> defaults{
        {"acks", "all"},
        {"enable.idempotence", "true"},
        {"linger.ms", "5"},
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
        throw UsageError(fmt::format("cannot produce to {}: {}", topic, rd_kafka_err2str(err)));
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
    self->m_reports.push_back(
        core::Delivery{tagged->tag, !message->err, message->err ? rd_kafka_err2str(message->err) : std::string()});
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

std::unique_ptr<core::EventSource> open_reader(const KafkaSettings& settings, std::vector<core::PartitionPlan> plans) {
  return std::make_unique<KafkaReader>(settings, std::move(plans));
}

std::optional<core::TopicRetention> describe_retention(const KafkaSettings& settings, const std::string& topic,
                                                       std::int64_t timeout_ms) {
  KafkaHandle rk = make_handle(RD_KAFKA_PRODUCER, settings, {});
  rd_kafka_ConfigResource_t* resource = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic.c_str());
  QueueHandle queue(rd_kafka_queue_new(rk.get()));
  rd_kafka_AdminOptions_t* options = rd_kafka_AdminOptions_new(rk.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  char errstr[256];
  rd_kafka_AdminOptions_set_request_timeout(options, static_cast<int>(timeout_ms), errstr, sizeof errstr);
  rd_kafka_DescribeConfigs(rk.get(), &resource, 1, options, queue.get());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy(resource);
  rd_kafka_event_t* event = rd_kafka_queue_poll(queue.get(), static_cast<int>(timeout_ms + 500));
  if (!event) {
    return std::nullopt;
  }
  std::unique_ptr<rd_kafka_event_t, decltype(&rd_kafka_event_destroy)> guard(event, rd_kafka_event_destroy);
  if (rd_kafka_event_error(event)) {
    return std::nullopt;
  }
  const rd_kafka_DescribeConfigs_result_t* result = rd_kafka_event_DescribeConfigs_result(event);
  std::size_t count = 0;
  const rd_kafka_ConfigResource_t** resources = rd_kafka_DescribeConfigs_result_resources(result, &count);
  if (count != 1 || rd_kafka_ConfigResource_error(resources[0])) {
    return std::nullopt;
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
