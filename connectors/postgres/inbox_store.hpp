#pragma once

#include "core/audit/coverage.hpp"
#include "core/replay/repair.hpp"
#include "core/replay/replay.hpp"
#include "core/store/dedup_store.hpp"
#include "core/store/inbox_schema.hpp"
#include "core/util/time.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::connectors::postgres {

// How an audit looks event ids up: batched `= ANY($1::type[])` statements, or the whole inbox (the
// consumer's rows) loaded once with COPY … TO STDOUT into memory while the log is read. Auto loads a
// text-like id column with a deterministic collation (where byte equality is the column's equality)
// when the table is not much larger than the audit; otherwise it batches.
using InboxSchema = core::InboxSchema;

enum class InboxLookup { Auto, Batches, Load };

// What the table is to the user, for the errors that name it: the inbox (--store, --inbox-table …),
// or the consumer's effects (--effects, --effects-table, --effects-column).
struct TableNaming {
  std::string what = "inbox table";
  std::string table_flag = "--inbox-table";
  std::string id_flag = "--inbox-id-column";
  std::string store_flag = "--store";
};

struct InboxSettings {
  std::string conninfo;
  TableNaming naming;
  InboxLookup lookup = InboxLookup::Auto;
  std::optional<std::int64_t> expected_events;          // what the audit will look up, when known (for Auto)
  std::int64_t timeout_ms = core::k_default_timeout_ms; // connect_timeout and statement_timeout
  InboxSchema schema;                                   // time_column empty: the rows carry no time (an effects table)
  std::string consumer;                                 // rows of this consumer only (needs a consumer column)
  const std::atomic<bool>* stop = nullptr;
  bool writable = false; // replay claims rows; audits and snapshots never write
};

// Connects and validates the schema: a missing table or column is a UsageError that names it and
// lists the table's columns; an unreachable server is an UnreachableError. Read-only: the session
// is default_transaction_read_only.
std::unique_ptr<core::InboxStore> open_inbox_store(const InboxSettings& settings);

// For discover: how many of `ids` have a row in settings.schema's table, read as the audit reads them,
// and in `consumer` the consumer most of those rows belong to ("" without a consumer column).
// A table that does not fit is a UsageError, as for the audit; an unreachable server UnreachableError.
std::int64_t count_inbox_ids(const InboxSettings& settings, const std::vector<std::string>& ids, std::string& consumer);

// The inbox as the placement a replay routes through: per batch one transaction, BEGIN; INSERT … ON
// CONFLICT DO NOTHING RETURNING (the ids inserted are claimed; the others exist: done, or in
// progress by their status); after the deliveries the failed ones' rows are deleted and the batch
// COMMITs. A failure anywhere rolls the whole batch back. Refuses (UsageError) an inbox without a
// unique constraint over the id, which could not refuse a second insert.
std::unique_ptr<core::ReplayPlacement> open_inbox_replay(const InboxSettings& settings,
                                                         std::vector<std::string> in_progress_values);

// replay --repair-lost's access to the inbox's rows: read as the audit reads them and whole
// (row_to_json), and deleted, in one statement, only where a row still reads as it did.
std::unique_ptr<core::RecordRelease> open_inbox_release(const InboxSettings& settings);

// COPY (event id, consumer, processed_at, status) TO STDOUT of the inbox (the consumer's rows only
// with settings.consumer), one line at a time; returns the time the export started.
std::int64_t export_inbox(const InboxSettings& settings, const std::function<void(const std::string&)>& line);

} // namespace dedupctl::connectors::postgres
