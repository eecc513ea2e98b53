#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace pqxx {
class sql_error;
}

// What a PostgreSQL error means for a run, decided by its SQLSTATE: the server translates its
// messages into its lc_messages, so their English text is never matched (internal to
// connectors/postgres).
namespace dedupctl::connectors::postgres::detail {

enum class ServerFailure {
  Timeout,   // 57014 query_canceled: statement_timeout cut the statement
  Closed,    // class 08 (connection exception), 57P01–57P03 (the server shuts down or is not yet up)
  Resources, // class 53: disk full, out of memory, too many connections
  Refused,   // anything else: a permission, a missing table, a bad value
};

ServerFailure failure_of_sqlstate(std::string_view sqlstate);

// The UnreachableError (exit 3) a failed statement ends the run with: what happened by its SQLSTATE,
// where (`where`, its password already redacted), and the server's first line, which may be in any
// language. `doing` says what was asked ("a query", "the inspection").
[[noreturn]] void throw_unreachable(const pqxx::sql_error& error, const std::string& where, std::string_view doing,
                                    std::int64_t timeout_ms);

} // namespace dedupctl::connectors::postgres::detail
