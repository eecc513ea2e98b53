#include "connectors/postgres/inbox.hpp"

#include "connectors/postgres/libpq_options.hpp"
#include "connectors/postgres/sqlstate.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>
#include <libpq-fe.h>
#include <pqxx/pqxx>

#include <algorithm>

namespace dedupctl::connectors::postgres {

namespace {

// A read-only transaction under the timeout for `body`, every failure an UnreachableError naming the
// server (password redacted) and `what` was asked.
template <typename Body>
void read_catalog(const std::string& conninfo, std::int64_t timeout_ms, const char* what, Body&& body) {
  try {
    pqxx::connection connection(detail::with_connect_timeout(conninfo, timeout_ms));
    pqxx::read_transaction tx(connection);
    tx.exec0(fmt::format("SET LOCAL statement_timeout = {}", timeout_ms));
    body(tx);
  } catch (const pqxx::broken_connection& e) {
    throw UnreachableError(fmt::format("cannot reach PostgreSQL at {} ({}); check the store and that the server is up",
                                       core::redact_secrets(conninfo), detail::first_line(e.what())));
  } catch (const pqxx::sql_error& e) {
    detail::throw_unreachable(e, core::redact_secrets(conninfo), what, timeout_ms);
  } catch (const pqxx::failure& e) {
    throw UnreachableError(
        fmt::format("PostgreSQL at {} failed ({})", core::redact_secrets(conninfo), detail::first_line(e.what())));
  }
}

} // namespace

InboxFacts inspect_inbox(const std::string& conninfo, std::int64_t timeout_ms, const std::string& table,
                         const std::string& id_column, const std::string& consumer_column) {
  InboxFacts facts;
  read_catalog(conninfo, timeout_ms, "the inspection", [&](pqxx::read_transaction& tx) {
    pqxx::result relation = tx.exec_params("SELECT to_regclass($1)::oid", table);
    if (relation.empty() || relation[0][0].is_null()) {
      return; // no such table: facts say so
    }
    facts.table_exists = true;
    auto oid = relation[0][0].as<long long>();
    for (const auto& row : tx.exec_params(
             "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), t.typcategory::text FROM pg_attribute a "
             "JOIN pg_type t ON t.oid = a.atttypid WHERE a.attrelid = $1::oid AND a.attnum > 0 "
             "AND NOT a.attisdropped ORDER BY a.attnum",
             oid)) {
      facts.columns.push_back(row[0].as<std::string>());
      facts.column_types.push_back(
          core::InboxColumnType{row[0].as<std::string>(), row[1].as<std::string>(), row[2].as<std::string>().at(0)});
    }
    // The sorted column sets of the table's unique, non-partial indexes (primary keys included).
    for (const auto& row :
         tx.exec_params("SELECT (SELECT string_agg(a.attname::text, ',' ORDER BY a.attname) FROM pg_attribute a "
                        "        WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)) "
                        "FROM pg_index i WHERE i.indrelid = $1::oid AND i.indisunique AND i.indpred IS NULL",
                        oid)) {
      if (row[0].is_null()) {
        continue;
      }
      auto columns = row[0].as<std::string>();
      std::vector<std::string> pair{id_column, consumer_column};
      std::sort(pair.begin(), pair.end());
      if (columns == id_column || (!consumer_column.empty() && columns == pair[0] + "," + pair[1])) {
        facts.unique_over_id = true;
      }
    }
  });
  return facts;
}

std::vector<core::TableColumns> list_tables(const std::string& conninfo, std::int64_t timeout_ms, std::size_t limit) {
  std::vector<core::TableColumns> out;
  read_catalog(conninfo, timeout_ms, "the catalog", [&](pqxx::read_transaction& tx) {
    // One row a column, tables in name order; the limit counts tables.
    pqxx::result rows = tx.exec_params(
        "WITH t AS (SELECT c.oid, n.nspname::text AS schema, c.relname::text AS name FROM pg_class c "
        "           JOIN pg_namespace n ON n.oid = c.relnamespace "
        "           WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') "
        "             AND n.nspname NOT LIKE 'pg\\_%' ORDER BY 2, 3 LIMIT $1) "
        "SELECT t.schema, t.name, a.attname::text FROM t JOIN pg_attribute a ON a.attrelid = t.oid "
        "WHERE a.attnum > 0 AND NOT a.attisdropped ORDER BY t.schema, t.name, a.attnum",
        static_cast<long long>(limit));
    for (const auto& row : rows) {
      auto schema = row[0].as<std::string>();
      auto name = row[1].as<std::string>();
      if (out.empty() || out.back().schema != schema || out.back().table != name) {
        out.push_back({schema, name, {}});
      }
      out.back().columns.push_back(row[2].as<std::string>());
    }
  });
  return out;
}

void check_conninfo(const std::string& conninfo, std::string_view flag) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(conninfo.c_str(), &error);
  std::string shown = core::redact_secrets(conninfo);
  if (!options) {
    std::string why = error ? detail::first_line(error) : "out of memory";
    PQfreemem(error);
    throw UsageError(fmt::format("{} '{}': {}; write postgresql://USER@HOST:PORT/DB or host=… port=… dbname=…", flag,
                                 shown, core::scrub_secrets(why, core::secrets_in(conninfo))));
  }
  std::string bad_port;
  for (const PQconninfoOption* o = options; o->keyword; ++o) {
    if (std::string_view(o->keyword) == "port" && o->val) {
      for (auto port : core::split(o->val, ',')) { // one port a host
        if (!port.empty() && port.find_first_not_of("0123456789") != std::string_view::npos) {
          bad_port = std::string(port);
        }
      }
    }
  }
  PQconninfoFree(options);
  if (!bad_port.empty()) {
    throw UsageError(fmt::format("{} '{}': the port '{}' is not a number", flag, shown, bad_port));
  }
}

} // namespace dedupctl::connectors::postgres
