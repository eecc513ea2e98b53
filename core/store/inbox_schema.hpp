#pragma once

#include <string>
#include <vector>

// The one set of inbox defaults (man dedupctl-audit, "The placement"): the flags, the declarations of
// check and the PostgreSQL connector start from these.
namespace dedupctl::core {

// An inbox table: a row per processed event, written in the consumer's business transaction.
struct InboxSchema {
  std::string table = "processed_events"; // may be schema-qualified
  std::string id_column = "event_id";
  std::string consumer_column = "consumer_name"; // empty: the table has none
  std::string time_column = "processed_at";
  std::string status_column; // empty: none
  // How the time column holds its time: a timestamp (processed_at), epoch milliseconds as a bigint
  // (Eventuate's creation_time) or as text (Spring's METADATA_VALUE), or the time the row lapses
  // (Wolverine's keep_until) rather than the time it was processed.
  enum class Time { Timestamp, EpochMs, TextMs, Expiry };
  Time time = Time::Timestamp;
  // A row is in progress while this column is NULL (MassTransit's Consumed) or false (NServiceBus's
  // Dispatched); empty: only the status column's values say so.
  std::string in_progress_column;
  enum class InProgressWhen { Null, False };
  InProgressWhen in_progress_when = InProgressWhen::Null;
};

// A column of the table as the catalog gives it: its name, its type as declared (format_type) and its
// type's category (pg_type.typcategory: 'D' date/time, 'N' numeric, 'S' string, 'B' boolean …).
struct InboxColumnType {
  std::string name;
  std::string type;
  char category = 'X';
};

// Why the table cannot be read as `schema` says, by the types of the columns it reads: an id column
// of a type no event id fits (a boolean, a time, an array, json: only text, numbers and uuid hold
// ids; `id_flag` names the flag that names another), a time column that holds no time (a timestamp
// for Timestamp and Expiry, a number for EpochMs, text or a number for TextMs), a false-when
// in-progress column that is not boolean. "" when every column fits. The text names the column, its
// type, what it is read as, and the flag that names another.
std::string inbox_column_type_problem(const InboxSchema& schema, const std::vector<InboxColumnType>& columns,
                                      const std::string& id_flag = "--inbox-id-column");

// What an in-progress row's status reads as when in_progress_column decides it (one of the default
// in-progress values, added to the audit's when a layout uses it).
inline constexpr const char* k_inbox_in_progress = "INPROGRESS";

} // namespace dedupctl::core
