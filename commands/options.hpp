#pragma once

#include "commands/context.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/schema/source.hpp"
#include "core/audit/audit_analyzer.hpp"
#include "core/identity/identify.hpp"
#include "core/merge/digest.hpp"
#include "core/replay/replay.hpp"
#include "core/source/source_info.hpp"
#include "core/store/inbox_schema.hpp"
#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"
#include "reports/report.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::commands {

// Where the events come from (dedupctl(1)), shared by scan, audit, trace and replay.
struct SourceFlags {
  std::vector<std::string> topics;
  std::string input;
  std::string from = "earliest";
  std::string to = "latest";
  std::string group;
  bool skip_invalid = false;
  bool read_uncommitted = false;        // aborted transactions too (forensics); read_committed otherwise
  std::optional<core::ShardSpec> shard; // --shard K/N (scan, audit): only partitions p with p mod N = K
};

// --shard and --digest (scan, audit): one shard of a run that dedupctl merge puts together.
struct ShardFlags {
  std::string shard;  // K/N
  std::string digest; // FILE
  std::string now;    // TIME: the run's clock, which every shard of an audit must share
};
void add_shard_options(CLI::App& app, ShardFlags& options);
// Parses --shard into `source` and --now into the context's clock (UsageError); --shard needs
// --digest, which alone means 0/1; an audit of several shards needs --now (`needs_now`).
void apply_shard_options(const ShardFlags& options, SourceFlags& source, Context& context, bool needs_now);

// How an event is identified (dedupctl(1)).
struct IdentityFlags {
  std::string id = "header:event_id,json:/event_id";
  std::string type = "header:type,json:/type";
  std::string entity;
  std::string semantic_key;
  // Payloads and keys in a schema registry's wire format: the registry, or an export of it.
  std::string registry;
  std::string registry_ca;
  std::string registry_user_info_file;
  std::string registry_token_file;
  std::string schemas;
};

// An inbox table's schema (postgres:// stores), shared by audit and snapshot.
struct InboxFlags {
  std::string table = core::InboxSchema().table;
  std::string id_column = core::InboxSchema().id_column;
  std::string consumer_column = core::InboxSchema().consumer_column;
  std::string time_column = core::InboxSchema().time_column;
  std::string status_column = core::InboxSchema().status_column;
};
void add_inbox_options(CLI::Option_group& group, InboxFlags& options);

// The dedup placement (man dedupctl-audit, "The placement"), shared by audit, trace and replay.
struct PlacementFlags {
  std::string store;
  std::optional<std::string> key_template; // absent: the layout's ({event_id} for plain)
  std::string layout = "plain";
  std::string key_prefix;
  std::string collection;
  std::vector<std::string> layout_options;
  std::string consumer;
  std::string ttl;
  std::string retention;
  std::string max_lag = "0s";
  std::vector<std::string> in_progress_values{"processing", "INPROGRESS"};
  std::string lease = "15m";
  std::vector<std::string> side_effects;
  InboxFlags inbox;
  std::string inbox_retention;
  std::string inbox_lookup = "auto";
};

struct PlacementOptions {
  core::StoreUri uri;
  core::RecordLayout layout; // --layout, with its --layout-option
  std::string collection;    // one-key layouts: the key their records live under, as the server holds it
  core::AuditOptions audit;  // ttl (declared, or None), policy (retention, lag, lease, markers), side effects, template
  std::optional<core::Span> inbox_retention;                    // --inbox-retention
  core::ValueOrigin retention_origin = core::ValueOrigin::Flag; // of policy.retention, when given
  connectors::postgres::InboxLookup inbox_lookup = connectors::postgres::InboxLookup::Auto; // --inbox-lookup
};

void add_source_options(CLI::App& app, SourceFlags& options);
// audit: --store (required) and every flag; replay: --via (optional) and the flags a claim uses.
enum class PlacementUse { Audit, Replay };
void add_placement_options(CLI::App& app, PlacementFlags& options, PlacementUse use = PlacementUse::Audit);
// Throws UsageError naming the flag.
// `context` says where the TTL and retention came from (flag, config, environment).
PlacementOptions parse_placement(const PlacementFlags& options, const Context& context,
                                 std::string_view store_flag = "--store");
std::string kind_name(core::StoreUri::Kind kind);
// The report's placement as the flags name it: kind, store (redacted), layout and collection.
reports::PlacementInfo placement_info(const PlacementOptions& placement, const PlacementFlags& options);
void add_identity_options(CLI::App& app, IdentityFlags& options);
// The schema registry's flags alone (add_identity_options adds them too); `directory`: --schemas too.
void add_registry_options(CLI::App& app, IdentityFlags& options, bool directory = true);
// --examples N: 0 to k_max_examples examples kept per finding (each is held in memory and printed).
inline constexpr std::size_t k_max_examples = 1000;
void add_examples_option(CLI::Option_group& group, std::size_t& examples);

// Parses the identity flags, with a decoder when --registry or --schemas is given (nothing is
// contacted yet); throws UsageError naming the flag.
// The registry's secrets join context.secrets, so that no output shows them.
core::IdentifyOptions parse_identity(const IdentityFlags& options, Context& context);
// How the identify stage decodes payloads, for the report's source ("" without a decoder).
inline std::string decoding_of(const core::IdentifyOptions& identify) {
  return identify.decoder ? identify.decoder->describe() : std::string();
}
// The registry's settings from the flags and the environment (DEDUPCTL_REGISTRY_USER_INFO,
// DEDUPCTL_REGISTRY_TOKEN), files read; nullopt without --registry.
std::optional<connectors::schema::RegistrySettings> registry_settings(const IdentityFlags& options, Context& context);

// --format, refusing before anything is contacted a format no command renders yet (html).
reports::Format parse_output_format(const Context& context);

// Calls visit(option) for every option of `app` and of its option groups (nameless sub-apps in
// CLI11), not those of its subcommands.
void for_each_own_option(const CLI::App& app, const std::function<void(const CLI::Option&)>& visit);

} // namespace dedupctl::commands
