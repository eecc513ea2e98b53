#include "connectors/postgres/session.hpp"

#include "connectors/postgres/inbox.hpp"
#include "connectors/postgres/libpq_options.hpp"
#include "core/store/inbox_table.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace dedupctl::connectors::postgres::detail {

// A PostgreSQL array literal of text values: {"a","b\"c"}.
std::string array_literal(const std::vector<std::string>& values) {
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    out += i ? ",\"" : "\"";
    for (char c : values[i]) {
      if (c == '"' || c == '\\') {
        out += '\\';
      }
      out += c;
    }
    out += '"';
  }
  return out + "}";
}

// A time column (or expression) as epoch microseconds, which the rows' readers keep as the
// millisecond they fall in (core::epoch_ms_of_us). date_part's double is exact to the microsecond
// before 2106; extract()'s numeric (PostgreSQL 14 on) cost the server three times as much per row,
// and rounded to the nearest millisecond where a snapshot's text is cut.
std::string epoch_us(const std::string& time) { return fmt::format("(date_part('epoch', {})*1000000)::bigint", time); }

std::string quoted_literal(pqxx::connection& connection, const std::string& value) {
  return fmt::format("'{}'", connection.esc(value));
}

std::optional<std::int64_t> ms_of(const pqxx::field& us) {
  return us.is_null() ? std::nullopt : std::optional(core::epoch_ms_of_us(us.as<std::int64_t>()));
}

InboxSession::InboxSession(const InboxSettings& settings) : m_settings(settings) {
  guard([&] { m_connection = connect(); });
  validate();
}

std::string InboxSession::holds_only() const {
  bool restrictive = m_id_type == "uuid" || m_id_type == "bigint" || m_id_type == "integer" ||
                     m_id_type == "smallint" || m_id_type.find('(') != std::string::npos;
  return restrictive ? fmt::format("the inbox's id column {} is {}", m_settings.schema.id_column, m_id_type) : "";
}

void InboxSession::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
                          std::deque<std::string>& values) {
  fitting(keys, m_sent, m_positions);
  out.assign(keys.size(), core::RecordState{});
  values.clear();
  guard([&] {
    pqxx::nontransaction tx(*m_connection);
    pqxx::result rows = m_settings.consumer.empty()
                            ? tx.exec_prepared("lookup", array_literal(m_sent))
                            : tx.exec_prepared("lookup", array_literal(m_sent), m_settings.consumer);
    for (const auto& row : rows) {
      auto& state = out[m_positions[row[0].as<std::size_t>() - 1]];
      if (state.kind == core::RecordState::Kind::Present) {
        continue; // the first row wins (several consumers' rows, unscoped)
      }
      values.emplace_back(row[2].is_null() ? "" : row[2].c_str());
      state = core::inbox_row(ms_of(row[1]), values.back());
    }
  });
}

std::int64_t InboxSession::copy_rows(pqxx::connection& connection, const std::string& query,
                                     const std::function<void(const std::string&)>& line) const {
  std::int64_t started = 0;
  {
    pqxx::nontransaction setup(connection);
    setup.exec0("SET TimeZone = 'UTC'");
    setup.exec0("SET DateStyle = 'ISO'");
    pqxx::result now = setup.exec("SELECT " + epoch_us("clock_timestamp()"));
    started = *ms_of(now[0][0]);
  }
  pqxx::read_transaction tx(connection);
  pqxx::stream_from stream(tx, query);
  std::string raw;
  while (stream.get_raw_line(raw)) {
    if (!raw.empty() && raw.back() == '\n') {
      raw.pop_back(); // libpqxx 6 hands the line over with COPY's newline
    }
    line(raw);
  }
  stream.complete();
  return started;
}

std::optional<std::string> InboxSession::infinite_times() const {
  const auto& schema = m_settings.schema;
  std::string where = fmt::format("NOT isfinite({})", m_time);
  std::optional<std::string> refusal;
  try {
    auto connection = connect();
    pqxx::nontransaction tx(*connection);
    if (!m_settings.consumer.empty()) {
      where += fmt::format(" AND {} = {}", m_consumer, quoted_literal(*connection, m_settings.consumer));
    }
    pqxx::result r = tx.exec(fmt::format("SELECT {}::text, {}, {}::text, count(*) OVER () FROM {} WHERE {} "
                                         "ORDER BY 1 LIMIT 1",
                                         m_id, m_consumer.empty() ? "NULL::text" : m_consumer + "::text", m_time,
                                         m_table_name, where));
    if (!r.empty()) {
      auto rows = r[0][3].as<std::int64_t>();
      std::string consumer = r[0][1].is_null() ? "" : fmt::format(" ({} {})", schema.consumer_column, r[0][1].c_str());
      refusal = fmt::format("the inbox table {0} has {1} row{2} whose {3} is infinite, the first {4} {5}{6}: {7}; "
                            "the cleanup job's retention is counted from {3}, which an infinite time does not "
                            "give: set {3} to when the event was processed (NULL for a row kept forever)",
                            schema.table, rows, rows == 1 ? "" : "s", schema.time_column, schema.id_column,
                            r[0][0].c_str(), consumer, r[0][2].c_str());
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return refusal;
}

std::unique_ptr<pqxx::connection> InboxSession::connect() const {
  auto connection =
      std::make_unique<pqxx::connection>(detail::with_connect_timeout(m_settings.conninfo, m_settings.timeout_ms));
  pqxx::nontransaction setup(*connection);
  if (!m_settings.writable) {
    setup.exec0("SET default_transaction_read_only = on");
  } else {
    // A replay checkpoints a batch once its COMMIT returns: the rows must be durable by then, even
    // where the server commits asynchronously.
    setup.exec0("SET synchronous_commit = on");
  }
  setup.exec0(fmt::format("SET statement_timeout = {}", m_settings.timeout_ms));
  return connection;
}

std::string InboxSession::quote_table(const std::string& table) {
  std::string out;
  for (auto part : core::split(table, '.')) {
    // Folded to lower case as the server folds an unquoted name (and as to_regclass found it); a
    // quoted one as it is.
    if (!out.empty()) {
      out += '.';
    }
    bool quoted = part.size() > 2 && part.front() == '"' && part.back() == '"';
    out += m_connection->quote_name(quoted ? std::string(part.substr(1, part.size() - 2)) : core::ascii_lower(part));
  }
  return out;
}

std::string InboxSession::time_expression(const std::string& qualifier) const {
  const auto& schema = m_settings.schema;
  if (schema.time_column.empty()) {
    return "NULL::timestamptz";
  }
  std::string column = qualifier + m_connection->quote_name(schema.time_column);
  switch (schema.time) {
  case core::InboxSchema::Time::EpochMs:
    return fmt::format("to_timestamp({} / 1000.0)", column);
  case core::InboxSchema::Time::TextMs:
    return fmt::format("to_timestamp({}::bigint / 1000.0)", column);
  case core::InboxSchema::Time::Timestamp:
  case core::InboxSchema::Time::Expiry:
    break;
  }
  return column;
}

std::string InboxSession::status_expression(const std::string& qualifier) const {
  const auto& schema = m_settings.schema;
  std::string status = schema.status_column.empty()
                           ? "NULL::text"
                           : qualifier + m_connection->quote_name(schema.status_column) + "::text";
  if (schema.in_progress_column.empty()) {
    return status;
  }
  std::string column = qualifier + m_connection->quote_name(schema.in_progress_column);
  return fmt::format("CASE WHEN {} {} THEN '{}' ELSE {} END", column,
                     schema.in_progress_when == core::InboxSchema::InProgressWhen::Null ? "IS NULL" : "IS NOT TRUE",
                     core::k_inbox_in_progress, status);
}

void InboxSession::validate() {
  const auto& schema = m_settings.schema;
  m_facts =
      inspect_inbox(m_settings.conninfo, m_settings.timeout_ms, schema.table, schema.id_column, schema.consumer_column);
  if (!m_facts.table_exists) {
    throw UsageError(fmt::format("the {} {} does not exist in {}; check {} (schema-qualified if needed)",
                                 m_settings.naming.what, schema.table, core::redact_secrets(m_settings.conninfo),
                                 m_settings.naming.table_flag));
  }
  std::string columns;
  for (const auto& c : m_facts.columns) {
    columns += (columns.empty() ? "" : ", ") + c;
  }
  for (const auto& [flag, column] : std::vector<std::pair<std::string, std::string>>{
           {m_settings.naming.id_flag, schema.id_column},
           {"--inbox-consumer-column", schema.consumer_column},
           {"--inbox-time-column", schema.time_column},
           {"--inbox-status-column", schema.status_column},
           {"the layout's in-progress column", schema.in_progress_column}}) {
    if (!column.empty() && std::find(m_facts.columns.begin(), m_facts.columns.end(), column) == m_facts.columns.end()) {
      throw UsageError(fmt::format("the {} {} has no column {} ({}); its columns are {}", m_settings.naming.what,
                                   schema.table, column, flag, columns));
    }
  }
  if (auto problem = core::inbox_column_type_problem(schema, m_facts.column_types, m_settings.naming.id_flag);
      !problem.empty()) {
    throw UsageError(problem); // a query over it would be refused: a usage error, not an unreachable server
  }
  if (!m_settings.consumer.empty() && schema.consumer_column.empty()) {
    throw UsageError("--consumer needs --inbox-consumer-column: the inbox has no consumer column to scope by");
  }
  guard([&] {
    m_table_name = quote_table(schema.table);
    m_id = m_connection->quote_name(schema.id_column);
    m_time_column = m_connection->quote_name(schema.time_column);
    m_time = time_expression("");
    m_consumer = schema.consumer_column.empty() ? "" : m_connection->quote_name(schema.consumer_column);
    std::string status = status_expression("");
    // Compare in the id column's own type so that its index is used (text, uuid, varchar …).
    pqxx::nontransaction tx(*m_connection);
    pqxx::result column = tx.exec_params(
        "SELECT CASE WHEN a.atttypid = 'bpchar'::regtype THEN 'bpchar' ELSE format_type(a.atttypid, NULL) END, "
        "coalesce(co.collisdeterministic, true), c.relkind::text, "
        "CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint ELSE pg_relation_size(c.oid) / 32 END, "
        "format_type(a.atttypid, a.atttypmod) "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "LEFT JOIN pg_collation co ON co.oid = a.attcollation WHERE a.attrelid = to_regclass($1) AND a.attname = $2",
        schema.table, schema.id_column);
    // The declared type, modifier and all (character(36)), says what the column can hold. Ids are
    // compared in the type without its modifier, which never cuts a value: character(36) is bpchar
    // (blank-padded, trailing blanks insignificant, as the column compares), never `character`,
    // which is character(1) and would cut every id to its first character.
    std::string id_type = column.empty() ? "text" : column[0][4].as<std::string>();
    m_id_cast = column.empty() ? "text" : column[0][0].as<std::string>();
    m_id_deterministic = !column.empty() && column[0][1].as<bool>();
    m_reltuples = column.empty() ? 0 : column[0][3].as<std::int64_t>();
    m_estimated_rows = column.empty() || column[0][2].as<std::string>() == "p"
                           ? std::nullopt
                           : std::optional(column[0][3].as<std::int64_t>());
    std::string consumer = schema.consumer_column.empty() ? "NULL::text" : m_consumer + "::text";
    std::string where = m_settings.consumer.empty() ? ""
                                                    : fmt::format(" WHERE {} = {}", m_consumer,
                                                                  quoted_literal(*m_connection, m_settings.consumer));
    m_copy_query =
        fmt::format("(SELECT {}::text, {}, {}, {} FROM {}{})", m_id, consumer, m_time, status, m_table_name, where);
    m_load_query =
        fmt::format("(SELECT {}::text, {}, {} FROM {}{})", m_id, epoch_us(m_time), status, m_table_name, where);
    m_id_type = id_type;
    std::string query =
        fmt::format("SELECT k.ord, {1}, {2} FROM "
                    "unnest($1::{4}[]) WITH ORDINALITY AS k(id, ord) JOIN {3} t ON t.{0} = k.id",
                    m_id, epoch_us(time_expression("t.")), status_expression("t."), m_table_name, m_id_cast);
    if (!m_settings.consumer.empty()) {
      query += fmt::format(" AND t.{} = $2", m_consumer);
    }
    m_connection->prepare("lookup", query);
  });
}

} // namespace dedupctl::connectors::postgres::detail
