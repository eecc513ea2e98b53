#pragma once

#include "core/audit/audit_options.hpp"
#include "core/audit/retention.hpp"
#include "core/audit/ttl.hpp"
#include "core/event.hpp"
#include "core/identity/identify.hpp"
#include "core/merge/digest.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/source/partition.hpp"
#include "core/store/dedup_store.hpp"
#include "core/store/effect_store.hpp"
#include "core/watch/watch_state.hpp"
#include "reports/metrics.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

// watch's loop over the systems it watches: every tick resolves the range, reads what arrived, looks
// the records up, refreshes when due, backs off from a system that fails and publishes the gauges.
// Its rules are core/watch's; the systems are behind WatchSystems, so the loop is unit-tested with
// fakes (tests/unit/pipeline/test_watch.cpp) and run over the connectors by commands/watch.cpp.
namespace dedupctl::commands {

// A system watch depends on: the `system` label of dedupctl_up.
// The systems dedupctl_up labels; Effects is --effects' source (a table, Redis keys or an output
// topic), whatever its kind, so that its failure is never taken for the store's or the brokers'.
enum class WatchSystem { Kafka, Redis, Postgres, Registry, Effects };
std::string_view to_string(WatchSystem system);

// What the range is at one tick: each partition's range (watermarks, the group's committed offset,
// where --from falls), and for each --seek (in the order of WatchOptions::seek_names) its offset in
// each partition. One resolution serves them all.
struct WatchRange {
  std::vector<core::PartitionRange> partitions;
  std::vector<core::WatchSeek> seeks;
};

// The topics' retention as the broker describes it, and why a topic has none.
class WatchTopicConfigs : public core::TopicConfigs {
public:
  virtual std::string why(const std::string& topic) const = 0;
};

// A store opened for watch (batched lookups: rows that arrive after a load would never be seen):
// nullptr with `failure` when it cannot be reached; an inbox's TTL (its cleanup's retention).
struct WatchStore {
  std::unique_ptr<core::DedupStore> store;
  std::optional<std::string> failure;
  std::optional<core::TtlDecision> inbox_ttl;
  std::unique_ptr<core::EffectStore> effects; // with --effects: opened with the store, failing with it
  bool effects_failed = false;                // `failure` is the effects source's, not the store's
};

// The systems and the clocks the loop uses. Abstract so that the loop's rules are tested without
// servers (FakeWatchSystems in tests/unit/pipeline/test_watch.cpp); commands/watch.cpp implements
// it over the connectors. Every call that reaches a system throws UnreachableError when it cannot.
class WatchSystems {
public:
  virtual ~WatchSystems() = default;
  // The range from --from to the log end, with every seek. Throws UnreachableError.
  virtual WatchRange resolve(std::int64_t now_ms) = 0;
  // Asks the broker for these topics' configs (one request, on first use).
  virtual std::unique_ptr<WatchTopicConfigs> topic_configs(const std::vector<std::string>& topics) = 0;
  // A reader of these partitions' ranges, in the canonical order. Throws UnreachableError.
  virtual std::unique_ptr<core::EventSource> read(std::vector<core::PartitionPlan> plans) = 0;
  virtual WatchStore open_store(std::int64_t now_ms) = 0;
  // Where the log rules keep what they spill (TMPDIR), attached to `options` for as long as the
  // returned handle lives.
  virtual std::shared_ptr<void> attach_archives(core::LogAnalyzerOptions& options) = 0;
  // The wall clock (the verdicts' now), a steady one (backoff, pacing), sleeping, stopping, notes.
  virtual std::int64_t now_ms() = 0;
  virtual std::int64_t steady_ms() = 0;
  virtual void sleep_ms(std::int64_t ms) = 0;
  virtual bool stopping() = 0;
  virtual void note(std::string_view line) = 0;
};

// What watch was told, parsed (commands/watch.cpp's flags).
struct WatchOptions {
  std::vector<std::string> topics;
  std::vector<std::string> seek_names; // --seek NAME=SPEC, in order
  std::optional<core::ShardSpec> shard;
  core::IdentifyOptions identify;
  core::AuditOptions audit;                      // the key template, the declared TTL, the policy, side effects
  bool inbox = false;                            // the store is a PostgreSQL inbox (keyed by the event id)
  WatchSystem store_system = WatchSystem::Redis; // the store's gauges' system="…" label
  std::string consumer;                          // {consumer} in the key template
  // --effects (audit.effects set): each event's effect looked up by the key this renders.
  core::KeyTemplate effects_template = core::KeyTemplate::parse("{event_id}");
  std::int64_t interval_ms = 5000;
  std::int64_t refresh_ms = 300'000;
  std::int64_t refresh_rate = 0; // keys a second a refresh looks up at most (0: no limit)
  std::int64_t semantic_window_ms = 0;
  core::ValueOrigin retention_origin = core::ValueOrigin::Flag;
};

class Watcher {
public:
  Watcher(WatchOptions options, WatchSystems& systems);
  ~Watcher();
  Watcher(const Watcher&) = delete;
  Watcher& operator=(const Watcher&) = delete;

  // One round: the partitions, what arrived, a refresh when due; then the gauges are published.
  void tick();
  // The latest metrics (the server's thread), and a copy of them.
  std::string render(reports::MetricsFormat format) const;
  reports::WatchMetrics metrics() const;
  // The steady time of the last sign of life (a batch read, a publish), for a health check.
  std::int64_t last_progress_ms() const { return m_progress.load(); }

  // A system that failed is asked again after the interval, then twice as long each time it fails
  // again, up to this (librdkafka's reconnect backoff).
  static constexpr std::int64_t k_max_backoff_ms = 10'000;

private:
  struct TopicCount;
  struct TopicLog;

  core::WatchPolicy policy() const;
  WatchSystem store_system() const { return m_options.store_system; }
  void note_change(WatchSystem system, bool up, const std::string& why);
  void store_down(const std::string& why, std::optional<WatchSystem> system = std::nullopt);
  bool resolve(std::int64_t now);
  void decide_retention(std::int64_t now);
  bool open_store(std::int64_t now, bool reconnecting = false);
  std::vector<core::PartitionPlan> plans(bool arrivals) const;
  void read_arrivals();
  void refresh();
  std::unique_ptr<TopicLog> make_log() const;
  TopicLog& topic_log(std::string_view topic, bool arrivals);
  void read(std::vector<core::PartitionPlan> todo, bool arrivals);
  void observe_batch(const core::EventBatch& batch, bool arrivals, std::int64_t looked_up_at);
  void publish(std::int64_t now, bool kafka_up, bool store_up);

  WatchOptions m_options;
  WatchSystems& m_systems;
  core::WatchState m_state;
  core::KeyTemplate m_key_template;
  core::KeyTemplate m_effects_template; // rendered from the same extra values as m_key_template
  std::unique_ptr<core::Identifier> m_identifier;
  core::KeyTemplate::Injectivity m_injectivity = core::KeyTemplate::Injectivity::Injective;
  bool m_check_collisions = false;
  std::vector<core::PartitionRange> m_ranges;
  std::vector<core::WatchSeek> m_seeks;
  std::map<std::string, TopicCount, std::less<>> m_logs;
  std::unique_ptr<core::DedupStore> m_store;
  std::unique_ptr<core::EffectStore> m_effects;
  std::vector<std::string> m_effect_keys;
  std::vector<std::size_t> m_effect_key_of;
  std::vector<std::uint8_t> m_effects_present;
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
  bool m_in_effects_lookup = false;
  std::int64_t m_backoff_ms = 0;
  std::int64_t m_retry_at_ms = 0; // steady clock
  std::int64_t m_last_refresh_ms = 0;
  std::map<WatchSystem, bool> m_up;
  std::set<WatchSystem> m_seen; // systems asked once at least
  std::vector<core::Identity> m_identities;
  std::vector<std::string> m_keys;
  std::vector<std::size_t> m_key_of;
  std::vector<core::RecordState> m_records;
  std::atomic<std::int64_t> m_progress{0};
  mutable std::mutex m_mutex;
  reports::WatchMetrics m_metrics;
};

} // namespace dedupctl::commands
