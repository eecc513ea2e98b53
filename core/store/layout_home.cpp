#include "core/store/layout_home.hpp"

#include "core/store/dynamodb.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

void check_layout_home(const RecordLayout& layout, StoreUri::Kind kind) {
  using Kind = StoreUri::Kind;
  switch (layout.home) {
  case LayoutHome::Inbox:
    if (kind != Kind::Postgres && kind != Kind::File) {
      throw UsageError(fmt::format("--layout {} is an inbox layout: it reads postgres:// stores (or their snapshots), "
                                   "not {}",
                                   layout.name, store_kind_name(kind)));
    }
    return;
  case LayoutHome::Dynamodb:
    if (kind != Kind::Dynamodb && kind != Kind::File) {
      throw UsageError(fmt::format("--layout {}: {} keeps its records in DynamoDB; give --store dynamodb://TABLE",
                                   layout.name, layout.library));
    }
    break;
  case LayoutHome::Redis:
    if (kind != Kind::Redis && kind != Kind::File && kind != Kind::Dynamodb) {
      throw UsageError(fmt::format("--layout {} is a Redis layout: it reads redis:// stores (or their snapshots), "
                                   "not {}",
                                   layout.name, store_kind_name(kind)));
    }
    break;
  case LayoutHome::Window:
    if (kind != Kind::Memory) {
      throw UsageError(fmt::format("--layout {} is an in-process window: it is simulated over the log with --store "
                                   "memory:, not read from {}",
                                   layout.name, store_kind_name(kind)));
    }
    return;
  case LayoutHome::Dump:
    if (kind != Kind::File) {
      throw UsageError(fmt::format("--layout {} reads a filter the consumer wrote to a file (bits-and-blooms WriteTo, "
                                   "Guava writeTo): give --store file:PATH, not {} (a filter in Redis is --layout "
                                   "redis-bloom)",
                                   layout.name, store_kind_name(kind)));
    }
    return;
  case LayoutHome::Projection:
    if (kind != Kind::Postgres && kind != Kind::Redis) {
      throw UsageError(fmt::format("--layout {} reads the handler's projection itself: give --store postgres://… "
                                   "(--inbox-table names its table) or --store redis://… (--key-template names its "
                                   "key per entity), not {}",
                                   layout.name, store_kind_name(kind)));
    }
    return;
  case LayoutHome::Changelog:
    if (kind != Kind::Kstreams) {
      throw UsageError(fmt::format("--layout {} is a Kafka Streams store: it is read from its changelog with --store "
                                   "kstreams://APPLICATION_ID/STORE, not from {}",
                                   layout.name, store_kind_name(kind)));
    }
    return;
  case LayoutHome::Any:
    break;
  }
  if (kind == Kind::Kstreams) {
    throw UsageError(fmt::format("--layout {}: a kstreams:// store is a Kafka Streams state store: give --layout "
                                 "kstreams-window (the default) or kstreams-kv",
                                 layout.name));
  }

  if (kind == Kind::Dynamodb) {
    check_dynamodb_layout(layout); // a JSON record with a key the table can hold
  }
}

} // namespace dedupctl::core
