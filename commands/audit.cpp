#include "commands/pipeline/audit.hpp"
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "connectors/file/snapshot_store.hpp"
#include "connectors/kafka/kafka.hpp"
#include "connectors/redis/redis.hpp"
#include "core/errors.hpp"
#include "core/retention.hpp"
#include "core/store_uri.hpp"
#include "core/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

// DescribeConfigs gets a short leash: the audit can go on without it (retention unknown).
constexpr std::int64_t k_describe_timeout_ms = 3000;

// The admin path: DescribeConfigs through the Kafka connector.
class BrokerTopicConfigs final : public TopicConfigs {
public:
  explicit BrokerTopicConfigs(const Context& context) : m_context(context) {}
  std::optional<core::TopicRetention> retention(const std::string& topic) override {
    return connectors::kafka::describe_retention(kafka_settings(m_context), topic, k_describe_timeout_ms);
  }

private:
  const Context& m_context;
};

struct AuditOptions {
  SourceOptions source;
  IdentityOptions identity;
  PlacementOptions placement;
  std::string seek;
  std::string window = "5m";
  std::size_t examples = 5;
};

int run(const AuditOptions& options, Context& context) {
  auto format = parse_output_format(context);
  AuditRequest request;
  request.fail_on = core::parse_fail_on(context.global.fail_on);
  request.fail_on_text = context.global.fail_on;
  request.identify = parse_identity(options.identity);
  request.analyzer.semantic_window_ms = core::parse_duration(options.window, "--window");
  request.max_examples = options.examples;
  request.has_seek = !options.seek.empty();
  if (request.has_seek && options.source.group.empty()) {
    throw UsageError("--seek needs --group: the replay window is [seek, committed) of that group");
  }
  ParsedPlacement placement = parse_placement(options.placement);
  request.audit = placement.audit;
  request.consumer = options.placement.consumer;
  request.placement.kind = kind_name(placement.uri.kind);
  request.placement.store = placement.uri.redacted();
  request.placement.ttl_source = placement.audit.policy.ttl.known() ? "flag" : "unknown";
  request.placement.retention_source = placement.audit.policy.retention.known() ? "flag" : "unknown";
  if (placement.uri.kind != core::StoreUri::Kind::Redis && placement.uri.kind != core::StoreUri::Kind::File) {
    throw UsageError(fmt::format("--store {}: audit reads redis:// and file: (snapshot) placements; PostgreSQL "
                                 "inboxes are not supported yet",
                                 placement.uri.redacted()));
  }
  // Everything typed was valid: now contact the systems.
  std::unique_ptr<core::DedupStore> store;
  std::int64_t now = context.now_ms();
  if (placement.uri.kind == core::StoreUri::Kind::File) {
    auto snapshot = std::make_unique<connectors::file::SnapshotStore>(placement.uri.path);
    now = snapshot->header().taken_at_ms; // the records are as they were then
    context.note(fmt::format("auditing against snapshot {} taken at {} ({} records)", placement.uri.path,
                             core::format_time(now), snapshot->size()));
    store = std::move(snapshot);
  }
  OpenedSource opened =
      open_source(options.source, context, request.has_seek ? std::optional(options.seek) : std::nullopt);
  std::optional<std::string> failure = opened.failure;
  if (!failure) {
    BrokerTopicConfigs broker(context);
    auto decision = decide_retention(request.audit.policy.retention, opened.info.topics,
                                     opened.info.kind == "kafka" ? &broker : nullptr);
    request.audit.policy.retention = decision.retention;
    request.placement.retention_source = decision.source;
    if (decision.source == "unknown" && !opened.info.topics.empty()) {
      context.note(fmt::format("the retention of {} is unknown (the broker did not answer DescribeConfigs); pass "
                               "--retention to check the TTL against it",
                               opened.info.topics.front()));
    }
  }
  if (!failure && !store) {
    try {
      connectors::redis::RedisSettings settings;
      settings.uri = placement.uri;
      settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
      settings.stop = &context.stop;
      store = connectors::redis::open_store(settings);
    } catch (const UnreachableError& e) {
      failure = e.what();
    }
  }
  if (context.progress) {
    request.progress = [&context](std::int64_t events) { context.progress(fmt::format("audit: {} events", events)); };
  }
  reports::Report report;
  if (failure) {
    report = unreachable_report("audit", *failure, opened.info, context);
    report.placement = request.placement;
  } else {
    note_ranges(opened.info, context);
    report = run_audit(request, *opened.source, *store, opened.info, now);
  }
  return deliver_report(report, opened, format, context);
}

} // namespace

CommandRunner register_audit(CLI::App& app, Context& context) {
  auto options = std::make_shared<AuditOptions>();
  auto* sub = app.add_subcommand("audit", "The log against a dedup placement: coverage, TTL gaps, collisions, replay "
                                          "risk of a seek");
  add_source_options(*sub, options->source);
  add_identity_options(*sub, options->identity);
  add_placement_options(*sub, options->placement);
  auto* audit = sub->add_option_group("Audit");
  audit->add_option("--seek", options->seek, "the reset being considered for --group: the window is [seek, committed)")
      ->type_name("SPEC");
  audit->add_option("--examples", options->examples, "examples kept per finding")->type_name("N");
  audit->add_option("--window", options->window, "how close in time two events must be to be semantic duplicates")
      ->type_name("DURATION");
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "audit";
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
