#include "commands/pipeline/watch.hpp"

#include "core/identity/payload_decoder.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>

namespace dedupctl::commands {

std::string_view to_string(WatchSystem system) {
  switch (system) {
  case WatchSystem::Kafka:
    return "kafka";
  case WatchSystem::Redis:
    return "redis";
  case WatchSystem::Postgres:
    return "postgres";
  case WatchSystem::Registry:
    return "registry";
  case WatchSystem::Effects:
    return "effects";
  }
  return "kafka";
}

namespace {

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

reports::TopicCounters operator+(reports::TopicCounters a, const reports::TopicCounters& b) {
  return {a.log_duplicates + b.log_duplicates, a.id_reuse + b.id_reuse, a.semantic_duplicates + b.semantic_duplicates,
          a.key_collisions + b.key_collisions};
}
reports::TopicCounters operator-(reports::TopicCounters a, const reports::TopicCounters& b) {
  return {a.log_duplicates - b.log_duplicates, a.id_reuse - b.id_reuse, a.semantic_duplicates - b.semantic_duplicates,
          a.key_collisions - b.key_collisions};
}

} // namespace

// The log rules over one topic's events: the scan's analyzer and the audit's key collisions.
struct Watcher::TopicLog {
  TopicLog(core::LogAnalyzerOptions options, WatchSystems& systems) {
    archives = systems.attach_archives(options);
    log = std::make_unique<core::LogAnalyzer>(options);
  }
  reports::TopicCounters counters() const {
    const auto& c = log->counters();
    return {c.log_duplicates, c.id_reuse, c.semantic_duplicates, key_collisions};
  }
  std::shared_ptr<void> archives; // what the rules spill, alive as long as they are
  std::unique_ptr<core::LogAnalyzer> log;
  core::KeyOwners key_owners;
  std::int64_t key_collisions = 0;
};

// One topic's counters as they are served: what was counted before the last refresh (`base`), and
// what the current rules counted since. A refresh reads the range again into fresh rules (`next`),
// which then replace the current ones: what the rules hold follows the range (the events still
// replayable), not every id seen since the watch started, and the counters still only grow.
struct Watcher::TopicCount {
  std::unique_ptr<TopicLog> current;
  std::unique_ptr<TopicLog> next;
  reports::TopicCounters base;
  reports::TopicCounters current_at_start; // what the range itself held when `current` took over
  reports::TopicCounters served() const { return base + (current->counters() - current_at_start); }
};

namespace {

// The policy before anything was asked: Watcher::policy() with no inbox TTL and no retention from the
// broker yet (the members it reads are not built when the state is).
core::WatchPolicy initial_policy(const WatchOptions& options) {
  core::WatchPolicy p;
  p.policy = options.audit.policy;
  p.policy.ttl = options.inbox ? core::TtlDecision{}.span : options.audit.ttl.span;
  p.ttl_declared = options.inbox || options.audit.ttl.span.known();
  p.side_effects = options.audit.side_effects;
  return p;
}

} // namespace

Watcher::Watcher(WatchOptions options, WatchSystems& systems)
    : m_options(std::move(options)), m_systems(systems), m_state(initial_policy(m_options)),
      m_key_template(m_options.inbox ? core::KeyTemplate::parse("{event_id}") : m_options.audit.key_template),
      m_progress(systems.steady_ms()) {
  core::IdentifyOptions identify = m_options.identify;
  identify.extra = core::joint_fields(m_key_template, m_options.effects_template);
  m_effects_template = core::after_fields_of(m_key_template, m_options.effects_template);
  m_identifier = std::make_unique<core::Identifier>(identify);
  m_injectivity = m_key_template.event_id_injectivity();
  m_check_collisions = m_injectivity != core::KeyTemplate::Injectivity::Injective;
  m_up[WatchSystem::Kafka] = false;
  m_up[store_system()] = false;
  if (m_options.audit.effects) {
    m_up[WatchSystem::Effects] = false;
  }
  if (m_options.identify.decoder) {
    m_up[WatchSystem::Registry] = false; // until a tick decoded what it read (or had nothing to decode)
  }
  for (auto [system, up] : m_up) {
    m_metrics.up[std::string(to_string(system))] = up;
  }
}

Watcher::~Watcher() = default;

void Watcher::tick() {
  std::int64_t now = m_systems.now_ms();
  if (m_systems.steady_ms() < m_retry_at_ms) { // backing off after a failure
    publish(now, m_up[WatchSystem::Kafka], m_up[store_system()]);
    return;
  }
  bool kafka_up = resolve(now);
  bool store_up = kafka_up && open_store(now);
  if (kafka_up && store_up) {
    try {
      read_arrivals();
      if (m_refresh_due || now - m_last_refresh_ms >= m_options.refresh_ms) {
        refresh();
      }
      if (m_options.identify.decoder) {
        note_change(WatchSystem::Registry, true, "");
      }
    } catch (const core::SchemaSourceUnreachableError& e) {
      // The events could not be identified: no gauge until the registry answers (backing off as
      // for the brokers, whose reading starts again where it stood).
      note_change(WatchSystem::Registry, false, e.what());
      kafka_up = false;
    } catch (const UnreachableError& e) {
      // Which side failed: a lookup's error names the store; otherwise the brokers.
      if (m_in_lookup) {
        store_down(e.what(), m_in_effects_lookup ? std::optional(WatchSystem::Effects) : std::nullopt);
        m_in_lookup = m_in_effects_lookup = false;
        store_up = false;
      } else {
        note_change(WatchSystem::Kafka, false, e.what());
        kafka_up = false;
      }
    }
  }
  // A system that failed is asked again after the interval, then twice as long each time it fails
  // again, up to k_max_backoff_ms.
  if (kafka_up && store_up) {
    m_backoff_ms = 0;
  } else {
    m_backoff_ms = std::min<std::int64_t>(k_max_backoff_ms, std::max(m_options.interval_ms, 2 * m_backoff_ms));
    m_retry_at_ms = m_systems.steady_ms() + m_backoff_ms - m_options.interval_ms;
  }
  publish(m_systems.now_ms(), kafka_up, store_up);
}

std::string Watcher::render(reports::MetricsFormat format) const {
  std::lock_guard lock(m_mutex);
  return reports::render_metrics(m_metrics, format);
}

reports::WatchMetrics Watcher::metrics() const {
  std::lock_guard lock(m_mutex);
  return m_metrics;
}

// The policy as decided so far: the flags', the retention once the broker told it, an inbox's TTL
// once the inbox was opened.
core::WatchPolicy Watcher::policy() const {
  core::WatchPolicy p;
  p.policy = m_options.audit.policy;
  p.policy.ttl = m_options.inbox ? m_ttl.span : m_options.audit.ttl.span;
  p.ttl_declared = m_options.inbox || m_options.audit.ttl.span.known();
  if (m_retention_asked) {
    p.policy.retention = m_retention_decision.span;
    p.policy.compacted = m_retention_decision.compacted;
  }
  p.side_effects = m_options.audit.side_effects;
  p.effects = m_options.audit.effects;
  return p;
}

// Says on stderr when a system goes down or answers again (not at the first answer).
void Watcher::note_change(WatchSystem system, bool up, const std::string& why) {
  bool seen = m_seen.count(system) != 0;
  if (!up && (!seen || m_up[system])) {
    m_systems.note(fmt::format("{} down: {}", to_string(system), why));
  } else if (up && seen && !m_up[system]) {
    m_systems.note(fmt::format("{} answers again", to_string(system)));
  }
  m_seen.insert(system);
  m_up[system] = up;
}

void Watcher::store_down(const std::string& why, std::optional<WatchSystem> system) {
  note_change(system.value_or(store_system()), false, why);
  m_store.reset(); // reconnected at the next tick, and every record looked up again
  m_effects.reset();
  m_probe.reset();
  m_records_current = false;
  m_refresh_due = true;
}

// The partitions' watermarks and committed offsets, and where each seek falls (one resolution); false
// when the brokers do not answer.
bool Watcher::resolve(std::int64_t now) {
  try {
    WatchRange range = m_systems.resolve(now);
    m_ranges.clear();
    for (const auto& partition : range.partitions) {
      if (m_options.shard && !m_options.shard->owns(partition.partition)) {
        continue;
      }
      m_ranges.push_back(partition);
      m_state.set_partition(partition.topic, partition.partition, partition.committed, partition.from);
    }
    m_seeks = std::move(range.seeks);
    if (!m_retention_asked || (!m_retention_unknown.empty() && now - m_retention_asked_ms >= m_options.refresh_ms)) {
      decide_retention(now);
    }
    note_change(WatchSystem::Kafka, true, "");
    return true;
  } catch (const UnreachableError& e) {
    note_change(WatchSystem::Kafka, false, e.what());
    return false;
  }
}

// Asks the broker for the topics' retention: at the start, then at every --refresh while a topic's is
// unknown (an ACL granted later, a broker that did not answer in time). Each topic's reason is said
// once, and again only when it changes; a retention that becomes known is said too.
void Watcher::decide_retention(std::int64_t now) {
  const auto& flag = m_options.audit.policy.retention;
  auto broker = m_systems.topic_configs(m_options.topics);
  auto decision = core::decide_retention(flag, m_options.topics, broker.get(), m_options.retention_origin);
  bool changed = !m_retention_asked || decision.span != m_retention_decision.span ||
                 decision.compacted != m_retention_decision.compacted;
  m_retention_decision = decision;
  m_retention_asked = true;
  m_retention_asked_ms = now;
  for (const auto& topic : m_options.topics) {
    auto one = core::decide_retention(flag, {topic}, broker.get(), m_options.retention_origin);
    m_retention[topic] = {seconds_of(one.span), std::string(core::report_name(one.source))};
    auto unknown = m_retention_unknown.find(topic);
    if (one.source == core::RetentionSource::Unknown) {
      std::string why = broker->why(topic);
      if (unknown == m_retention_unknown.end() || unknown->second != why) {
        m_systems.note(fmt::format("the retention of {} is unknown ({}); pass --retention", topic, why));
        m_retention_unknown[topic] = why;
      }
    } else if (unknown != m_retention_unknown.end()) {
      m_systems.note(
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
bool Watcher::open_store(std::int64_t now, bool reconnecting) {
  try {
    if (!m_store) {
      auto opened = m_systems.open_store(now);
      if (opened.failure) {
        if (opened.effects_failed) {
          note_change(store_system(), true, ""); // the store opened; its effects did not
        }
        store_down(*opened.failure, opened.effects_failed ? std::optional(WatchSystem::Effects) : std::nullopt);
        return false;
      }
      m_store = std::move(opened.store);
      m_effects = std::move(opened.effects);
      if (opened.inbox_ttl) {
        m_ttl = *opened.inbox_ttl;
        m_state.set_policy(policy());
      }
      m_refresh_due = true;
    }
    if (auto probe = m_store->probe()) {
      if (m_probe && core::keyspace_lost_records(*m_probe, *probe)) {
        bool another = m_probe->incarnation != probe->incarnation;
        m_systems.note(
            fmt::format("{}: the keyspace changed ({}); looking every record up again", to_string(store_system()),
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
    note_change(store_system(), true, "");
    if (m_effects) {
      note_change(WatchSystem::Effects, true, "");
    }
    return true;
  } catch (const UnreachableError& e) {
    store_down(e.what());
    return false;
  }
}

std::vector<core::PartitionPlan> Watcher::plans(bool arrivals) const {
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

void Watcher::read_arrivals() {
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

void Watcher::refresh() {
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
  m_last_refresh_ms = m_systems.now_ms();
  m_refresh_due = false;
  m_records_current = true;
  std::lock_guard lock(m_mutex);
  m_metrics.last_refresh_seconds = static_cast<double>(m_last_refresh_ms) / 1000.0;
}

std::unique_ptr<Watcher::TopicLog> Watcher::make_log() const {
  core::LogAnalyzerOptions options;
  options.semantic_window_ms = m_options.semantic_window_ms;
  options.max_examples = 0;
  return std::make_unique<TopicLog>(options, m_systems);
}

// The rules an event goes to: an arrival's topic's current ones, a refresh's next ones.
Watcher::TopicLog& Watcher::topic_log(std::string_view topic, bool arrivals) {
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

// Reads the plans, looks every event's record up and adds the events (arrivals) or updates them (a
// refresh). An arrival is counted by the log analyzers only once its lookup succeeded, so that a
// batch read again after a failure is not counted twice.
void Watcher::read(std::vector<core::PartitionPlan> todo, bool arrivals) {
  auto source = m_systems.read(std::move(todo));
  core::EventBatch batch;
  std::int64_t started_ms = m_systems.steady_ms();
  std::int64_t keys_looked_up = 0;
  while (source->next_batch(batch)) {
    // A refresh looks up at most --refresh-rate keys a second, so that it does not load the store the
    // consumers write to.
    if (!arrivals && m_options.refresh_rate > 0) {
      std::int64_t due_ms = started_ms + keys_looked_up * 1000 / m_options.refresh_rate;
      while (m_systems.steady_ms() < due_ms && !m_systems.stopping()) {
        m_systems.sleep_ms(std::min<std::int64_t>(20, due_ms - m_systems.steady_ms()));
      }
    }
    m_progress = m_systems.steady_ms();
    m_identifier->identify(batch, m_identities);
    core::render_batch_keys(m_key_template, batch, m_identities, m_options.consumer, m_keys, m_key_of);
    keys_looked_up += static_cast<std::int64_t>(m_keys.size());
    auto started = std::chrono::steady_clock::now();
    m_in_lookup = true;
    m_store->lookup(m_keys, m_records);
    if (m_effects) {
      core::render_batch_keys(m_effects_template, batch, m_identities, m_options.consumer, m_effect_keys,
                              m_effect_key_of);
      m_in_effects_lookup = true;
      m_effects->lookup(m_effect_keys, m_effects_present);
      m_in_effects_lookup = false;
    }
    m_in_lookup = false;
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    observe_batch(batch, arrivals, m_systems.now_ms());
    std::lock_guard lock(m_mutex);
    m_metrics.lookup_seconds.observe(seconds);
  }
}

// Each event of a batch whose records were looked up at `looked_up_at`: tracked in the state, and
// through its topic's log rules.
void Watcher::observe_batch(const core::EventBatch& batch, bool arrivals, std::int64_t looked_up_at) {
  core::CoveragePolicy policy = m_state.policy().policy;
  core::CoveragePolicy at_lookup = policy;
  at_lookup.now_ms = looked_up_at;
  for (std::size_t i = 0; i < batch.events.size(); ++i) {
    const auto& event = batch.events[i];
    const auto& identity = m_identities[i];
    core::TrackedRecord tracked{core::TrackedRecord::Kind::NoId, core::k_never_ms};
    if (m_key_of[i] != SIZE_MAX) {
      const auto& record = m_records[m_key_of[i]];
      tracked = core::track(record, looked_up_at, policy);
      if (m_effects) {
        tracked.effect = core::effect_at(m_effect_key_of, m_effects_present, i);
      }
      // The key's TTL, or the library's own expiration where its record carries one.
      if (auto left = record.kind == core::RecordState::Kind::Present && !record.processed_at_ms
                          ? core::remaining_ms(record, at_lookup)
                          : std::nullopt) {
        m_state.observe_ttl(*left, event.timestamp_ms, looked_up_at);
      }
    }
    std::string topic(event.topic);
    TopicLog& log = topic_log(event.topic, arrivals);
    log.log->observe(event, identity);
    if (m_check_collisions && m_key_of[i] != SIZE_MAX && core::key_may_collide(m_injectivity, identity.id) &&
        log.key_owners.collides(m_keys[m_key_of[i]], identity.id_hash)) {
      ++log.key_collisions;
    }
    if (arrivals) {
      m_state.append(topic, event.partition, event.offset, event.timestamp_ms, identity.type, tracked);
    } else {
      m_state.update(topic, event.partition, event.offset, tracked);
    }
  }
}

void Watcher::publish(std::int64_t now, bool kafka_up, bool store_up) {
  core::WatchGauges gauges;
  bool registry_up = !m_up.count(WatchSystem::Registry) || m_up.at(WatchSystem::Registry);
  bool visible = kafka_up && store_up && registry_up && m_records_current;
  if (visible) {
    gauges = m_state.evaluate(now, m_seeks);
  }
  std::lock_guard lock(m_mutex);
  m_metrics.gauges = std::move(gauges);
  m_metrics.up.clear();
  for (auto [system, up] : m_up) {
    m_metrics.up[std::string(to_string(system))] = up;
  }
  m_metrics.retention = m_retention;
  for (const auto& [topic, count] : m_logs) {
    m_metrics.counters[topic] = m_caught_up ? count.served() : reports::TopicCounters{};
  }
  for (const auto& topic : m_options.topics) {
    m_metrics.counters.try_emplace(topic);
  }
  m_metrics.ttl = {};
  if (m_options.inbox) {
    m_metrics.ttl = {seconds_of(m_ttl.span), std::string(core::report_name(m_ttl.source))};
  } else if (m_options.audit.ttl.span.known()) {
    m_metrics.ttl = {seconds_of(m_options.audit.ttl.span), "flag"};
  } else if (visible && m_metrics.gauges.ttl_estimate_high_ms) {
    m_metrics.ttl = {static_cast<double>(*m_metrics.gauges.ttl_estimate_high_ms) / 1000.0, "estimate"};
  }
  m_metrics.events_held = m_state.events();
  m_metrics.bytes_held = static_cast<std::int64_t>(m_state.bytes());
  m_progress = m_systems.steady_ms();
}

} // namespace dedupctl::commands
