#include "commands/store.hpp"

#include "connectors/file/inbox_snapshot_store.hpp"
#include "connectors/file/snapshot_store.hpp"
#include "connectors/redis/redis.hpp"
#include "core/errors.hpp"
#include "core/time.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

OpenedStore open_dedup_store(const ParsedPlacement& placement, const PlacementOptions& options, Context& context,
                             std::optional<std::int64_t> expected_events) {
  OpenedStore out;
  const auto& uri = placement.uri;
  if (uri.kind == core::StoreUri::Kind::Memory) {
    throw UsageError("--store memory: holds nothing to read (it is a replay placement); use redis://, postgres:// or "
                     "file:");
  }
  if (uri.kind == core::StoreUri::Kind::File) {
    if (connectors::file::InboxSnapshotStore::is_inbox_snapshot(uri.path)) {
      auto snapshot = std::make_unique<connectors::file::InboxSnapshotStore>(uri.path, options.consumer);
      out.snapshot_time = snapshot->header().taken_at_ms; // the rows are as they were then
      context.note(
          fmt::format("reading inbox snapshot {} taken at {}", uri.path, core::format_time(*out.snapshot_time)));
      out.inbox = snapshot.get();
      out.store = std::move(snapshot);
    } else {
      auto snapshot = std::make_unique<connectors::file::SnapshotStore>(uri.path);
      out.snapshot_time = snapshot->header().taken_at_ms; // the records are as they were then
      context.note(fmt::format("reading snapshot {} taken at {} ({} records)", uri.path,
                               core::format_time(*out.snapshot_time), snapshot->size()));
      out.store = std::move(snapshot);
    }
    return out;
  }
  try {
    std::int64_t timeout = core::parse_duration(context.global.timeout, "--timeout");
    if (uri.kind == core::StoreUri::Kind::Postgres) {
      connectors::postgres::InboxSettings settings;
      settings.conninfo = uri.conninfo;
      settings.timeout_ms = timeout;
      settings.schema =
          connectors::postgres::InboxSchema{options.inbox.table, options.inbox.id_column, options.inbox.consumer_column,
                                            options.inbox.time_column, options.inbox.status_column};
      settings.consumer = options.consumer;
      settings.stop = &context.stop;
      const auto& lookup = options.inbox_lookup;
      settings.lookup = lookup == "load"      ? connectors::postgres::InboxLookup::Load
                        : lookup == "batches" ? connectors::postgres::InboxLookup::Batches
                                              : connectors::postgres::InboxLookup::Auto;
      settings.expected_events = expected_events;
      auto inbox = connectors::postgres::InboxStore::open(settings);
      out.inbox = inbox.get();
      out.store = std::move(inbox);
    } else {
      connectors::redis::RedisSettings settings;
      settings.uri = uri;
      settings.timeout_ms = timeout;
      settings.stop = &context.stop;
      out.store = connectors::redis::open_store(settings);
    }
  } catch (const UnreachableError& e) {
    out.failure = e.what();
  }
  return out;
}

} // namespace dedupctl::commands
