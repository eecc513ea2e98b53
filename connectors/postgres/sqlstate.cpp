#include "connectors/postgres/sqlstate.hpp"

#include "connectors/postgres/libpq_options.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <pqxx/except>

namespace dedupctl::connectors::postgres::detail {

ServerFailure failure_of_sqlstate(std::string_view sqlstate) {
  if (sqlstate == "57014") {
    return ServerFailure::Timeout;
  }
  if (sqlstate.starts_with("08") || sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03") {
    return ServerFailure::Closed;
  }
  if (sqlstate.starts_with("53")) {
    return ServerFailure::Resources;
  }
  return ServerFailure::Refused;
}

void throw_unreachable(const pqxx::sql_error& error, const std::string& where, std::string_view doing,
                       std::int64_t timeout_ms) {
  std::string what = first_line(error.what());
  switch (failure_of_sqlstate(error.sqlstate())) {
  case ServerFailure::Timeout:
    throw UnreachableError(fmt::format("PostgreSQL at {} timed out after {} ms ({})", where, timeout_ms, what));
  case ServerFailure::Closed:
    throw UnreachableError(fmt::format("PostgreSQL at {} closed the connection ({})", where, what));
  case ServerFailure::Resources:
    throw UnreachableError(fmt::format("PostgreSQL at {} is out of resources and refused {} ({})", where, doing, what));
  case ServerFailure::Refused:
    break;
  }
  throw UnreachableError(fmt::format("PostgreSQL at {} refused {} ({})", where, doing, what));
}

} // namespace dedupctl::connectors::postgres::detail
