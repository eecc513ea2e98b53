#pragma once

#include "commands/context.hpp"
#include "commands/options.hpp"
#include "connectors/aws/aws.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "core/audit/ttl.hpp"
#include "core/store/dedup_store.hpp"

#include <memory>
#include <optional>
#include <string>

namespace dedupctl::commands {

// A placement opened for reading (audit, trace): Redis, a PostgreSQL inbox, or a snapshot file of
// either. A snapshot's time is the time its records are read at.
struct OpenedStore {
  std::unique_ptr<core::DedupStore> store;
  core::InboxStore* inbox = nullptr; // set when the records are inbox rows
  std::optional<std::int64_t> snapshot_time;
  std::optional<std::string> failure; // the store could not be reached (exit 3)
  bool dynamodb = false;              // items of a DynamoDB table (live, scanned or exported)
};

// Throws UsageError for a bad schema or file; an unreachable server is returned in `failure`.
OpenedStore open_dedup_store(const PlacementOptions& placement, const PlacementFlags& options, Context& context,
                             std::optional<std::int64_t> expected_events);

// An inbox's TTL, the cleanup job's retention: --inbox-retention, else at least the age of the oldest
// row (said on stderr), else unknown. Throws UnreachableError when the inbox cannot be asked.
// What reading a DynamoDB table costs, said before it is read: its items and size, and the read
// units `expected_events` lookups take at most.
void note_read_units(const connectors::aws::OpenedTable& table, std::optional<std::int64_t> expected_events,
                     Context& context);

core::TtlDecision decide_inbox_ttl(core::InboxStore& inbox, const std::optional<core::Span>& flag, std::int64_t now_ms,
                                   Context& context);

} // namespace dedupctl::commands
