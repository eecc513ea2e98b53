// The DynamoDB family: dynamodb://TABLE[?region=R&endpoint=URL], Powertools' items.
#include "commands/placement/family.hpp"
#include "commands/placement/settings.hpp"

#include "connectors/aws/aws.hpp"
#include "core/store/dynamodb.hpp"
#include "core/store/snapshot_line.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

connectors::aws::AwsSettings aws_settings(const core::StoreUri& uri, const core::RecordLayout& layout,
                                          const Context& context) {
  connectors::aws::AwsSettings settings;
  settings.uri = uri;
  settings.layout = layout;
  settings.profile = context.global.aws_profile;
  settings.profile_explicit = context.origin_of("aws-profile") == core::ValueOrigin::Flag;
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  settings.stop = &context.stop;
  settings.note = context.note;
  return settings;
}

namespace {

// What reading a DynamoDB table costs, said before it is read: its items and size, and the read
// units `expected_events` lookups take at most.
void note_read_units(const connectors::aws::OpenedTable& table, std::optional<std::int64_t> expected_events,
                     Context& context) {
  const auto& facts = table.facts;
  std::string lookups =
      expected_events && *expected_events > 0
          ? fmt::format("; looking up {} events costs at most {:.0f} read units (BatchGetItem, eventually "
                        "consistent: half a unit an item)",
                        *expected_events, core::lookup_read_units(*expected_events))
          : "";
  context.note(fmt::format("table {}: about {} items, {} bytes (DynamoDB's estimate){}",
                           table.client->settings().uri.table, facts.item_count, facts.size_bytes, lookups));
}

// The table's credentials are secrets no output may show.
connectors::aws::OpenedTable open_table(const core::StoreUri& uri, const core::RecordLayout& layout, Context& context) {
  auto table = connectors::aws::open_table(aws_settings(uri, layout, context));
  for (auto& secret : table.client->credentials().secrets()) {
    context.secrets.push_back(std::move(secret));
  }
  return table;
}

OpenedStore open_store(const PlacementOptions& placement, Context& context,
                       std::optional<std::int64_t> expected_events) {
  auto opened = open_table(placement.uri, placement.layout, context);
  note_read_units(opened, expected_events, context);
  OpenedStore out;
  out.store = std::make_unique<connectors::aws::DynamoStore>(opened.client);
  out.dynamodb = true;
  context.note(fmt::format("--store {}: {}", placement.uri.redacted(), out.store->topology()));
  return out;
}

void check_writes(const PlacementOptions& placement, bool writes) {
  if (writes && !placement.audit.ttl.span.finite_ms()) {
    throw UsageError("--via dynamodb:// needs --ttl: the library's expires_after_seconds, which the records' "
                     "expiration is counted from");
  }
}

std::unique_ptr<core::ReplayPlacement> open_via(const PlacementOptions& placement, const ViaOptions&,
                                                Context& context) {
  auto settings = aws_settings(placement.uri, placement.layout, context);
  return connectors::aws::open_dynamo_replay(settings, placement.audit.ttl.span, placement.audit.policy.lease_ms,
                                             placement.audit.policy.in_progress_values, context.now_ms);
}

InspectedStore inspect(const core::ConsumerDeclaration& consumer, const core::StoreUri& uri, const Context& context,
                       std::int64_t timeout_ms) {
  auto settings = aws_settings(uri, consumer.layout, context);
  settings.timeout_ms = timeout_ms;
  settings.attempts = 3;
  InspectedStore out;
  try {
    auto table = connectors::aws::open_table(settings);
    auto ttl = connectors::aws::describe_ttl(*table.client);
    out.dynamodb =
        core::LiveInspector::Dynamo{ttl.status, ttl.attribute, table.facts.size_bytes, table.facts.item_count};
  } catch (const UsageError& e) {
    throw UnreachableError(e.what()); // a table not there, or not the layout's: the check says which
  }
  return out;
}

// A DynamoDB table's records by a parallel Scan (Segment/TotalSegments), what it costs said first.
int snapshot(const SnapshotOptions& options, Context& context) {
  const auto& uri = options.uri;
  const auto& layout = options.layout;
  if (options.match != "*") {
    throw UsageError("--match is for Redis keys: a DynamoDB snapshot holds the layout's records (items of another "
                     "partition or shape are left out)");
  }
  if (options.segments < 1 || options.segments > 1'000'000) {
    throw UsageError(fmt::format("--segments {}: give 1 to 1000000 (DynamoDB's TotalSegments)", options.segments));
  }
  auto table = open_table(uri, layout, context);
  context.note(fmt::format("scanning table {} in {} segments: about {} items, {} bytes, about {:.0f} read units "
                           "(eventually consistent)",
                           uri.table, options.segments, table.facts.item_count, table.facts.size_bytes,
                           core::scan_read_units(table.facts.size_bytes)));
  std::int64_t taken_at = context.now_ms();
  std::vector<std::string> lines;
  auto scanned = connectors::aws::scan_table(*table.client, options.segments, [&](const core::DynamoRecord& record) {
    lines.push_back(core::format_snapshot_entry(
        core::SnapshotEntry{record.key, std::nullopt, core::snapshot_value(layout, record.value)}));
    if (context.progress && lines.size() % 100'000 == 0) {
      context.progress(fmt::format("snapshot: {} records", lines.size()));
    }
  });
  if (context.progress) {
    context.progress("");
  }
  return write_snapshot(
      core::format_snapshot_header(core::SnapshotHeader{taken_at, uri.redacted(), "*", "", layout.name}), lines,
      fmt::format("snapshot of {} records ({} items scanned, {:.1f} read units consumed) from {} taken at {}",
                  lines.size(), scanned, table.client->consumed_units(), uri.redacted(), core::format_time(taken_at)),
      context);
}

} // namespace

StoreFamily dynamodb_family() {
  StoreFamily family;
  family.row = &placement::family_row(core::StoreUri::Kind::Dynamodb);
  family.fit_layout = core::as_dynamodb_layout;
  family.check_writes = check_writes;
  family.open_store = open_store;
  family.open_via = open_via;
  family.inspect = inspect;
  family.snapshot = snapshot;
  return family;
}

} // namespace dedupctl::commands
