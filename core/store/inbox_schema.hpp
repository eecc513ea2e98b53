#pragma once

#include <string>

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
};

} // namespace dedupctl::core
