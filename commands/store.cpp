#include "commands/store.hpp"
#include "commands/settings.hpp"

#include "connectors/aws/aws.hpp"
#include "connectors/file/inbox_snapshot_store.hpp"
#include "connectors/file/item_file_store.hpp"
#include "connectors/file/snapshot_store.hpp"
#include "connectors/redis/redis.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

OpenedStore open_dedup_store(const PlacementOptions& placement, const PlacementFlags& options, Context& context,
                             std::optional<std::int64_t> expected_events) {
  OpenedStore out;
  const auto& uri = placement.uri;
  if (uri.kind == core::StoreUri::Kind::Memory) {
    throw UsageError("--store memory: holds nothing to read (it is a replay placement); use redis://, postgres:// or "
                     "file:");
  }
  if (uri.kind == core::StoreUri::Kind::File) {
    if (connectors::file::InboxSnapshotStore::is_inbox_snapshot(uri.path)) {
      if (placement.layout.name != "plain" && !placement.layout.inbox) {
        throw UsageError(fmt::format("--store {}: an inbox snapshot holds rows, not records of --layout {}", uri.path,
                                     placement.layout.name));
      }
      auto snapshot = std::make_unique<connectors::file::InboxSnapshotStore>(uri.path, options.consumer);
      out.snapshot_time = snapshot->header().taken_at_ms; // the rows are as they were then
      context.note(
          fmt::format("reading inbox snapshot {} taken at {}", uri.path, core::format_time(*out.snapshot_time)));
      out.inbox = snapshot.get();
      out.store = std::move(snapshot);
    } else if (placement.layout.value == core::RecordValue::Json &&
               connectors::file::ItemFileStore::is_item_file(uri.path)) {
      // A DynamoDB table's scan or export: the records as they were when it was written.
      auto items = std::make_unique<connectors::file::ItemFileStore>(uri.path, placement.layout);
      out.snapshot_time = items->written_at_ms();
      context.note(fmt::format("reading {} DynamoDB items of {} ({} file{}) written at {}", items->size(), uri.path,
                               items->files(), items->files() == 1 ? "" : "s", core::format_time(*out.snapshot_time)));
      out.store = std::move(items);
      out.dynamodb = true;
    } else {
      auto snapshot = std::make_unique<connectors::file::SnapshotStore>(uri.path);
      if (snapshot->header().layout != placement.layout.name) {
        throw UsageError(fmt::format("--store {}: the snapshot holds records of --layout {}, not {}: audit it with "
                                     "the layout (and key prefix) it was taken with",
                                     uri.path, snapshot->header().layout, placement.layout.name));
      }
      snapshot->read_with(placement.layout);
      out.snapshot_time = snapshot->header().taken_at_ms; // the records are as they were then
      // Not its count of records: that would wait for the load, which goes on beside the reading.
      context.note(fmt::format("reading snapshot {} taken at {}", uri.path, core::format_time(*out.snapshot_time)));
      out.store = std::move(snapshot);
    }
    return out;
  }
  try {
    if (uri.kind == core::StoreUri::Kind::Dynamodb) {
      auto opened = connectors::aws::open_table(aws_settings(uri, placement.layout, context));
      for (auto& secret : opened.client->credentials().secrets()) {
        context.secrets.push_back(std::move(secret));
      }
      note_read_units(opened, expected_events, context);
      out.store = std::make_unique<connectors::aws::DynamoStore>(opened.client);
      out.dynamodb = true;
      context.note(fmt::format("--store {}: {}", uri.redacted(), out.store->topology()));
    } else if (uri.kind == core::StoreUri::Kind::Postgres) {
      auto settings = inbox_settings(uri, options.inbox, options.consumer, context, &placement.layout);
      settings.lookup = placement.inbox_lookup;
      settings.expected_events = expected_events;
      auto inbox = connectors::postgres::open_inbox_store(settings);
      out.inbox = inbox.get();
      out.store = std::move(inbox);
    } else {
      auto settings = redis_settings(uri, context);
      settings.layout = placement.layout;
      settings.collection = placement.collection;
      out.store = connectors::redis::open_store(settings);
      if (auto topology = out.store->topology(); !topology.empty()) {
        context.note(fmt::format("--store {}: {}", uri.redacted(), topology));
      }
    }
  } catch (const UnreachableError& e) {
    out.failure = e.what();
  }
  return out;
}

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

core::TtlDecision decide_inbox_ttl(core::InboxStore& inbox, const std::optional<core::Span>& flag, std::int64_t now_ms,
                                   Context& context) {
  auto decision = core::decide_inbox_ttl(inbox, flag, now_ms, context.origin_of("inbox-retention"));
  if (decision.source == core::TtlSource::InboxRetentionEstimated) {
    context.note(fmt::format("inbox retention estimated from the oldest row: at least {}; pass --inbox-retention",
                             core::to_text(decision.span)));
  }
  return decision;
}

} // namespace dedupctl::commands
