#pragma once

// A store family: one per store kind, its row of uses (uses.hpp) joined to the functions that open
// it. Every command opens a store through its family: a use the kind lacks is refused with the
// row's message before anything is contacted. One file a family (redis, postgres, dynamodb, file,
// memory, kstreams); a new store kind is one file and one row.
#include "commands/context.hpp"
#include "commands/effects.hpp"
#include "commands/pipeline/discover.hpp"
#include "commands/placement/options.hpp"
#include "commands/placement/uses.hpp"
#include "core/audit/ttl.hpp"
#include "core/audit/window_store_replay.hpp"
#include "core/check/check_rules.hpp"
#include "core/check/declarations.hpp"
#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/replay/repair.hpp"
#include "core/replay/replay.hpp"
#include "core/store/dedup_store.hpp"
#include "core/store/effect_store.hpp"
#include "core/store/kstreams_window.hpp"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::commands {

// A placement opened for reading (audit, trace, watch). A snapshot's time is the time its records
// are read at.
struct OpenedStore {
  std::unique_ptr<core::DedupStore> store;
  core::InboxStore* inbox = nullptr; // set when the records are inbox rows
  std::optional<std::int64_t> snapshot_time;
  std::optional<std::string> failure; // the store could not be reached (exit 3)
  bool dynamodb = false;              // items of a DynamoDB table (live, scanned or exported)
  // A Kafka Streams store (kstreams://): its changelog's fold, waited for once the log is read (it
  // rethrows what its read threw), the store's retention as the audit's TTL, and how it was read.
  std::function<core::WindowStoreChangelog&()> changelog;
  std::optional<core::WindowStoreReading> reading;
  std::optional<core::TtlDecision> ttl;
  std::vector<std::pair<std::string, std::string>> settings;
};

// What replay --via's placement needs beside the placement's options.
struct ViaOptions {
  std::size_t expected_events = 0;                // the range's events, which a memory window is sized for
  std::size_t memory_window = 0;                  // --memory-window
  std::vector<core::Finding>* findings = nullptr; // a placement's notes (the memory window's size)
};

// snapshot --store: what is exported, parsed from the flags.
struct SnapshotOptions {
  core::StoreUri uri;
  core::RecordLayout layout; // --layout with its --layout-option, accepted by the store's family
  std::string collection;    // a one-key layout's key, as the server holds it
  std::string match = "*";
  int segments = 4;
  InboxFlags inbox;
  std::string consumer;
};

// check --live: what a store says of itself, the field of its kind set.
struct InspectedStore {
  std::optional<core::LiveInspector::Redis> redis;
  std::optional<core::LiveInspector::Dynamo> dynamodb;
  std::optional<core::LiveInspector::Inbox> inbox;
};

struct StoreFamily {
  const placement::FamilyRow* row = nullptr;
  // The layout when --layout is not given, where plain is not the kind's (kstreams: kstreams-window).
  const char* default_layout = nullptr;
  // Checks what can be checked before anything is contacted (a conninfo, the inbox flags' names).
  void (*check_options)(const PlacementOptions&) = nullptr;
  // A layout this kind holds is fitted to it (a DynamoDB item's claim is a conditional put).
  void (*fit_layout)(core::RecordLayout&) = nullptr;
  // What the kind needs of the placement once its layout and TTL are parsed (memory: a window layout
  // for --store, none for --via).
  void (*check_layout)(const PlacementOptions&) = nullptr;
  // replay --via: what the records a run writes need of the flags (--ttl); `writes`: a run that marks
  // events done (not a plan, not a repair).
  void (*check_writes)(const PlacementOptions&, bool writes) = nullptr;
  // Read: throws UsageError for a bad schema or file; an unreachable server is returned in `failure`.
  OpenedStore (*open_store)(const PlacementOptions&, Context&, std::optional<std::int64_t> expected_events) = nullptr;
  std::unique_ptr<core::ReplayPlacement> (*open_via)(const PlacementOptions&, const ViaOptions&, Context&) = nullptr;
  std::unique_ptr<core::RecordRelease> (*open_release)(const PlacementOptions&, Context&) = nullptr;
  // --effects: the flags checked into `out`, then the store opened (UnreachableError).
  void (*parse_effects)(const EffectsFlags&, EffectsOptions& out) = nullptr;
  std::unique_ptr<core::EffectStore> (*open_effects)(const EffectsOptions&, Context&,
                                                     std::optional<std::int64_t> expected_events,
                                                     bool batched) = nullptr;
  DiscoverResult (*discover)(const core::StoreUri&, const DiscoverRequest&, core::EventSource&, Context&) = nullptr;
  InspectedStore (*inspect)(const core::ConsumerDeclaration&, const core::StoreUri&, const Context&,
                            std::int64_t timeout_ms) = nullptr;
  int (*snapshot)(const SnapshotOptions&, Context&) = nullptr;

  // Each member through the row: refused (UsageError) where the kind lacks the use.
  void check(const PlacementOptions& options) const;
  // The same for a store named by its URI alone (discover, snapshot), with its inbox flags.
  void check(const core::StoreUri& uri, const InboxFlags& inbox = {}) const;
  void accept(core::RecordLayout& layout) const;            // core::check_layout_home, then fit_layout
  void check_placed(const PlacementOptions& options) const; // check_layout
  void check_records(const PlacementOptions& options, bool writes) const;
  OpenedStore read(const PlacementOptions& options, Context& context,
                   std::optional<std::int64_t> expected_events) const;
  std::unique_ptr<core::ReplayPlacement> via(const PlacementOptions& options, const ViaOptions& via,
                                             Context& context) const;
  std::unique_ptr<core::RecordRelease> release(const PlacementOptions& options, Context& context) const;
  void effects_options(const core::StoreUri& uri, const EffectsFlags& flags, EffectsOptions& out) const;
  std::unique_ptr<core::EffectStore> effects(const EffectsOptions& options, Context& context,
                                             std::optional<std::int64_t> expected_events, bool batched) const;
  DiscoverResult discover_in(const core::StoreUri& uri, const DiscoverRequest& request, core::EventSource& source,
                             Context& context) const;
  InspectedStore inspect_live(const core::ConsumerDeclaration& consumer, const core::StoreUri& uri,
                              const Context& context, std::int64_t timeout_ms) const;
  int take_snapshot(const SnapshotOptions& options, Context& context) const;
};

// A snapshot's file (--output, else stdout), whole or not at all: its header, then its lines; then
// `said` on stderr, with where the file went. Every family's snapshot ends so.
int write_snapshot(const std::string& header, const std::vector<std::string>& lines, const std::string& said,
                   Context& context);

// The family of `kind`; its members match its row's uses (else std::logic_error: a bug).
const StoreFamily& family(core::StoreUri::Kind kind);

// The families, one file each.
StoreFamily redis_family();
StoreFamily postgres_family();
StoreFamily dynamodb_family();
StoreFamily file_family();
StoreFamily memory_family();
StoreFamily kstreams_family();

// An inbox's TTL, the cleanup job's retention: --inbox-retention, else at least the age of the oldest
// row (said on stderr), else unknown. Throws UnreachableError when the inbox cannot be asked.
core::TtlDecision decide_inbox_ttl(core::InboxStore& inbox, const std::optional<core::Span>& flag, std::int64_t now_ms,
                                   Context& context);

} // namespace dedupctl::commands
