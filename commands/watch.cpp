#include "commands/context.hpp"
#include "commands/options.hpp"
#include "commands/settings.hpp"
#include "commands/source.hpp"
#include "commands/store.hpp"
#include "connectors/file/key_archive.hpp"
#include "connectors/http/server.hpp"
#include "connectors/kafka/kafka.hpp"
#include "connectors/schema/source.hpp"
#include "core/audit/retention.hpp"
#include "core/identity/identify.hpp"
#include "core/merge/digest.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/source/offset_spec.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"
#include "core/watch/watch_state.hpp"
#include "reports/metrics.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

// dedupctl watch: the audit's classification kept current and served as metrics until stopped.
// Each tick (--interval) asks the brokers for every partition's watermarks and committed offset,
// reads what arrived since the last tick, looks its records up and adds it; every --refresh (and at
// once when the store restarted, failed over or lost keys) it reads the range again from the log
// start and looks every record up again. Between lookups the states follow the clock
// (core::WatchState). What it could not see is never shown: a partition not yet read from its
// start, or any partition while the brokers or the store do not answer, has no gauge.
namespace dedupctl::commands {

namespace {

struct WatchFlags {
  std::vector<std::string> topics;
  std::string from = "earliest";
  std::string group;
  std::string shard;
  IdentityFlags identity;
  PlacementFlags placement;
  std::vector<std::string> seeks;
  std::string listen = "127.0.0.1:9464";
  std::string refresh = "5m";
  std::string interval = "5s";
  std::string semantic_window = core::format_duration(core::k_default_semantic_window_ms);
  std::int64_t refresh_rate = 100'000;
};

// The flags, parsed and checked (UsageError) before anything is contacted.
struct WatchConfig {
  std::vector<connectors::kafka::TopicRequest> topics;
  core::OffsetSpec from;
  std::optional<std::string> group;
  std::optional<core::ShardSpec> shard;
  core::IdentifyOptions identify;
  PlacementOptions placement;
  std::vector<std::pair<std::string, core::OffsetSpec>> seeks;
  std::int64_t refresh_ms = 0;
  std::int64_t interval_ms = 0;
  std::int64_t semantic_window_ms = 0;
  std::int64_t refresh_rate = 0; // keys a second a refresh looks up at most (0: no limit)
};

WatchConfig parse_flags(const WatchFlags& flags, Context& context) {
  WatchConfig config;
  if (flags.topics.empty()) {
    throw UsageError("watch needs --topic T (with --bootstrap-server): the topics whose consumers it watches");
  }
  if (context.global.bootstrap.empty()) {
    throw UsageError("watch needs --bootstrap-server (or bootstrap-server in the config file)");
  }
  for (const auto& topic : flags.topics) {
    config.topics.push_back(parse_topic(topic));
  }
  config.from = core::parse_offset_spec(flags.from, "--from");
  if (config.from.kind == core::SpecKind::Committed && flags.group.empty()) {
    throw UsageError("--from committed needs --group");
  }
  if (!flags.group.empty()) {
    config.group = flags.group;
  }
  if (!flags.shard.empty()) {
    config.shard = core::parse_shard(flags.shard);
  }
  config.identify = parse_identity(flags.identity, context);
  config.placement = parse_placement(flags.placement, context);
  if (config.placement.uri.kind == core::StoreUri::Kind::Memory ||
      config.placement.uri.kind == core::StoreUri::Kind::File) {
    throw UsageError(fmt::format("--store {}: watch reads a live placement (redis://, postgres://); a snapshot or "
                                 "memory holds nothing that changes",
                                 config.placement.uri.redacted()));
  }
  for (const auto& seek : flags.seeks) {
    if (flags.group.empty()) {
      throw UsageError("--seek needs --group: the window a seek would re-apply is [seek, committed) of that group");
    }
    config.seeks.emplace_back(seek, core::parse_offset_spec(seek, "--seek"));
  }
  config.refresh_ms = core::parse_duration(flags.refresh, "--refresh");
  config.interval_ms = core::parse_duration(flags.interval, "--interval");
  if (config.interval_ms < 100) {
    throw UsageError(fmt::format("--interval {}: at least 100ms", flags.interval));
  }
  if (config.refresh_ms < config.interval_ms) {
    throw UsageError(fmt::format("--refresh {} is shorter than --interval {}: every record would be looked up again "
                                 "at every tick",
                                 flags.refresh, flags.interval));
  }
  config.semantic_window_ms = core::parse_duration(flags.semantic_window, "--window");
  if (flags.refresh_rate < 0) {
    throw UsageError(fmt::format("--refresh-rate {}: a count of keys a second, or 0 for no limit", flags.refresh_rate));
  }
  config.refresh_rate = flags.refresh_rate;
  return config;
}

// A span as a metric shows it: seconds, +Inf, or nothing while unknown.
std::optional<double> seconds_of(const core::Span& span) {
  if (span.is_infinite()) {
    return std::numeric_limits<double>::infinity();
  }
  if (auto ms = span.finite_ms()) {
    return static_cast<double>(*ms) / 1000.0;
  }
  return std::nullopt;
}

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The log rules over one topic's events: the scan's analyzer and the audit's key collisions.
struct TopicLog {
  explicit TopicLog(core::LogAnalyzerOptions options) : archives(false) {
    archives.attach(options);
    log = std::make_unique<core::LogAnalyzer>(options);
  }
  reports::TopicCounters counters() const {
    const auto& c = log->counters();
    return {c.log_duplicates, c.id_reuse, c.semantic_duplicates, key_collisions};
  }
  connectors::file::AnalyzerArchives archives;
  std::unique_ptr<core::LogAnalyzer> log;
  core::KeyOwners key_owners;
  std::int64_t key_collisions = 0;
};

reports::TopicCounters operator+(reports::TopicCounters a, const reports::TopicCounters& b) {
  return {a.log_duplicates + b.log_duplicates, a.id_reuse + b.id_reuse, a.semantic_duplicates + b.semantic_duplicates,
          a.key_collisions + b.key_collisions};
}
reports::TopicCounters operator-(reports::TopicCounters a, const reports::TopicCounters& b) {
  return {a.log_duplicates - b.log_duplicates, a.id_reuse - b.id_reuse, a.semantic_duplicates - b.semantic_duplicates,
          a.key_collisions - b.key_collisions};
}

// One topic's counters as they are served: what was counted before the last refresh (`base`), and
// what the current rules counted since. A refresh reads the range again into fresh rules (`next`),
// which then replace the current ones: what the rules hold follows the range (the events still
// replayable), not every id seen since the watch started, and the counters still only grow.
struct TopicCount {
  std::unique_ptr<TopicLog> current;
  std::unique_ptr<TopicLog> next;
  reports::TopicCounters base;
  reports::TopicCounters current_at_start; // what the range itself held when `current` took over
  reports::TopicCounters served() const { return base + (current->counters() - current_at_start); }
};

class Watcher {
public:
  Watcher(WatchConfig config, const PlacementFlags& placement_flags, Context& context)
      : m_config(std::move(config)), m_placement_flags(placement_flags), m_context(context),
        m_kafka(reader_settings(false, context)), m_state(policy()),
        m_inbox(m_config.placement.uri.kind == core::StoreUri::Kind::Postgres) {
    m_kafka.stop = &context.stop;
    core::IdentifyOptions identify = m_config.identify;
    m_key_template = m_inbox ? core::KeyTemplate::parse("{event_id}") : m_config.placement.audit.key_template;
    identify.extra = m_key_template.fields();
    m_identifier = std::make_unique<core::Identifier>(identify);
    m_check_collisions = !m_key_template.uses(core::KeyTemplate::Part::EventId);
    m_up["kafka"] = false;
    m_up[m_inbox ? "postgres" : "redis"] = false;
    if (m_config.identify.decoder) {
      m_up["registry"] = false; // until a tick decoded what it read (or had nothing to decode)
    }
    m_metrics.up = m_up;
  }

  // One round: the partitions, what arrived, a refresh when due; then the gauges are published.
  void tick() {
    std::int64_t now = m_context.now_ms();
    if (steady_ms() < m_retry_at_ms) { // backing off after a failure
      publish(now, m_up["kafka"], m_up[m_inbox ? "postgres" : "redis"]);
      return;
    }
    bool kafka_up = resolve(now);
    bool store_up = kafka_up && open_store(now);
    if (kafka_up && store_up) {
      try {
        read_arrivals();
        if (m_refresh_due || now - m_last_refresh_ms >= m_config.refresh_ms) {
          refresh();
        }
        if (m_config.identify.decoder) {
          note_change("registry", true, "");
        }
      } catch (const connectors::schema::RegistryUnreachableError& e) {
        // The events could not be identified: no gauge until the registry answers (backing off as
        // for the brokers, whose reading starts again where it stood).
        note_change("registry", false, e.what());
        kafka_up = false;
      } catch (const UnreachableError& e) {
        // Which side failed: a lookup's error names the store; otherwise the brokers.
        if (m_in_lookup) {
          store_down(e.what());
          store_up = false;
        } else {
          kafka_down(e.what());
          kafka_up = false;
        }
      }
    }
    // A system that failed is asked again after the interval, then twice as long each time it fails
    // again, up to 10 s (librdkafka's reconnect backoff).
    if (kafka_up && store_up) {
      m_backoff_ms = 0;
    } else {
      m_backoff_ms = std::min<std::int64_t>(k_max_backoff_ms, std::max(m_config.interval_ms, 2 * m_backoff_ms));
      m_retry_at_ms = steady_ms() + m_backoff_ms - m_config.interval_ms;
    }
    publish(m_context.now_ms(), kafka_up, store_up);
  }

  // The latest metrics, rendered (the server's thread).
  std::string render(reports::MetricsFormat format) const {
    std::lock_guard lock(m_mutex);
    return reports::render_metrics(m_metrics, format);
  }

  std::int64_t last_progress_ms() const { return m_progress.load(); }

private:
  // The policy as decided so far: the flags', the retention once the broker told it, an inbox's
  // TTL once the inbox was opened.
  core::WatchPolicy policy() const {
    core::WatchPolicy p;
    p.policy = m_config.placement.audit.policy;
    p.policy.ttl = m_inbox ? m_ttl.span : m_config.placement.audit.ttl.span;
    p.ttl_declared = m_inbox || m_config.placement.audit.ttl.span.known();
    if (m_retention_asked) {
      p.policy.retention = m_retention_decision.span;
      p.policy.compacted = m_retention_decision.compacted;
    }
    p.side_effects = m_config.placement.audit.side_effects;
    return p;
  }

  // Says on stderr when a system goes down or answers again (not at the first answer).
  void note_change(const std::string& system, bool up, const std::string& why) {
    bool seen = m_seen.count(system) != 0;
    if (!up && (!seen || m_up[system])) {
      m_context.note(fmt::format("{} down: {}", system, why));
    } else if (up && seen && !m_up[system]) {
      m_context.note(fmt::format("{} answers again", system));
    }
    m_seen.insert(system);
    m_up[system] = up;
  }
  void kafka_down(const std::string& why) { note_change("kafka", false, why); }
  void store_down(const std::string& why) {
    note_change(m_inbox ? "postgres" : "redis", false, why);
    m_store.reset(); // reconnected at the next tick, and every record looked up again
    m_probe.reset();
    m_records_current = false;
    m_refresh_due = true;
  }

  // The partitions' watermarks and committed offsets, and where each seek falls; false when the
  // brokers do not answer.
  bool resolve(std::int64_t now) {
    connectors::kafka::RangeRequest request;
    request.topics = m_config.topics;
    request.from = m_config.from;
    request.to = core::parse_offset_spec("latest", "--to");
    request.group = m_config.group;
    request.now_ms = now;
    try {
      auto resolved = connectors::kafka::resolve_range(m_kafka, request);
      m_ranges.clear();
      for (const auto& range : resolved.info.partitions) {
        if (m_config.shard && !m_config.shard->owns(range.partition)) {
          continue;
        }
        m_ranges.push_back(range);
        m_state.set_partition(range.topic, range.partition, range.committed, range.from);
      }
      m_seeks.clear();
      for (const auto& [name, spec] : m_config.seeks) {
        request.seek = spec;
        auto with_seek = connectors::kafka::resolve_range(m_kafka, request);
        core::WatchSeek seek{name, {}};
        for (const auto& range : with_seek.info.partitions) {
          if (range.seek) {
            seek.offsets[{range.topic, range.partition}] = *range.seek;
          }
        }
        m_seeks.push_back(std::move(seek));
      }
      if (!m_retention_asked || (!m_retention_unknown.empty() && now - m_retention_asked_ms >= m_config.refresh_ms)) {
        decide_retention(now);
      }
      note_change("kafka", true, "");
      return true;
    } catch (const UnreachableError& e) {
      kafka_down(e.what());
      return false;
    }
  }

  // Asks the broker for the topics' retention: at the start, then at every --refresh while a topic's
  // is unknown (an ACL granted later, a broker that did not answer in time). Each topic's reason is
  // said once, and again only when it changes; a retention that becomes known is said too.
  void decide_retention(std::int64_t now) {
    const auto& flag = m_config.placement.audit.policy.retention;
    std::vector<std::string> topics;
    for (const auto& t : m_config.topics) {
      topics.push_back(t.topic);
    }
    BrokerTopicConfigs broker(m_kafka, topics);
    auto decision = core::decide_retention(flag, topics, &broker, m_config.placement.retention_origin);
    bool changed = !m_retention_asked || decision.span != m_retention_decision.span ||
                   decision.compacted != m_retention_decision.compacted;
    m_retention_decision = decision;
    m_retention_asked = true;
    m_retention_asked_ms = now;
    for (const auto& topic : topics) {
      auto one = core::decide_retention(flag, {topic}, &broker, m_config.placement.retention_origin);
      m_retention[topic] = {seconds_of(one.span), std::string(core::report_name(one.source))};
      auto unknown = m_retention_unknown.find(topic);
      if (one.source == core::RetentionSource::Unknown) {
        std::string why = broker.why(topic);
        if (unknown == m_retention_unknown.end() || unknown->second != why) {
          m_context.note(fmt::format("the retention of {} is unknown ({}); pass --retention", topic, why));
          m_retention_unknown[topic] = why;
        }
      } else if (unknown != m_retention_unknown.end()) {
        m_context.note(
            fmt::format("the retention of {} is known now: {} (from the broker)", topic, core::to_text(one.span)));
        m_retention_unknown.erase(unknown);
      }
    }
    if (changed) {
      m_state.set_policy(policy());
      m_refresh_due = true; // every record classified again under the retention now known
    }
  }

  // Opens the store when it is not, and asks whether it lost records since the last tick.
  bool open_store(std::int64_t now, bool reconnecting = false) {
    std::string system = m_inbox ? "postgres" : "redis";
    try {
      if (!m_store) {
        PlacementFlags flags = m_placement_flags;
        flags.inbox_lookup = "batches"; // rows that arrive after a load would never be seen
        auto opened = open_dedup_store(m_config.placement, flags, m_context, std::nullopt);
        if (opened.failure) {
          store_down(*opened.failure);
          return false;
        }
        m_store = std::move(opened.store);
        if (opened.inbox) {
          m_ttl = decide_inbox_ttl(*opened.inbox, m_config.placement.inbox_retention, now, m_context);
          m_state.set_policy(policy());
        }
        m_refresh_due = true;
      }
      if (auto probe = m_store->probe()) {
        if (m_probe && core::keyspace_lost_records(*m_probe, *probe)) {
          bool another = m_probe->incarnation != probe->incarnation;
          m_context.note(
              fmt::format("{}: the keyspace changed ({}); looking every record up again", system,
                          another ? "another server or role: connecting again" : "keys went that did not expire"));
          m_refresh_due = true;
          if (another && !reconnecting) {
            // A master demoted by a failover still answers, as a replica: connect again, so that a
            // sentinel names the new master.
            m_store.reset();
            m_probe.reset();
            return open_store(now, true);
          }
        }
        m_probe = probe;
      }
      note_change(system, true, "");
      return true;
    } catch (const UnreachableError& e) {
      store_down(e.what());
      return false;
    }
  }

  std::vector<core::PartitionPlan> plans(bool arrivals) const {
    std::vector<core::PartitionPlan> out;
    for (const auto& range : m_ranges) {
      auto next = m_state.next_offset(range.topic, range.partition).value_or(range.from);
      core::PartitionPlan plan;
      plan.topic = range.topic;
      plan.partition = range.partition;
      plan.start = arrivals ? std::max(next, range.from) : range.from;
      plan.end = arrivals ? range.to : std::min(next, range.to);
      if (plan.start >= plan.end) {
        continue;
      }
      plan.order_base = plan.start;
      out.push_back(plan);
    }
    for (std::size_t i = 0; i < out.size(); ++i) {
      out[i].rank = static_cast<std::uint32_t>(i);
      out[i].ranks = static_cast<std::uint32_t>(out.size());
    }
    return out;
  }

  void read_arrivals() {
    auto todo = plans(true);
    if (!todo.empty()) {
      read(std::move(todo), true);
    }
    bool all = true;
    for (const auto& range : m_ranges) {
      if (m_state.next_offset(range.topic, range.partition).value_or(range.from) >= range.to) {
        m_state.set_complete(range.topic, range.partition);
      } else {
        all = false;
      }
    }
    // The counters count what arrives while watching: the range read at the start only teaches the
    // rules its ids. (Counting it too would make every restart look like a burst of duplicates to
    // rate() and increase().)
    if (all && !m_caught_up) {
      m_caught_up = true;
      for (auto& [topic, count] : m_logs) {
        count.base = {};
        count.current_at_start = count.current->counters();
      }
    }
  }

  void refresh() {
    for (auto& [topic, count] : m_logs) {
      count.next = make_log();
    }
    auto todo = plans(false);
    if (!todo.empty()) {
      try {
        read(std::move(todo), false);
      } catch (...) {
        for (auto& [topic, count] : m_logs) {
          count.next.reset();
        }
        throw;
      }
    }
    for (auto& [topic, count] : m_logs) {
      count.base = count.served();
      count.current = std::move(count.next);
      count.current_at_start = count.current->counters();
    }
    m_last_refresh_ms = m_context.now_ms();
    m_refresh_due = false;
    m_records_current = true;
    std::lock_guard lock(m_mutex);
    m_metrics.last_refresh_seconds = static_cast<double>(m_last_refresh_ms) / 1000.0;
  }

  std::unique_ptr<TopicLog> make_log() const {
    core::LogAnalyzerOptions options;
    options.semantic_window_ms = m_config.semantic_window_ms;
    options.max_examples = 0;
    return std::make_unique<TopicLog>(options);
  }

  // The rules an event goes to: an arrival's topic's current ones, a refresh's next ones.
  TopicLog& topic_log(std::string_view topic, bool arrivals) {
    auto it = m_logs.find(topic);
    if (it == m_logs.end()) {
      it = m_logs.emplace(std::string(topic), TopicCount{make_log(), nullptr, {}, {}}).first;
    }
    TopicCount& count = it->second;
    if (!arrivals && !count.next) {
      count.next = make_log();
    }
    return arrivals ? *count.current : *count.next;
  }

  // Reads the plans, looks every event's record up and adds the events (arrivals) or updates them
  // (a refresh). An arrival is counted by the log analyzers only once its lookup succeeded, so that a
  // batch read again after a failure is not counted twice.
  void read(std::vector<core::PartitionPlan> todo, bool arrivals) {
    auto source = connectors::kafka::open_reader(m_kafka, std::move(todo));
    core::EventBatch batch;
    std::int64_t started_ms = steady_ms();
    std::int64_t keys_looked_up = 0;
    while (source->next_batch(batch)) {
      // A refresh looks up at most --refresh-rate keys a second, so that it does not load the store
      // the consumers write to.
      if (!arrivals && m_config.refresh_rate > 0) {
        std::int64_t due_ms = started_ms + keys_looked_up * 1000 / m_config.refresh_rate;
        while (steady_ms() < due_ms && !m_context.stop.load()) {
          std::this_thread::sleep_for(std::chrono::milliseconds(std::min<std::int64_t>(20, due_ms - steady_ms())));
        }
      }
      m_progress = steady_ms();
      m_identifier->identify(batch, m_identities);
      core::render_batch_keys(m_key_template, batch, m_identities, m_placement_flags.consumer, m_keys, m_key_of);
      keys_looked_up += static_cast<std::int64_t>(m_keys.size());
      auto started = std::chrono::steady_clock::now();
      m_in_lookup = true;
      m_store->lookup(m_keys, m_records);
      m_in_lookup = false;
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      std::int64_t looked_up_at = m_context.now_ms();
      core::CoveragePolicy policy = m_state.policy().policy;
      for (std::size_t i = 0; i < batch.events.size(); ++i) {
        const auto& event = batch.events[i];
        const auto& identity = m_identities[i];
        core::TrackedRecord tracked{core::TrackedRecord::Kind::NoId, core::k_never_ms};
        if (m_key_of[i] != SIZE_MAX) {
          const auto& record = m_records[m_key_of[i]];
          tracked = core::track(record, looked_up_at, policy);
          if (record.kind == core::RecordState::Kind::Present && record.pttl_ms) {
            m_state.observe_ttl(*record.pttl_ms, event.timestamp_ms, looked_up_at);
          }
        }
        std::string topic(event.topic);
        TopicLog& log = topic_log(event.topic, arrivals);
        log.log->observe(event, identity);
        if (m_check_collisions && m_key_of[i] != SIZE_MAX &&
            log.key_owners.collides(m_keys[m_key_of[i]], identity.id_hash)) {
          ++log.key_collisions;
        }
        if (arrivals) {
          m_state.append(topic, event.partition, event.offset, event.timestamp_ms, identity.type, tracked);
        } else {
          m_state.update(topic, event.partition, event.offset, tracked);
        }
      }
      std::lock_guard lock(m_mutex);
      m_metrics.lookup_seconds.observe(seconds);
    }
  }

  void publish(std::int64_t now, bool kafka_up, bool store_up) {
    core::WatchGauges gauges;
    bool registry_up = !m_up.count("registry") || m_up.at("registry");
    bool visible = kafka_up && store_up && registry_up && m_records_current;
    if (visible) {
      gauges = m_state.evaluate(now, m_seeks);
    }
    std::lock_guard lock(m_mutex);
    m_metrics.gauges = std::move(gauges);
    m_metrics.up = m_up;
    m_metrics.retention = m_retention;
    for (const auto& [topic, count] : m_logs) {
      m_metrics.counters[topic] = m_caught_up ? count.served() : reports::TopicCounters{};
    }
    for (const auto& t : m_config.topics) {
      m_metrics.counters.try_emplace(t.topic);
    }
    m_metrics.ttl = {};
    if (m_inbox) {
      m_metrics.ttl = {seconds_of(m_ttl.span), std::string(core::report_name(m_ttl.source))};
    } else if (m_config.placement.audit.ttl.span.known()) {
      m_metrics.ttl = {seconds_of(m_config.placement.audit.ttl.span), "flag"};
    } else if (visible && m_metrics.gauges.ttl_estimate_high_ms) {
      m_metrics.ttl = {static_cast<double>(*m_metrics.gauges.ttl_estimate_high_ms) / 1000.0, "estimate"};
    }
    m_metrics.events_held = m_state.events();
    m_metrics.bytes_held = static_cast<std::int64_t>(m_state.bytes());
    m_progress = steady_ms();
  }

  WatchConfig m_config;
  PlacementFlags m_placement_flags;
  Context& m_context;
  connectors::kafka::KafkaSettings m_kafka;
  core::WatchState m_state;
  bool m_inbox;
  core::KeyTemplate m_key_template = core::KeyTemplate::parse("{event_id}");
  std::unique_ptr<core::Identifier> m_identifier;
  bool m_check_collisions = false;
  std::vector<core::PartitionRange> m_ranges;
  std::vector<core::WatchSeek> m_seeks;
  std::map<std::string, TopicCount, std::less<>> m_logs;
  std::unique_ptr<core::DedupStore> m_store;
  std::optional<core::KeyspaceProbe> m_probe;
  core::TtlDecision m_ttl; // an inbox's, once opened
  core::RetentionDecision m_retention_decision;
  std::map<std::string, reports::Figure> m_retention;
  bool m_retention_asked = false;
  std::int64_t m_retention_asked_ms = 0;
  std::map<std::string, std::string> m_retention_unknown; // topic -> the reason last said
  bool m_records_current = false;
  bool m_caught_up = false; // every partition was read once to its end
  bool m_refresh_due = true;
  bool m_in_lookup = false;
  static constexpr std::int64_t k_max_backoff_ms = 10'000;
  std::int64_t m_backoff_ms = 0;
  std::int64_t m_retry_at_ms = 0; // steady clock
  std::int64_t m_last_refresh_ms = 0;
  std::map<std::string, bool> m_up;
  std::set<std::string> m_seen; // systems asked once at least
  std::vector<core::Identity> m_identities;
  std::vector<std::string> m_keys;
  std::vector<std::size_t> m_key_of;
  std::vector<core::RecordState> m_records;
  std::atomic<std::int64_t> m_progress{steady_ms()};
  mutable std::mutex m_mutex;
  reports::WatchMetrics m_metrics;
};

// Sleeps until `deadline_ms` (steady), waking for a stop or a reload.
void wait_until(std::int64_t deadline_ms, const Context& context) {
  while (steady_ms() < deadline_ms && !context.stop.load() && !context.reload.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

int run(const WatchFlags& flags, Context& context) {
  WatchConfig config = parse_flags(flags, context);
  if (context.validate_only) {
    return 0;
  }
  std::int64_t interval = config.interval_ms;
  Watcher watcher(std::move(config), flags.placement, context);
  std::int64_t stale_after = std::max<std::int64_t>(60'000, 3 * interval);
  connectors::http::Server server(flags.listen, [&](std::string_view path, std::string_view accept) {
    if (path == "/metrics") {
      auto format = reports::negotiate_metrics_format(accept);
      return connectors::http::Response{200, std::string(reports::content_type(format)), watcher.render(format)};
    }
    if (path == "/healthz") {
      bool alive = steady_ms() - watcher.last_progress_ms() < stale_after;
      return connectors::http::Response{alive ? 200 : 503, "text/plain; charset=utf-8", alive ? "ok\n" : "stalled\n"};
    }
    return connectors::http::Response{404, "text/plain; charset=utf-8", "not found: try /metrics or /healthz\n"};
  });
  context.note(fmt::format("watch: serving /metrics and /healthz on {} (port {})", flags.listen, server.port()));
  while (!context.stop.load()) {
    std::int64_t next = steady_ms() + interval;
    try {
      watcher.tick();
    } catch (const InterruptedError&) {
      break;
    }
    wait_until(next, context);
    if (context.reload.exchange(false)) {
      if (context.validate && context.validate() == 0) {
        context.note("SIGHUP: the config file was read again; watching anew with it");
        return k_run_again;
      }
      context.note("SIGHUP: the config file has errors (above): watching on with the settings it had");
    }
  }
  context.note("watch: stopped");
  return 0;
}

} // namespace

CommandRunner register_watch(CLI::App& app, Context& context) {
  auto flags = std::make_shared<WatchFlags>();
  auto* sub = app.add_subcommand("watch", "Keep the audit current and serve it as Prometheus metrics until stopped");
  auto* source = sub->add_option_group("Source", "The topics watched");
  source->add_option("--topic", flags->topics, "topic and optional partitions, T or T:0,1,5 (repeatable)")
      ->type_name("T[:P,...]");
  source
      ->add_option("--from", flags->from,
                   "where the replayable range starts: earliest (the log start), N, -N, @TIME, -DURATION")
      ->type_name("SPEC");
  source->add_option("--group", flags->group, "consumer group whose committed offsets split processed from pending")
      ->type_name("G");
  source->add_option("--shard", flags->shard, "watch only partitions p with p mod N = K (Prometheus sums the shards)")
      ->type_name("K/N");
  add_identity_options(*sub, flags->identity);
  add_placement_options(*sub, flags->placement);
  auto* watch = sub->add_option_group("Watch");
  watch->add_option("--seek", flags->seeks, "a reset to price continuously for --group (repeatable)")
      ->type_name("SPEC");
  watch
      ->add_option("--listen", flags->listen,
                   "where /metrics and /healthz are served: HOST:PORT, :PORT for every "
                   "address")
      ->type_name("HOST:PORT");
  watch->add_option("--refresh", flags->refresh, "how often every record in range is looked up again")
      ->type_name("DURATION");
  watch
      ->add_option("--refresh-rate", flags->refresh_rate,
                   "at most this many keys a second looked up by a refresh (0: no limit)")
      ->type_name("KEYS");
  watch->add_option("--interval", flags->interval, "how often new events are read and the states decided again")
      ->type_name("DURATION");
  watch
      ->add_option("--window", flags->semantic_window, "how close in time two events must be to be semantic duplicates")
      ->type_name("DURATION");
  return [flags, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "watch";
    return run(*flags, context);
  };
}

} // namespace dedupctl::commands
