#include "commands/pipeline/watch.hpp"
#include "commands/context.hpp"
#include "commands/effects.hpp"
#include "commands/options.hpp"
#include "commands/placement/family.hpp"
#include "commands/settings.hpp"
#include "commands/source.hpp"
#include "connectors/file/key_archive.hpp"
#include "connectors/http/server.hpp"
#include "connectors/kafka/kafka.hpp"
#include "connectors/schema/source.hpp"
#include "core/audit/retention.hpp"
#include "core/identity/identify.hpp"
#include "core/merge/digest.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/source/offset_spec.hpp"
#include "core/store/secrets.hpp"
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
  EffectsFlags effects;
  std::vector<std::string> seeks;
  std::string listen = "127.0.0.1:9464";
  std::string web_config;
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
  std::optional<connectors::http::WebConfig> web; // --web-config, read and checked
  std::int64_t semantic_window_ms = 0;
  std::int64_t refresh_rate = 0; // keys a second a refresh looks up at most (0: no limit)
  std::optional<EffectsOptions> effects;
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
  if (!flags.placement.store.empty()) {
    // Before its layout is asked for: a kind watch cannot read is refused for that first.
    placement::require(core::parse_store_uri(flags.placement.store), placement::StoreUse::Watch);
  }
  config.placement = parse_placement(flags.placement, context);
  refuse_version_guard(config.placement, "watch");
  config.effects = parse_effects(flags.effects);
  config.placement.audit.effects = config.effects.has_value();
  for (const auto& seek : flags.seeks) {
    if (flags.group.empty()) {
      throw UsageError("--seek needs --group: the window a seek would re-apply is [seek, committed) of that group");
    }
    config.seeks.emplace_back(seek, core::parse_offset_spec(seek, "--seek"));
  }
  config.refresh_ms = core::parse_duration(flags.refresh, "--refresh");
  if (!flags.web_config.empty()) {
    config.web = connectors::http::load_web_config(flags.web_config);
  }
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

std::int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// BrokerTopicConfigs as the loop asks for it.
class BrokerWatchConfigs final : public WatchTopicConfigs {
public:
  BrokerWatchConfigs(const connectors::kafka::KafkaSettings& settings, std::vector<std::string> topics)
      : m_broker(settings, std::move(topics)) {}
  std::optional<core::TopicRetention> retention(const std::string& topic) override { return m_broker.retention(topic); }
  std::string why(const std::string& topic) const override { return m_broker.why(topic); }

private:
  BrokerTopicConfigs m_broker;
};

// The systems the loop watches, over the connectors: the brokers, the store the flags name, TMPDIR.
class ConnectedSystems final : public WatchSystems {
public:
  ConnectedSystems(const WatchConfig& config, Context& context)
      : m_config(config), m_context(context), m_kafka(reader_settings(false, context)) {
    m_kafka.stop = &context.stop;
  }

  // The watched range now: from --from to the end, with the seeks.
  connectors::kafka::ResolvedRange resolve_watched(std::int64_t now) {
    connectors::kafka::RangeRequest request;
    request.topics = m_config.topics;
    request.from = m_config.from;
    request.to = core::parse_offset_spec("latest", "--to");
    request.group = m_config.group;
    request.now_ms = now;
    for (const auto& [name, spec] : m_config.seeks) {
      request.seeks.push_back(spec);
    }
    return connectors::kafka::resolve_range(m_kafka, request);
  }

  WatchRange resolve(std::int64_t now) override {
    auto resolved = resolve_watched(now);
    WatchRange out;
    out.partitions = std::move(resolved.info.partitions);
    for (std::size_t k = 0; k < m_config.seeks.size(); ++k) {
      core::WatchSeek seek{m_config.seeks[k].first, {}};
      for (std::size_t i = 0; i < out.partitions.size(); ++i) {
        seek.offsets[{out.partitions[i].topic, out.partitions[i].partition}] = resolved.seek_offsets[k][i];
      }
      out.seeks.push_back(std::move(seek));
    }
    return out;
  }

  std::unique_ptr<WatchTopicConfigs> topic_configs(const std::vector<std::string>& topics) override {
    return std::make_unique<BrokerWatchConfigs>(m_kafka, topics);
  }

  std::unique_ptr<core::EventSource> read(std::vector<core::PartitionPlan> plans) override {
    return connectors::kafka::open_reader(m_kafka, std::move(plans));
  }

  WatchStore open_store(std::int64_t now) override {
    PlacementOptions placement = m_config.placement;
    placement.inbox_lookup = connectors::postgres::InboxLookup::Batches; // rows that arrive after a load would never
                                                                         // be seen
    auto opened = family(placement.uri.kind).read(placement, m_context, std::nullopt);
    WatchStore out;
    out.failure = opened.failure;
    if (opened.inbox) {
      out.inbox_ttl = decide_inbox_ttl(*opened.inbox, m_config.placement.inbox_retention, now, m_context);
    }
    out.store = std::move(opened.store);
    if (!out.failure && m_config.effects) {
      // Batched, as the store: effects that arrive after a load would never be seen. An output topic
      // is read from the watched range's earliest event on, and followed.
      try {
        std::vector<core::PartitionPlan> plans;
        if (m_config.effects->placement.kind == reports::EffectsKind::Kafka) {
          plans = resolve_watched(now).plans;
        }
        auto effects = open_effects(*m_config.effects, m_context, std::nullopt, true, &plans);
        out.failure = effects.failure;
        out.effects_failed = effects.failure.has_value();
        out.effects = std::move(effects.store);
      } catch (const UnreachableError& e) {
        out.failure = e.what();
        out.effects_failed = true;
      }
    }
    return out;
  }

  std::shared_ptr<void> attach_archives(core::LogAnalyzerOptions& options) override {
    auto archives = std::make_shared<connectors::file::AnalyzerArchives>(false);
    archives->attach(options);
    return archives;
  }

  std::int64_t now_ms() override { return m_context.now_ms(); }
  std::int64_t steady_ms() override { return commands::steady_ms(); }
  void sleep_ms(std::int64_t ms) override { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
  bool stopping() override { return m_context.stop.load(); }
  void note(std::string_view line) override { m_context.note(line); }

private:
  const WatchConfig& m_config;
  Context& m_context;
  connectors::kafka::KafkaSettings m_kafka;
};

// The loop's options from the flags.
WatchOptions watch_options(const WatchConfig& config, const PlacementFlags& placement_flags) {
  WatchOptions options;
  for (const auto& topic : config.topics) {
    options.topics.push_back(topic.topic);
  }
  for (const auto& [name, spec] : config.seeks) {
    options.seek_names.push_back(name);
  }
  options.shard = config.shard;
  options.identify = config.identify;
  options.audit = config.placement.audit;
  const auto& row = placement::family_row(config.placement.uri.kind);
  options.inbox = row.keyed_by_event_id;
  options.store_system = row.watch_system.value_or(WatchSystem::Redis);
  options.consumer = placement_flags.consumer;
  if (config.effects) {
    options.effects_template = config.effects->key_template;
  }
  options.interval_ms = config.interval_ms;
  options.refresh_ms = config.refresh_ms;
  options.refresh_rate = config.refresh_rate;
  options.semantic_window_ms = config.semantic_window_ms;
  options.retention_origin = config.placement.retention_origin;
  return options;
}

// Sleeps until `deadline_ms` (steady), waking for a stop or a reload.
void wait_until(std::int64_t deadline_ms, const Context& context) {
  while (steady_ms() < deadline_ms && !context.stop.load() && !context.reload.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A password typed into --store or --effects stays in ps and /proc/PID/cmdline, readable by every
// user of the machine, for as long as watch runs: said once at the start, as redis-cli says it.
void warn_of_typed_passwords(const WatchFlags& flags, const Context& context) {
  for (const auto& [option, uri] : {std::pair<std::string, std::string>{"store", flags.placement.store},
                                    std::pair<std::string, std::string>{"effects", flags.effects.uri}}) {
    if (!uri.empty() && context.origin_of(option) == core::ValueOrigin::Flag && core::redact_secrets(uri) != uri) {
      print_stderr(fmt::format(
          "Warning: the password in --{} is visible to every user of this machine (ps, /proc) for as long as watch "
          "runs; give it with --redis-password-file or --redis-password-command (or REDISCLI_AUTH) for Redis, a "
          "~/.pgpass file or PGPASSFILE for PostgreSQL, or put the URI in the config file\n",
          option));
    }
  }
}

int run(const WatchFlags& flags, Context& context) {
  WatchConfig config = parse_flags(flags, context);
  if (context.validate_only) {
    return 0;
  }
  warn_of_typed_passwords(flags, context);
  std::int64_t interval = config.interval_ms;
  ConnectedSystems systems(config, context);
  Watcher watcher(watch_options(config, flags.placement), systems);
  std::int64_t stale_after = std::max<std::int64_t>(60'000, 3 * interval);
  connectors::http::Server server(
      flags.listen,
      [&](std::string_view path, std::string_view accept) {
        if (path == "/metrics") {
          auto format = reports::negotiate_metrics_format(accept);
          return connectors::http::Response{200, std::string(reports::content_type(format)), watcher.render(format)};
        }
        if (path == "/healthz") {
          bool alive = steady_ms() - watcher.last_progress_ms() < stale_after;
          return connectors::http::Response{alive ? 200 : 503, "text/plain; charset=utf-8",
                                            alive ? "ok\n" : "stalled\n"};
        }
        return connectors::http::Response{404, "text/plain; charset=utf-8", "not found: try /metrics or /healthz\n"};
      },
      config.web ? &*config.web : nullptr);
  context.note(fmt::format("watch: serving /metrics and /healthz on {} (port {}{}{})", flags.listen, server.port(),
                           config.web && config.web->tls ? ", TLS" : "",
                           config.web && !config.web->basic_auth_users.empty() ? ", basic auth" : ""));
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
  add_effects_options(*sub, flags->effects);
  auto* watch = sub->add_option_group("Watch");
  watch->add_option("--seek", flags->seeks, "a reset to price continuously for --group (repeatable)")
      ->type_name("SPEC");
  watch
      ->add_option("--listen", flags->listen,
                   "where /metrics and /healthz are served: HOST:PORT, :PORT for every "
                   "address")
      ->type_name("HOST:PORT");
  watch
      ->add_option("--web-config", flags->web_config,
                   "TLS and basic auth for /metrics, in the web configuration file Prometheus' exporters take "
                   "(tls_server_config, basic_auth_users); read again on SIGHUP")
      ->type_name("FILE");
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
