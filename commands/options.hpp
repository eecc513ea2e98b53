#pragma once

#include "commands/context.hpp"
#include "commands/placement/options.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/schema/source.hpp"
#include "core/audit/audit_analyzer.hpp"
#include "core/identity/identify.hpp"
#include "core/merge/digest.hpp"
#include "core/replay/replay.hpp"
#include "core/scan/version_analyzer.hpp"
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
  std::string version; // --version (scan and audit): a version guard's version
  std::string version_order = "numeric";
  // Payloads and keys in a schema registry's wire format: the registry, or an export of it.
  std::string registry;
  std::string registry_ca;
  std::string registry_user_info_file;
  std::string registry_token_file;
  std::string schemas;
};

void add_source_options(CLI::App& app, SourceFlags& options);
void add_identity_options(CLI::App& app, IdentityFlags& options);
// --version and --version-order (scan, audit): a version guard checked against the log.
void add_version_options(CLI::App& app, IdentityFlags& options);
// --version's order, when --version is given (it needs --entity; `sharded`: refused, a merge of
// shards does not carry the entities' versions); nullopt without it.
std::optional<core::VersionOrder> parse_version_options(const IdentityFlags& options, bool sharded);
// --layout version-guard or state-guard (`placement`): the order the guard's walk compares by, checked
// against what the guard needs, --entity and --version for a version guard, --entity and no --version
// for a state guard (its walk follows the events' types). `how` names the flag in errors ("--layout",
// "--via --layout"); `sharded` as above.
core::VersionOrder guard_order(const IdentityFlags& options, const PlacementOptions& placement, std::string_view how,
                               bool sharded);
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

// --format, refusing before anything is contacted a format no command renders yet (html).
reports::Format parse_output_format(const Context& context);

// Calls visit(option) for every option of `app` and of its option groups (nameless sub-apps in
// CLI11), not those of its subcommands.
void for_each_own_option(const CLI::App& app, const std::function<void(const CLI::Option&)>& visit);

} // namespace dedupctl::commands
