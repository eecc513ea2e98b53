// The file family: file:PATH, what a store held when it was written (a snapshot of Redis keys, of a
// Bloom filter or of an inbox's rows, a DynamoDB table's scan or export, a filter a library dumped). Read here, before
// any server is contacted.
#include "commands/placement/family.hpp"

#include "connectors/file/bloom_file_store.hpp"
#include "connectors/file/inbox_snapshot_store.hpp"
#include "connectors/file/item_file_store.hpp"
#include "connectors/file/snapshot_store.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

OpenedStore open_inbox_snapshot(const PlacementOptions& placement, Context& context) {
  const auto& path = placement.uri.path;
  if (placement.layout.home != core::LayoutHome::Any && !placement.layout.inbox()) {
    throw UsageError(fmt::format("--store {}: an inbox snapshot holds rows, not records of --layout {}", path,
                                 placement.layout.name));
  }
  OpenedStore out;
  auto snapshot = std::make_unique<connectors::file::InboxSnapshotStore>(path, placement.consumer);
  out.snapshot_time = snapshot->header().taken_at_ms; // the rows are as they were then
  context.note(fmt::format("reading inbox snapshot {} taken at {}", path, core::format_time(*out.snapshot_time)));
  out.inbox = snapshot.get();
  out.store = std::move(snapshot);
  return out;
}

// A DynamoDB table's scan or export: the records as they were when it was written.
OpenedStore open_items(const PlacementOptions& placement, Context& context) {
  const auto& path = placement.uri.path;
  OpenedStore out;
  auto items = std::make_unique<connectors::file::ItemFileStore>(path, placement.layout);
  out.snapshot_time = items->written_at_ms();
  context.note(fmt::format("reading {} DynamoDB items of {} ({} file{}) written at {}", items->size(), path,
                           items->files(), items->files() == 1 ? "" : "s", core::format_time(*out.snapshot_time)));
  out.store = std::move(items);
  out.dynamodb = true;
  return out;
}

// A Bloom filter's BF.SCANDUMP, rebuilt whole before the log is read (a filter is a few bytes an id).
OpenedStore open_bloom_snapshot(const PlacementOptions& placement, Context& context) {
  const auto& path = placement.uri.path;
  auto filter = std::make_unique<connectors::file::BloomSnapshotStore>(path);
  OpenedStore out;
  out.snapshot_time = filter->header().taken_at_ms; // the filter as it was then
  context.note(fmt::format(
      "reading the Bloom filter {} of snapshot {} ({} items in {} link{}, capacity {}) taken at {}",
      filter->header().match, path, filter->filter().items(), filter->filter().links(),
      filter->filter().links() == 1 ? "" : "s", filter->filter().capacity(), core::format_time(*out.snapshot_time)));
  out.store = std::move(filter);
  return out;
}

// A filter the consumer wrote itself (WriteTo, writeTo), read whole; it is as of the file's time.
OpenedStore open_bloom_dump(const PlacementOptions& placement, Context& context) {
  const auto& path = placement.uri.path;
  auto impl = placement.layout.window.bloom_impl;
  auto filter = std::make_unique<connectors::file::BloomDumpStore>(path, impl);
  OpenedStore out;
  out.snapshot_time = filter->written_at_ms();
  context.note(fmt::format("reading the {} Bloom filter {} (m={} bits, k={}) written at {}", core::to_string(impl),
                           path, filter->filter().shape().bits, filter->filter().shape().hashes,
                           core::format_time(*out.snapshot_time)));
  out.store = std::move(filter);
  return out;
}

OpenedStore open_store(const PlacementOptions& placement, Context& context, std::optional<std::int64_t>) {
  const auto& path = placement.uri.path;
  if (placement.layout.home == core::LayoutHome::Dump) {
    return open_bloom_dump(placement, context);
  }
  if (connectors::file::InboxSnapshotStore::is_inbox_snapshot(path)) {
    return open_inbox_snapshot(placement, context);
  }
  if (placement.layout.shape == core::RecordShape::BloomMember &&
      connectors::file::BloomSnapshotStore::is_bloom_snapshot(path)) {
    return open_bloom_snapshot(placement, context);
  }
  if (placement.layout.value == core::RecordValue::Json && connectors::file::ItemFileStore::is_item_file(path)) {
    return open_items(placement, context);
  }
  auto snapshot = std::make_unique<connectors::file::SnapshotStore>(path);
  if (snapshot->header().layout != placement.layout.name) {
    throw UsageError(fmt::format("--store {}: the snapshot holds records of --layout {}, not {}: audit it with "
                                 "the layout (and key prefix) it was taken with",
                                 path, snapshot->header().layout, placement.layout.name));
  }
  snapshot->read_with(placement.layout);
  OpenedStore out;
  out.snapshot_time = snapshot->header().taken_at_ms; // the records are as they were then
  // Not its count of records: that would wait for the load, which goes on beside the reading.
  context.note(fmt::format("reading snapshot {} taken at {}", path, core::format_time(*out.snapshot_time)));
  out.store = std::move(snapshot);
  return out;
}

} // namespace

StoreFamily file_family() {
  StoreFamily family;
  family.row = &placement::family_row(core::StoreUri::Kind::File);
  family.open_store = open_store;
  return family;
}

} // namespace dedupctl::commands
