#pragma once

#include "connectors/postgres/inbox.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/postgres/libpq_options.hpp"
#include "connectors/postgres/sqlstate.hpp"
#include "core/store/inbox_table.hpp"
#include "core/store/record_state.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// The one connection to an inbox that every job of the connector starts from (the audit's store and
// its COPY loader, the replay's placement, the export), and the SQL pieces they share (internal to
// connectors/postgres).
namespace dedupctl::connectors::postgres::detail {

// A PostgreSQL array literal of text values: {"a","b\"c"}.
std::string array_literal(const std::vector<std::string>& values);

// A time column (or expression) as epoch microseconds, which the rows' readers keep as the
// millisecond they fall in (core::epoch_ms_of_us).
std::string epoch_us(const std::string& time);
std::optional<std::int64_t> ms_of(const pqxx::field& us);
// A string as an SQL literal: what pqxx's quote() gives, formatted here, since GCC 12 at -O3 takes
// quote()'s inlined "'" + … + "'" for an overlapping copy (-Wrestrict, a false positive).
std::string quoted_literal(pqxx::connection& connection, const std::string& value);

// One connection to the inbox with its schema validated: the table and the named columns exist,
// their names quoted, the id column's type known, and the "lookup" statement prepared (one round
// trip a batch, = ANY by position). Read-only, or writable for a replay. Every libpq failure comes
// out of guard() as an UnreachableError naming the server, password redacted.
class InboxSession {
public:
  explicit InboxSession(const InboxSettings& settings);

  const InboxSettings& settings() const { return m_settings; }
  pqxx::connection& connection() { return *m_connection; }
  const InboxFacts& facts() const { return m_facts; }
  // The id column's declared type (character(36), uuid …), and the type ids are cast to for
  // comparing with it, which never cuts one (bpchar for character(n)).
  const std::string& id_type() const { return m_id_type; }
  const std::string& id_cast() const { return m_id_cast; }
  bool id_deterministic() const { return m_id_deterministic; }
  // Rows the planner expects; nullopt for a partitioned table, whose estimate is not kept.
  std::optional<std::int64_t> estimated_rows() const { return m_estimated_rows; }
  // Rows the table holds by the planner's count (what the COPY load reserves).
  std::int64_t reltuples() const { return m_reltuples; }
  const std::string& copy_query() const { return m_copy_query; }
  const std::string& load_query() const { return m_load_query; }
  const std::string& quoted_table() const { return m_table_name; }
  const std::string& quoted_id() const { return m_id; }
  // The time column as named (for an INSERT) and as a timestamptz expression (for reading: epoch
  // milliseconds and text converted), and the status a row reads as (its in-progress column decided).
  const std::string& quoted_time() const { return m_time_column; }
  const std::string& time_value() const { return m_time; }
  const std::string& quoted_consumer() const { return m_consumer; }

  // Whether the id column can hold `key`, and what it cannot hold otherwise (empty: any key).
  bool can_hold(const std::string& key) const { return core::inbox_id_fits(m_id_type, key); }
  std::string holds_only() const;
  // The keys it can hold into `fit`, with their positions in `keys`: asking for a key the column's
  // type cannot hold would fail the whole batch.
  void fitting(const std::vector<std::string>& keys, std::vector<std::string>& fit,
               std::vector<std::size_t>& positions) const {
    fit.clear();
    positions.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (can_hold(keys[i])) {
        fit.push_back(keys[i]);
        positions.push_back(i);
      }
    }
  }

  // The rows of `keys` (a key the column cannot hold has none: asking would fail the whole batch),
  // in one statement: the session is default_transaction_read_only, so it runs in a read-only
  // transaction of its own. Rows come back by the key's position: the column's equality decides (a
  // uuid matches whatever case it was sent in). The states' values point into `values`.
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
              std::deque<std::string>& values);

  // The four columns (id, consumer, processed_at, status) as COPY … TO STDOUT writes them: absent
  // columns come out as NULL, and only the consumer's rows with --consumer. libpqxx 6 pastes the
  // "table" of a stream_from into COPY … TO STDOUT as it is, which lets a query through; every
  // identifier in it is quoted, and the consumer is a quoted literal. Returns when it started.
  std::int64_t copy_rows(pqxx::connection& connection, const std::string& query,
                         const std::function<void(const std::string&)>& line) const;

  // Runs `body`, turning what libpq throws into the errors of core/util/errors.hpp: a connection
  // that cannot be made or is lost, a statement the server refused or cut (by its SQLSTATE:
  // connectors/postgres/sqlstate.hpp), an infinite time a bigint cannot hold (a UsageError naming the
  // rows).
  template <typename F> void guard(F&& body) const {
    std::string where = core::redact_secrets(m_settings.conninfo);
    try {
      body();
    } catch (const pqxx::broken_connection& e) {
      throw UnreachableError(fmt::format("cannot reach PostgreSQL at {} ({}); check {} and that the server is up",
                                         where, first_line(e.what()), m_settings.naming.store_flag));
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() == "22003") { // "bigint out of range": the epoch of an infinite time, most likely
        if (auto refusal = infinite_times()) {
          throw UsageError(*refusal);
        }
      }
      throw_unreachable(e, where, "a query", m_settings.timeout_ms);
    } catch (const pqxx::failure& e) {
      throw UnreachableError(fmt::format("PostgreSQL at {} failed ({})", where, first_line(e.what())));
    }
  }

  // PostgreSQL keeps 'infinity' and '-infinity' as times, whose epoch no bigint holds: a statement
  // that asks for one fails whole. The cleanup's retention is counted from the row's time, which
  // such a row does not give, so the audit cannot go on: a usage error naming the rows and what to
  // write instead. Asked on a connection of its own (the failed one may be another thread's);
  // nullopt if none is found or the question fails.
  std::optional<std::string> infinite_times() const;

  // A new connection with the session's settings (the COPY load runs on one of its own).
  std::unique_ptr<pqxx::connection> connect() const;

private:
  std::string quote_table(const std::string& table);
  void validate();

  InboxSettings m_settings;
  std::unique_ptr<pqxx::connection> m_connection;
  InboxFacts m_facts;
  std::string time_expression(const std::string& qualifier) const;
  std::string status_expression(const std::string& qualifier) const;
  std::string m_table_name, m_id, m_time_column, m_time, m_consumer, m_copy_query, m_load_query;
  std::string m_id_type, m_id_cast;
  bool m_id_deterministic = false;
  std::int64_t m_reltuples = 0;
  std::optional<std::int64_t> m_estimated_rows;
  std::vector<std::string> m_sent;      // this batch's keys the column can hold …
  std::vector<std::size_t> m_positions; // … and their positions in the batch
};

} // namespace dedupctl::connectors::postgres::detail
