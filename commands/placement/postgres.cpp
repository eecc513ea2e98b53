// The PostgreSQL family: postgres://… or a libpq conninfo, an inbox table of rows.
#include "commands/placement/family.hpp"
#include "commands/placement/settings.hpp"

#include "connectors/postgres/inbox.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/postgres/projection.hpp"
#include "core/check/inbox_rules.hpp"
#include "core/store/inbox_snapshot.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <tuple>

namespace dedupctl::commands {

void check_inbox_options(const InboxFlags& inbox) {
  core::check_inbox_names(inbox.table, {{"--inbox-id-column", inbox.id_column},
                                        {"--inbox-consumer-column", inbox.consumer_column},
                                        {"--inbox-time-column", inbox.time_column},
                                        {"--inbox-status-column", inbox.status_column}});
}

connectors::postgres::InboxSettings inbox_settings(const core::StoreUri& uri, const InboxFlags& inbox,
                                                   const std::string& consumer, const Context& context,
                                                   const core::RecordLayout* layout) {
  connectors::postgres::InboxSettings settings;
  settings.conninfo = uri.conninfo;
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  // An inbox layout gives the library's table and columns; a flag given says otherwise.
  InboxFlags flags = inbox;
  bool by_layout = layout && layout->inbox();
  if (by_layout) {
    settings.schema = layout->inbox_schema;
    auto given = [&](const char* name) { return context.origin_of(name) != core::ValueOrigin::Default; };
    for (auto [name, flag, field] :
         {std::tuple{"inbox-table", &flags.table, &settings.schema.table},
          std::tuple{"inbox-id-column", &flags.id_column, &settings.schema.id_column},
          std::tuple{"inbox-consumer-column", &flags.consumer_column, &settings.schema.consumer_column},
          std::tuple{"inbox-time-column", &flags.time_column, &settings.schema.time_column},
          std::tuple{"inbox-status-column", &flags.status_column, &settings.schema.status_column}}) {
      if (given(name)) {
        *field = *flag;
      } else {
        *flag = *field;
      }
    }
    if (settings.schema.table.empty()) {
      throw UsageError(fmt::format("--layout {} keeps its rows in a table named after the endpoint: give "
                                   "--inbox-table (\"Sales_OutboxData\", quoted as the library creates it)",
                                   layout->name));
    }
  }
  check_inbox_options(flags);
  if (!by_layout) {
    settings.schema = connectors::postgres::InboxSchema{};
    settings.schema.table = inbox.table;
    settings.schema.id_column = inbox.id_column;
    settings.schema.consumer_column = inbox.consumer_column;
    settings.schema.time_column = inbox.time_column;
    settings.schema.status_column = inbox.status_column;
  }
  settings.consumer = consumer.empty() && by_layout ? layout->default_consumer : consumer;
  settings.stop = &context.stop;
  return settings;
}

core::TtlDecision decide_inbox_ttl(core::InboxStore& inbox, const std::optional<core::Span>& flag, std::int64_t now_ms,
                                   Context& context) {
  auto decision = core::decide_inbox_ttl(inbox, flag, now_ms, context.origin_of("inbox-retention"));
  if (decision.source == core::TtlSource::InboxRetentionEstimated) {
    context.note(fmt::format("inbox retention estimated from the oldest row: at least {}; pass --inbox-retention",
                             core::to_text(decision.span)));
  }
  return decision;
}

namespace {

connectors::postgres::InboxSettings placement_settings(const PlacementOptions& placement, const Context& context) {
  return inbox_settings(placement.uri, placement.inbox, placement.consumer, context, &placement.layout);
}

void check_options(const PlacementOptions& placement) {
  connectors::postgres::check_conninfo(placement.uri.conninfo, placement.flag);
  check_inbox_options(placement.inbox);
}

OpenedStore open_store(const PlacementOptions& placement, Context& context,
                       std::optional<std::int64_t> expected_events) {
  if (placement.layout.version_guard()) {
    if (placement.inbox.table.empty() || context.origin_of("inbox-table") == core::ValueOrigin::Default) {
      throw UsageError(fmt::format("--layout {} on postgres://…: name the projection's table with --inbox-table "
                                   "(the table the handler's UPDATE … WHERE {} writes)",
                                   placement.layout.name,
                                   placement.layout.projection.states ? "status = …" : "version < $v"));
    }
    core::check_inbox_names(
        placement.inbox.table,
        {{"--layout-option entity-column", placement.layout.projection.entity_column},
         {placement.layout.projection.states ? "--layout-option state-column" : "--layout-option version-column",
          placement.layout.projection.version_column}});
    connectors::postgres::ProjectionSettings settings;
    settings.session.conninfo = placement.uri.conninfo;
    settings.session.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
    settings.session.schema.table = placement.inbox.table;
    settings.session.stop = &context.stop;
    settings.entity_column = placement.layout.projection.entity_column;
    settings.version_column = placement.layout.projection.version_column;
    settings.states = placement.layout.projection.states;
    settings.order = placement.version_order;
    OpenedStore out;
    out.store = connectors::postgres::open_projection_store(settings);
    return out;
  }
  auto settings = placement_settings(placement, context);
  settings.lookup = placement.inbox_lookup;
  settings.expected_events = expected_events;
  auto inbox = connectors::postgres::open_inbox_store(settings);
  OpenedStore out;
  out.inbox = inbox.get();
  out.store = std::move(inbox);
  return out;
}

std::unique_ptr<core::ReplayPlacement> open_via(const PlacementOptions& placement, const ViaOptions&,
                                                Context& context) {
  return connectors::postgres::open_inbox_replay(placement_settings(placement, context),
                                                 placement.audit.policy.in_progress_values);
}

std::unique_ptr<core::RecordRelease> open_release(const PlacementOptions& placement, Context& context) {
  return connectors::postgres::open_inbox_release(placement_settings(placement, context));
}

void parse_effects(const EffectsFlags& flags, EffectsOptions& out) {
  connectors::postgres::check_conninfo(out.uri.conninfo, "--effects");
  if (flags.table.empty()) {
    throw UsageError("--effects postgres://…: name the table that holds a row per applied event with "
                     "--effects-table NAME");
  }
  if (!flags.key_template.empty()) {
    throw UsageError("--effects-key-template is for --effects redis://…; a table's rows are found by "
                     "--effects-column");
  }
  core::check_inbox_names(flags.table, {{"--effects-column", flags.column}});
  out.placement.kind = reports::EffectsKind::Postgres;
  out.placement.table = flags.table;
  out.placement.column = flags.column;
}

std::unique_ptr<core::EffectStore> open_effects(const EffectsOptions& options, Context& context,
                                                std::optional<std::int64_t> expected_events, bool batched) {
  connectors::postgres::InboxSettings settings;
  settings.conninfo = options.uri.conninfo;
  settings.naming = {"effects table", "--effects-table", "--effects-column", "--effects"};
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  settings.schema.table = options.placement.table;
  settings.schema.id_column = options.placement.column;
  settings.schema.consumer_column.clear();
  settings.schema.time_column.clear();
  settings.expected_events = expected_events;
  if (batched) {
    settings.lookup = connectors::postgres::InboxLookup::Batches;
  }
  settings.stop = &context.stop;
  return std::make_unique<core::RecordEffects>(connectors::postgres::open_inbox_store(settings));
}

// Discover over a PostgreSQL database: the catalog's tables, each candidate's rows looked up as an
// audit with its layout would (read-only sessions).
class PostgresDiscoverStore final : public InboxDiscoverStore {
public:
  explicit PostgresDiscoverStore(connectors::postgres::InboxSettings settings) : m_settings(std::move(settings)) {}

  std::vector<core::TableColumns> tables(std::size_t limit) override {
    return connectors::postgres::list_tables(m_settings.conninfo, m_settings.timeout_ms, limit);
  }

  std::int64_t count_found(const core::LayoutCandidate& candidate, const std::vector<std::string>& ids,
                           std::string& consumer) override {
    auto settings = m_settings;
    settings.schema = candidate.layout.inbox_schema;
    return connectors::postgres::count_inbox_ids(settings, ids, consumer); // UsageError: skipped, and said
  }

private:
  connectors::postgres::InboxSettings m_settings;
};

DiscoverResult discover(const core::StoreUri& uri, const DiscoverRequest& request, core::EventSource& source,
                        Context& context) {
  PostgresDiscoverStore store(inbox_settings(uri, InboxFlags{}, "", context));
  return run_discover(request, source, store);
}

InspectedStore inspect(const core::ConsumerDeclaration& consumer, const core::StoreUri&, const Context&,
                       std::int64_t timeout_ms) {
  auto facts = connectors::postgres::inspect_inbox(consumer.store, timeout_ms, consumer.inbox_table,
                                                   consumer.inbox_id_column, consumer.inbox_consumer_column);
  InspectedStore out;
  out.inbox = core::LiveInspector::Inbox{facts.table_exists, facts.columns, facts.unique_over_id};
  return out;
}

// COPY of the inbox's rows, behind a header with the time the export started.
int snapshot(const SnapshotOptions& options, Context& context) {
  const auto& layout = options.layout;
  if (layout.inbox_schema.time == core::InboxSchema::Time::Expiry) {
    throw UsageError(fmt::format("--layout {}: its rows say when they lapse, which an inbox snapshot (processed_at) "
                                 "cannot keep; audit the table itself",
                                 layout.name));
  }
  auto settings = inbox_settings(options.uri, options.inbox, options.consumer, context, &layout);
  std::vector<std::string> lines;
  std::int64_t taken_at = connectors::postgres::export_inbox(settings, [&](const std::string& line) {
    lines.push_back(line);
    if (context.progress && lines.size() % 100'000 == 0) {
      context.progress(fmt::format("snapshot: {} rows", lines.size()));
    }
  });
  if (context.progress) {
    context.progress("");
  }
  return write_snapshot(core::format_inbox_snapshot_header(
                            core::InboxSnapshotHeader{taken_at, options.uri.redacted(), options.inbox.table}),
                        lines,
                        fmt::format("snapshot of {} rows of {} from {} taken at {}", lines.size(), options.inbox.table,
                                    options.uri.redacted(), core::format_time(taken_at)),
                        context);
}

} // namespace

StoreFamily postgres_family() {
  StoreFamily family;
  family.row = &placement::family_row(core::StoreUri::Kind::Postgres);
  family.check_options = check_options;
  family.open_store = open_store;
  family.open_via = open_via;
  family.open_release = open_release;
  family.parse_effects = parse_effects;
  family.open_effects = open_effects;
  family.discover = discover;
  family.inspect = inspect;
  family.snapshot = snapshot;
  return family;
}

} // namespace dedupctl::commands
