#pragma once

// The dedup placement's flags (man dedupctl-audit, "The placement") and their parsing into
// PlacementOptions, which is all a store family is handed.
#include "commands/context.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "core/audit/audit_analyzer.hpp"
#include "core/scan/version_analyzer.hpp"
#include "core/store/inbox_schema.hpp"
#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"
#include "reports/report.hpp"

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::commands {

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
  std::string flag = "--store"; // the flag that named the store (--via for replay)
  bool given = false;           // a store was named (a replay without --via has none)
  core::RecordLayout layout;    // --layout, with its --layout-option
  std::string collection;       // one-key layouts: the key their records live under, as the server holds it
  core::AuditOptions audit; // ttl (declared, or None), policy (retention, lag, lease, markers), side effects, template
  std::optional<core::Span> inbox_retention;                    // --inbox-retention
  core::ValueOrigin retention_origin = core::ValueOrigin::Flag; // of policy.retention, when given
  connectors::postgres::InboxLookup inbox_lookup = connectors::postgres::InboxLookup::Auto; // --inbox-lookup
  InboxFlags inbox;     // an inbox's table and columns as given (a layout's own unless a flag says otherwise)
  std::string consumer; // --consumer
  // A version guard's (--layout version-guard): --version-order, which its version column must fit.
  core::VersionOrder version_order = core::VersionOrder::Numeric;
  // A state guard's (--layout state-guard): its transitions, read from --layout-option transitions=FILE.
  std::shared_ptr<const core::TransitionTable> transitions;
};

// --layout version-guard and state-guard are read by audit and replay --via alone: the other commands (`command`)
// refuse it.
void refuse_version_guard(const PlacementOptions& placement, std::string_view command);
// A Kafka Streams store (kstreams://) is read by audit alone for now: `command` refuses it (UsageError)
// rather than look its keys up, which would find none.
void refuse_window_store(const PlacementOptions& placement, std::string_view command);

// audit: --store (required, repeatable: tiers, commands/placement/tiers.hpp) and every flag; trace and
// watch: one --store and every flag; replay: --via (optional) and the flags a claim uses.
enum class PlacementUse { Audit, Replay, Tiers };
void add_placement_options(CLI::App& app, PlacementFlags& options, PlacementUse use = PlacementUse::Audit);
// Throws UsageError naming the flag; the store's family checks what it can before anything is contacted.
// `context` says where the TTL and retention came from (flag, config, environment).
PlacementOptions parse_placement(const PlacementFlags& options, const Context& context,
                                 std::string_view store_flag = "--store");
// The report's placement as the flags name it: kind, store (redacted), layout and collection.
reports::PlacementInfo placement_info(const PlacementOptions& placement);

} // namespace dedupctl::commands
