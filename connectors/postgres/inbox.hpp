#pragma once

#include "core/discover/discover.hpp"
#include "core/store/inbox_schema.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// PostgreSQL through libpqxx, included by connectors/postgres/*.cpp only.
namespace dedupctl::connectors::postgres {

// What the catalog says about an inbox table. Read-only.
struct InboxFacts {
  bool table_exists = false;
  std::vector<std::string> columns;
  std::vector<core::InboxColumnType> column_types; // the same columns, with their types
  bool unique_over_id = false; // a primary key or non-partial unique index over (id) or (consumer, id)
};

// `conninfo` is a libpq URI or key=value string (the PG* environment applies); identifiers are
// passed as parameters, never pasted into SQL. Throws UnreachableError (password redacted) when the
// server cannot be reached, refuses us or times out.
InboxFacts inspect_inbox(const std::string& conninfo, std::int64_t timeout_ms, const std::string& table,
                         const std::string& id_column, const std::string& consumer_column);

// For discover: up to `limit` tables and partitioned tables outside the system schemas, each with its
// columns, from the catalog alone. Throws UnreachableError as above.
std::vector<core::TableColumns> list_tables(const std::string& conninfo, std::int64_t timeout_ms, std::size_t limit);

// Checks a --store/--via conninfo as libpq will read it, before anything is contacted: its
// syntax (a URI or key=value pairs), its keywords, and its port. Throws UsageError naming it
// (password redacted) and what is wrong.
void check_conninfo(const std::string& conninfo, std::string_view flag);

} // namespace dedupctl::connectors::postgres
