#include "commands/placement/options.hpp"

#include "commands/placement/family.hpp"
#include "commands/placement/tiers.hpp"
#include "connectors/file/text.hpp"
#include "core/audit/retention.hpp"
#include "core/store/layout_home.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

void add_inbox_options(CLI::Option_group& group, InboxFlags& options) {
  group.add_option("--inbox-table", options.table, "the inbox table of a postgres:// store (may be schema-qualified)")
      ->type_name("TABLE");
  group.add_option("--inbox-id-column", options.id_column, "the inbox's event id column")->type_name("COLUMN");
  group
      .add_option("--inbox-consumer-column", options.consumer_column,
                  "the inbox's consumer column; \"\" when it has none")
      ->type_name("COLUMN");
  group.add_option("--inbox-time-column", options.time_column, "when the row was written")->type_name("COLUMN");
  group
      .add_option("--inbox-status-column", options.status_column,
                  "a status column whose in-progress values mark claims (none by default)")
      ->type_name("COLUMN");
}

namespace {

// A tier's single-valued flag may come once a --store: CLI11 keeps the first, tier_flags splits them all.
void allow_one_a_tier(CLI::App& group) {
  for (auto* option : group.get_options()) {
    if (tier_flag(option->get_name()) && option->get_name() != "--layout-option" &&
        option->get_name() != "--in-progress-value") {
      option->multi_option_policy(CLI::MultiOptionPolicy::TakeFirst);
    }
  }
}

} // namespace

void add_placement_options(CLI::App& app, PlacementFlags& options, PlacementUse use) {
  bool audit = use != PlacementUse::Replay;
  auto* group = app.add_option_group("Placement", audit ? "Where and how the consumer keeps its dedup records"
                                                        : "The placement the replay routes every event through");
  auto* store =
      group
          ->add_option(
              audit ? "--store" : "--via", options.store,
              audit ? std::string(use == PlacementUse::Tiers ? "repeatable, in lookup order (tiers; the placement "
                                                               "flags after one are its own): "
                                                             : "") +
                          "redis://[user:pass@]host:port[/db], redis+unix:///path[?db=N], "
                          "redis+cluster://h1:p1,h2:p2, redis+sentinel://s1:26379/MASTER[/db], postgres://… or a "
                          "libpq conninfo (an inbox table), dynamodb://TABLE[?region=R&endpoint=URL] (Powertools' "
                          "table), kstreams://APPLICATION_ID/STORE (a Kafka Streams store, read from its changelog), "
                          "or file:PATH (a snapshot, or a DynamoDB scan or export)"
                    : "redis://…, redis+cluster://…, redis+sentinel://…, postgres://… or a libpq conninfo (an "
                      "inbox table), or memory: (an LRU of recent ids with a Bloom filter behind it); repeatable, in "
                      "lookup order (tiers: claims in the first that survives a restart, the others only read)")
          ->type_name("URI");
  if (audit) {
    store->required();
  }
  group
      ->add_option("--key-template", options.key_template,
                   "the dedup key per event: {event_id} {type} {entity} {topic} {partition} {offset} {key} "
                   "{consumer} {header:NAME} {json:/ptr}; {{ }} are literal braces; filters after | as libraries "
                   "derive keys: {event_id|json-ascii|md5} (json json-ascii md5 sha1 sha256 sha512 hex base64 "
                   "base64url lower upper java); the layout's when absent")
      ->type_name("T");
  std::string layouts;
  for (auto name : core::layout_names()) {
    layouts += (layouts.empty() ? "" : ", ") + std::string(name);
  }
  group
      ->add_option("--layout", options.layout,
                   fmt::format("how the library that writes the records shapes them: {} (man dedupctl-audit, "
                               "\"Record layouts\")",
                               layouts))
      ->type_name("NAME");
  group
      ->add_option(
          "--key-prefix", options.key_prefix,
          "the prefix a layout's keys start with (Powertools' function name or key_prefix; Camel's repository)")
      ->type_name("PREFIX");
  group
      ->add_option("--collection", options.collection,
                   "the one key a spring-hash, camel-set or zset layout keeps its records under")
      ->type_name("KEY");
  group
      ->add_option("--layout-option", options.layout_options,
                   "NAME=VALUE (repeatable; man dedupctl-audit): json's status-field, expiration-field, "
                   "in-progress, completed, orphans …; kstreams-window's lookup-window, key-serde, time, state …")
      ->type_name("NAME=VALUE")
      ->allow_extra_args(false); // one a flag: a tier's are those after its --store
  group->add_option("--consumer", options.consumer, "the consumer whose records are checked ({consumer} in templates)")
      ->type_name("NAME");
  group
      ->add_option("--ttl", options.ttl,
                   audit ? "the TTL the consumer sets, or none; estimated from the records when absent"
                         : "the TTL of the records a replay marks done, or none (needed with --via redis://)")
      ->type_name("DURATION|none");
  if (audit) {
    group
        ->add_option("--retention", options.retention,
                     "the topic's retention, or infinite; read with DescribeConfigs when absent")
        ->type_name("DURATION|infinite");
    group->add_option("--max-lag", options.max_lag, "allowance between an event's timestamp and its processing")
        ->type_name("DURATION");
  }
  group
      ->add_option("--in-progress-value", options.in_progress_values, "values that mean claimed, not done (repeatable)")
      ->type_name("V")
      ->allow_extra_args(false);
  group
      ->add_option("--lease", options.lease,
                   audit ? "an in-progress claim older than this is orphaned"
                         : "how long a replay's claim holds before it lapses")
      ->type_name("DURATION");
  add_inbox_options(*group, options.inbox);
  if (use != PlacementUse::Audit) {
    allow_one_a_tier(*group);
  }
  if (!audit) {
    return;
  }
  group
      ->add_option("--inbox-retention", options.inbox_retention,
                   "how long the cleanup job keeps rows; estimated from the oldest row when absent")
      ->type_name("DURATION|none");
  group
      ->add_option("--inbox-lookup", options.inbox_lookup,
                   "batches (= ANY per batch), load (the whole inbox with COPY while the log is read), or auto")
      ->check(CLI::IsMember({"auto", "batches", "load"}))
      ->type_name("auto|batches|load");
  group
      ->add_option("--side-effects", options.side_effects,
                   "TYPE=external|internal|idempotent for replay-risk (repeatable); unknown types are external")
      ->type_name("TYPE=CLASS");
}

namespace {

// --layout and what goes with it: the key template (the layout's, from --key-prefix, unless
// --key-template says otherwise), the collection of a one-key layout, the library's rule for orphans.
void parse_layout(const PlacementFlags& options, PlacementOptions& out) {
  // A kind whose records are no plain keys has a default of its own (kstreams: the window store).
  const char* own = out.given ? family(out.uri.kind).default_layout : nullptr;
  out.layout = core::find_layout(own && options.layout == "plain" ? own : options.layout);
  for (const auto& option : options.layout_options) {
    core::apply_layout_option(out.layout, option);
  }
  if (out.given) {
    family(out.uri.kind).accept(out.layout); // the store holds the layout's records, or UsageError
  }
  if (out.layout.inbox()) {
    auto& markers = out.audit.policy.in_progress_values;
    for (const auto& status : out.layout.in_progress_statuses) {
      markers.push_back(status);
    }
    if (!out.layout.inbox_schema.in_progress_column.empty()) {
      markers.push_back(core::k_inbox_in_progress);
    }
  }
  if (out.layout.home == core::LayoutHome::Dump) { // a filter in a file: no key to name
    if (!out.layout.window.bloom_impl_named) {
      throw UsageError(fmt::format("--layout {} needs --layout-option bloom-impl=bits-and-blooms|guava: the library "
                                   "that wrote the dump",
                                   out.layout.name));
    }
    if (!options.collection.empty()) {
      throw UsageError(fmt::format("--collection {}: --layout {} reads the whole file; it has no key to name",
                                   options.collection, out.layout.name));
    }
    out.audit.bloom_filter = true;
  } else if (core::one_key(out.layout)) {
    out.collection = core::collection_key(out.layout, options.collection);
    out.audit.collection = options.collection.empty() ? out.layout.collection : options.collection;
    out.audit.bloom_filter = out.layout.shape == core::RecordShape::BloomMember;
  } else if (!options.collection.empty()) {
    throw UsageError(fmt::format("--collection {}: --layout {} keeps a key per id; --collection is for spring-hash, "
                                 "camel-set and zset",
                                 options.collection, out.layout.name));
  }
  if (!options.key_prefix.empty() && options.key_template) {
    throw UsageError(fmt::format("--key-prefix {}: --key-template gives the whole key, so the prefix would be "
                                 "ignored; put the prefix in the template, or drop --key-template",
                                 options.key_prefix));
  }
  if (!options.key_prefix.empty() && out.layout.key_template.find("{prefix}") == std::string::npos) {
    throw UsageError(fmt::format("--key-prefix {}: --layout {} derives its keys without a prefix ({}), so the prefix "
                                 "would be ignored; drop it, or give the whole key with --key-template",
                                 options.key_prefix, out.layout.name, out.layout.key_template));
  }
  out.audit.key_template = core::KeyTemplate::parse(
      options.key_template ? *options.key_template : core::layout_key_template(out.layout, options.key_prefix, ""));
  if (out.layout.java_key) {
    out.audit.key_template.serialize_as_java();
  }
  out.audit.policy.orphans_reapplied = out.layout.orphans_reapplied;
}

// --layout state-guard's table of transitions: the file named by --layout-option transitions=FILE.
std::shared_ptr<const core::TransitionTable> read_transitions(const std::string& path) {
  if (path.empty()) {
    throw UsageError("--layout state-guard needs --layout-option transitions=FILE: a TOML of the states each event "
                     "type moves its entity from and to ([OrderPaid] from = [\"pending\"] to = \"paid\"; "
                     "docs/version-guards.md)");
  }
  return std::make_shared<const core::TransitionTable>(
      core::TransitionTable::parse(connectors::file::read_text_file(path, "--layout-option transitions"), path));
}

} // namespace

PlacementOptions parse_placement(const PlacementFlags& options, const Context& context, std::string_view store_flag) {
  PlacementOptions out;
  out.flag = std::string(store_flag);
  out.inbox = options.inbox;
  out.consumer = options.consumer;
  if (!options.store.empty()) {
    out.uri = core::parse_store_uri(options.store, std::string(store_flag));
    out.given = true;
    family(out.uri.kind).check(out); // before anything is contacted
  }
  out.audit.policy.in_progress_values = options.in_progress_values; // a layout may add its own
  parse_layout(options, out);
  auto& policy = out.audit.policy;
  if (!options.ttl.empty()) {
    out.audit.ttl = core::declared_ttl(core::parse_ttl(options.ttl));
    out.audit.ttl.origin = context.origin_of("ttl");
  }
  if (!options.inbox_retention.empty()) {
    out.inbox_retention = core::parse_ttl(options.inbox_retention, "--inbox-retention");
  }
  if (!options.retention.empty()) {
    policy.retention = core::parse_retention(options.retention);
    out.retention_origin = context.origin_of("retention");
  }
  policy.max_lag_ms = core::parse_duration(options.max_lag, "--max-lag");
  policy.lease_ms = core::parse_duration(options.lease, "--lease");
  out.inbox_lookup = options.inbox_lookup == "load"      ? connectors::postgres::InboxLookup::Load
                     : options.inbox_lookup == "batches" ? connectors::postgres::InboxLookup::Batches
                                                         : connectors::postgres::InboxLookup::Auto;
  for (const auto& item : options.side_effects) {
    out.audit.side_effects.insert(core::parse_side_effect(item));
  }
  if (out.given) {
    family(out.uri.kind).check_placed(out);
  }
  if (out.layout.home == core::LayoutHome::Window) { // simulated over the log; nothing outlives a restart
    out.audit.window = out.layout.window;
    out.audit.ttl = core::window_ttl();
  }
  out.audit.window_store = out.layout.home == core::LayoutHome::Changelog;
  if (out.layout.version_guard()) { // the projection: verdicts by the version walk, rows that never lapse
    if (!options.ttl.empty()) {
      throw UsageError(fmt::format("--ttl {}: --layout {} reads the handler's projection, whose rows never lapse; "
                                   "drop --ttl",
                                   options.ttl, out.layout.name));
    }
    if (out.layout.projection.states) {
      out.transitions = read_transitions(out.layout.projection.transitions);
    }
    out.audit.version_guard = true;
    out.audit.state_guard = out.layout.projection.states;
    out.audit.ttl = core::projection_ttl();
    out.audit.check_collisions = false; // one key an entity, by design
  }
  return out;
}

void refuse_version_guard(const PlacementOptions& placement, std::string_view command) {
  if (placement.layout.version_guard()) {
    throw UsageError(fmt::format("--layout {}: {} does not read a guard's projection yet; dedupctl audit --entity "
                                 "… does (its replay section is the seek preview), and replay --via it publishes "
                                 "what the guard applies",
                                 placement.layout.name, command));
  }
}

void refuse_window_store(const PlacementOptions& placement, std::string_view command) {
  if (placement.layout.home == core::LayoutHome::Changelog) {
    throw UsageError(fmt::format("--store {}: {} does not read a Kafka Streams store yet; dedupctl audit --store {} "
                                 "--seek … names each event a seek forwards again (the replay-risk examples, "
                                 "--examples N)",
                                 placement.uri.redacted(), command, placement.uri.redacted()));
  }
}

reports::PlacementInfo placement_info(const PlacementOptions& placement) {
  reports::PlacementInfo info;
  info.kind = core::store_kind_name(placement.uri.kind);
  info.store = placement.uri.redacted();
  info.layout = placement.layout.name;
  if (core::one_key(placement.layout)) {
    info.collection = placement.audit.collection;
  }
  return info;
}

} // namespace dedupctl::commands
