#pragma once

#include "commands/context.hpp"
#include "connectors/file/kcat_file.hpp"
#include "connectors/kafka/kafka.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/redis/redis.hpp"
#include "core/audit_analyzer.hpp"
#include "core/identify.hpp"
#include "core/replay.hpp"
#include "core/source_info.hpp"
#include "core/store_uri.hpp"
#include "reports/report.hpp"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::commands {

// Where the events come from (spec/cli.md), shared by scan, audit, trace and replay.
struct SourceOptions {
  std::vector<std::string> topics;
  std::string input;
  std::string from = "earliest";
  std::string to = "latest";
  std::string group;
  bool skip_invalid = false;
};

// How an event is identified (spec/cli.md).
struct IdentityOptions {
  std::string id = "header:event_id,json:/event_id";
  std::string type = "header:type,json:/type";
  std::string entity;
  std::string semantic_key;
};

// An inbox table's schema (postgres:// stores), shared by audit and snapshot.
struct InboxOptions {
  std::string table = "processed_events";
  std::string id_column = "event_id";
  std::string consumer_column = "consumer_name";
  std::string time_column = "processed_at";
  std::string status_column;
};
void add_inbox_options(CLI::Option_group& group, InboxOptions& options);

// The dedup placement (spec/cli.md "The placement"), shared by audit, trace and replay.
struct PlacementOptions {
  std::string store;
  std::string key_template = "{event_id}";
  std::string consumer;
  std::string ttl;
  std::string retention;
  std::string max_lag = "0s";
  std::vector<std::string> in_progress_values{"processing", "INPROGRESS"};
  std::string lease = "15m";
  std::vector<std::string> side_effects;
  InboxOptions inbox;
  std::string inbox_retention;
  std::string inbox_lookup = "auto";
};

struct ParsedPlacement {
  core::StoreUri uri;
  core::AuditOptions audit; // ttl (declared, or None), policy (retention, lag, lease, markers), side effects, template
  std::optional<core::Span> inbox_retention; // --inbox-retention
};

void add_source_options(CLI::App& app, SourceOptions& options);
// audit: --store (required) and every flag; replay: --via (optional) and the flags a claim uses.
enum class PlacementUse { Audit, Replay };
void add_placement_options(CLI::App& app, PlacementOptions& options, PlacementUse use = PlacementUse::Audit);
// Throws UsageError naming the flag.
ParsedPlacement parse_placement(const PlacementOptions& options, std::string_view store_flag = "--store");
std::string kind_name(core::StoreUri::Kind kind);
void add_identity_options(CLI::App& app, IdentityOptions& options);

// Parses the identity flags; throws UsageError naming the flag.
core::IdentifyOptions parse_identity(const IdentityOptions& options);

connectors::kafka::KafkaSettings kafka_settings(const Context& context);
// A redis:// store's settings with --timeout and the stop flag.
connectors::redis::RedisSettings redis_settings(const core::StoreUri& uri, const Context& context);
// A postgres:// store's settings: the inbox schema flags, --consumer, --timeout and the stop flag.
connectors::postgres::InboxSettings inbox_settings(const core::StoreUri& uri, const InboxOptions& inbox,
                                                   const std::string& consumer, const Context& context);

// An opened source with the ranges it will read.
struct OpenedSource {
  std::unique_ptr<core::EventSource> source;
  connectors::file::KcatFileSource* file = nullptr; // set for --input sources
  core::SourceInfo info;
  // Set (and `source` null) when the brokers could not be reached while resolving the range.
  std::optional<std::string> failure;
};

// Validates the source flags (UsageError) and opens the source: resolves the Kafka range or opens
// the kcat dump. Brokers that cannot be reached are reported in `failure`, not thrown, so that the
// command can still write its incomplete report.
// With `resume` (a replay's checkpoint), each Kafka partition is read from its checkpointed offset
// instead of the range's start.
OpenedSource open_source(const SourceOptions& options, const Context& context,
                         const std::optional<std::string>& seek = std::nullopt,
                         const core::Checkpoint* resume = nullptr);

// Prints the resolved ranges on stderr, as `topic[partition] from..to (log start..end)`.
void note_ranges(const core::SourceInfo& info, const Context& context);

// The report of a run that could not reach its systems before reading anything: exit 3.
reports::Report unreachable_report(const std::string& command, const std::string& error, const core::SourceInfo& info,
                                   const Context& context);

// The end every command shares: counts skipped input lines, clears the progress line, says the
// error on stderr, writes the report in --format and returns its exit code.
int deliver_report(reports::Report& report, const OpenedSource& opened, reports::Format format, const Context& context);

// --format, refusing before anything is contacted a format no command renders yet (html).
reports::Format parse_output_format(const Context& context);

// Renders the report to --output (or stdout) in --format.
void write_report(const reports::Report& report, reports::Format format, const Context& context);

} // namespace dedupctl::commands
