#include "connectors/postgres/inbox_store.hpp"

#include "connectors/postgres/inbox.hpp"
#include "connectors/postgres/libpq_options.hpp"
#include "core/errors.hpp"
#include "core/store_uri.hpp"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include <algorithm>
#include <unordered_map>

namespace dedupctl::connectors::postgres {

InboxStore::~InboxStore() = default;

namespace {

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

class PqxxInboxStore final : public InboxStore {
public:
  explicit PqxxInboxStore(const InboxSettings& settings) : m_settings(settings) {
    guard([&] {
      m_connection =
          std::make_unique<pqxx::connection>(detail::with_connect_timeout(settings.conninfo, settings.timeout_ms));
      pqxx::nontransaction setup(*m_connection);
      setup.exec0("SET default_transaction_read_only = on");
      setup.exec0(fmt::format("SET statement_timeout = {}", settings.timeout_ms));
    });
    validate();
  }

  std::string kind() const override { return "postgres"; }

  void set_clock(core::Span retention, std::int64_t now_ms) override {
    m_retention = retention;
    m_now = now_ms;
  }

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    m_rows.clear();
    guard([&] {
      // One statement, one round trip: the session is default_transaction_read_only, so it runs in a
      // read-only transaction of its own without BEGIN and COMMIT around it.
      pqxx::nontransaction tx(*m_connection);
      pqxx::result rows = m_settings.consumer.empty()
                              ? tx.exec_prepared("lookup", array_literal(keys))
                              : tx.exec_prepared("lookup", array_literal(keys), m_settings.consumer);
      for (const auto& row : rows) {
        core::InboxRecord r;
        r.processed_at_ms = row[1].is_null() ? std::optional<std::int64_t>() : row[1].as<std::int64_t>();
        r.status = row[2].is_null() ? std::string() : row[2].as<std::string>();
        m_rows.emplace(row[0].as<std::string>(), std::move(r));
      }
    });
    core::inbox_states(keys, m_rows, m_retention, m_now, out);
  }

  std::optional<std::int64_t> oldest_row_age_ms(std::int64_t now_ms) override {
    std::optional<std::int64_t> oldest;
    guard([&] {
      pqxx::read_transaction tx(*m_connection);
      std::string query = fmt::format("SELECT (extract(epoch FROM min({}))*1000)::bigint FROM {}{}", m_time, m_table,
                                      m_settings.consumer.empty() ? "" : fmt::format(" WHERE {} = $1", m_consumer));
      pqxx::result r = m_settings.consumer.empty() ? tx.exec(query) : tx.exec_params(query, m_settings.consumer);
      if (!r.empty() && !r[0][0].is_null()) {
        oldest = now_ms - r[0][0].as<std::int64_t>();
      }
    });
    return oldest;
  }

  std::optional<bool> has_unique_constraint() override { return m_facts.unique_over_id; }

  // COPY (SELECT the four columns) TO STDOUT: absent columns come out as NULL, and only the
  // consumer's rows with --consumer. libpqxx 6 pastes the "table" of a stream_from into
  // COPY … TO STDOUT as it is, which lets a query through; every identifier in it is quoted.
  std::int64_t export_rows(const std::function<void(const std::string&)>& line) {
    std::int64_t started = 0;
    guard([&] {
      std::string where;
      {
        pqxx::nontransaction setup(*m_connection);
        setup.exec0("SET TimeZone = 'UTC'");
        setup.exec0("SET DateStyle = 'ISO'");
        pqxx::result now = setup.exec("SELECT (extract(epoch FROM clock_timestamp())*1000)::bigint");
        started = now[0][0].as<std::int64_t>();
        if (!m_settings.consumer.empty()) {
          where = " WHERE " + m_consumer + " = " + setup.quote(m_settings.consumer);
        }
      }
      const auto& schema = m_settings.schema;
      std::string consumer = schema.consumer_column.empty() ? "NULL::text" : m_consumer + "::text";
      std::string status =
          schema.status_column.empty() ? "NULL::text" : m_connection->quote_name(schema.status_column) + "::text";
      pqxx::read_transaction tx(*m_connection);
      pqxx::stream_from stream(
          tx, fmt::format("(SELECT {}::text, {}, {}, {} FROM {}{})", m_id, consumer, m_time, status, m_table, where));
      std::string raw;
      while (stream.get_raw_line(raw)) {
        line(raw);
      }
      stream.complete();
    });
    return started;
  }

  std::int64_t ids_under_several_consumers() override {
    if (m_settings.schema.consumer_column.empty()) {
      return 0;
    }
    std::int64_t count = 0;
    guard([&] {
      pqxx::read_transaction tx(*m_connection);
      pqxx::result r =
          tx.exec(fmt::format("SELECT count(*) FROM (SELECT {0} FROM {1} GROUP BY {0} HAVING count(DISTINCT "
                              "{2}) > 1) shared",
                              m_id, m_table, m_consumer));
      count = r[0][0].as<std::int64_t>();
    });
    return count;
  }

private:
  template <typename F> void guard(F&& body) {
    std::string where = core::redact_secrets(m_settings.conninfo);
    try {
      body();
    } catch (const pqxx::broken_connection& e) {
      throw UnreachableError(fmt::format("cannot reach PostgreSQL at {} ({}); check --store and that the server is up",
                                         where, detail::first_line(e.what())));
    } catch (const pqxx::sql_error& e) {
      std::string what = detail::first_line(e.what());
      if (what.find("statement timeout") != std::string::npos ||
          what.find("canceling statement") != std::string::npos) {
        throw UnreachableError(
            fmt::format("PostgreSQL at {} timed out after {} ms ({})", where, m_settings.timeout_ms, what));
      }
      if (what.find("terminating connection") != std::string::npos || what.find("server closed") != std::string::npos) {
        throw UnreachableError(fmt::format("PostgreSQL at {} closed the connection ({})", where, what));
      }
      throw UnreachableError(fmt::format("PostgreSQL at {} refused a query ({})", where, what));
    } catch (const pqxx::failure& e) {
      throw UnreachableError(fmt::format("PostgreSQL at {} failed ({})", where, detail::first_line(e.what())));
    }
  }

  std::string quote_table(const std::string& table) {
    std::string out;
    std::size_t pos = 0;
    while (true) {
      auto dot = table.find('.', pos);
      out += m_connection->quote_name(table.substr(pos, dot == std::string::npos ? std::string::npos : dot - pos));
      if (dot == std::string::npos) {
        return out;
      }
      out += '.';
      pos = dot + 1;
    }
  }

  void validate() {
    const auto& schema = m_settings.schema;
    m_facts = inspect_inbox(m_settings.conninfo, m_settings.timeout_ms, schema.table, schema.id_column,
                            schema.consumer_column);
    if (!m_facts.table_exists) {
      throw UsageError(fmt::format("the inbox table {} does not exist in {}; check --inbox-table (schema-qualified if "
                                   "needed)",
                                   schema.table, core::redact_secrets(m_settings.conninfo)));
    }
    std::string columns;
    for (const auto& c : m_facts.columns) {
      columns += (columns.empty() ? "" : ", ") + c;
    }
    for (const auto& [flag, column] :
         std::vector<std::pair<std::string, std::string>>{{"--inbox-id-column", schema.id_column},
                                                          {"--inbox-consumer-column", schema.consumer_column},
                                                          {"--inbox-time-column", schema.time_column},
                                                          {"--inbox-status-column", schema.status_column}}) {
      if (!column.empty() &&
          std::find(m_facts.columns.begin(), m_facts.columns.end(), column) == m_facts.columns.end()) {
        throw UsageError(fmt::format("the inbox table {} has no column {} ({}); its columns are {}", schema.table,
                                     column, flag, columns));
      }
    }
    if (!m_settings.consumer.empty() && schema.consumer_column.empty()) {
      throw UsageError("--consumer needs --inbox-consumer-column: the inbox has no consumer column to scope by");
    }
    guard([&] {
      m_table = quote_table(schema.table);
      m_id = m_connection->quote_name(schema.id_column);
      m_time = m_connection->quote_name(schema.time_column);
      m_consumer = schema.consumer_column.empty() ? "" : m_connection->quote_name(schema.consumer_column);
      std::string status =
          schema.status_column.empty() ? "NULL" : m_connection->quote_name(schema.status_column) + "::text";
      // Compare in the id column's own type so that its index is used (text, uuid, varchar …).
      pqxx::nontransaction tx(*m_connection);
      pqxx::result type = tx.exec_params("SELECT format_type(atttypid, NULL) FROM pg_attribute WHERE attrelid = "
                                         "to_regclass($1) AND attname = $2",
                                         schema.table, schema.id_column);
      std::string id_type = type.empty() ? "text" : type[0][0].as<std::string>();
      std::string query =
          fmt::format("SELECT {0}::text, (extract(epoch FROM {1})*1000)::bigint, {2} FROM {3} WHERE {0} "
                      "= ANY($1::{4}[])",
                      m_id, m_time, status, m_table, id_type);
      if (!m_settings.consumer.empty()) {
        query += fmt::format(" AND {} = $2", m_consumer);
      }
      m_connection->prepare("lookup", query);
    });
  }

  InboxSettings m_settings;
  std::unique_ptr<pqxx::connection> m_connection;
  InboxFacts m_facts;
  std::string m_table, m_id, m_time, m_consumer;
  core::Span m_retention;
  std::int64_t m_now = 0;
  std::unordered_map<std::string, core::InboxRecord> m_rows;
};

} // namespace

std::unique_ptr<InboxStore> InboxStore::open(const InboxSettings& settings) {
  return std::make_unique<PqxxInboxStore>(settings);
}

std::int64_t export_inbox(const InboxSettings& settings, const std::function<void(const std::string&)>& line) {
  PqxxInboxStore store(settings);
  return store.export_rows(line);
}

} // namespace dedupctl::connectors::postgres
