#include "connectors/postgres/inbox_store.hpp"

#include "connectors/postgres/inbox.hpp"
#include "connectors/postgres/libpq_options.hpp"
#include "core/store/inbox_snapshot.hpp"
#include "core/store/inbox_table.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <chrono>
#include <climits>
#include <cstdint>
#include <deque>
#include <future>

namespace dedupctl::connectors::postgres {

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

// A time column (or expression) as epoch microseconds, which the rows' readers keep as the
// millisecond they fall in (core::epoch_ms_of_us). date_part's double is exact to the microsecond
// before 2106; extract()'s numeric (PostgreSQL 14 on) cost the server three times as much per row,
// and rounded to the nearest millisecond where a snapshot's text is cut.
std::string epoch_us(const std::string& time) { return fmt::format("(date_part('epoch', {})*1000000)::bigint", time); }

std::optional<std::int64_t> ms_of(const pqxx::field& us) {
  return us.is_null() ? std::nullopt : std::optional(core::epoch_ms_of_us(us.as<std::int64_t>()));
}

// One connection to the inbox with its schema validated: the table and the named columns exist,
// their names quoted, the id column's type known, and the "lookup" statement prepared (one round
// trip a batch, = ANY by position). Read-only, or writable for a replay. Every libpq failure comes
// out of guard() as an UnreachableError naming the server, password redacted.
class InboxSession {
public:
  explicit InboxSession(const InboxSettings& settings) : m_settings(settings) {
    guard([&] { m_connection = connect(); });
    validate();
  }

  const InboxSettings& settings() const { return m_settings; }
  pqxx::connection& connection() { return *m_connection; }
  const InboxFacts& facts() const { return m_facts; }
  const std::string& id_type() const { return m_id_type; }
  bool id_deterministic() const { return m_id_deterministic; }
  // Rows the planner expects; nullopt for a partitioned table, whose estimate is not kept.
  std::optional<std::int64_t> estimated_rows() const { return m_estimated_rows; }
  const std::string& copy_query() const { return m_copy_query; }
  const std::string& load_query() const { return m_load_query; }
  const std::string& quoted_table() const { return m_table_name; }
  const std::string& quoted_id() const { return m_id; }
  const std::string& quoted_time() const { return m_time; }
  const std::string& quoted_consumer() const { return m_consumer; }

  // Whether the id column can hold `key`, and what it cannot hold otherwise (empty: any key).
  bool can_hold(const std::string& key) const { return core::inbox_id_fits(m_id_type, key); }
  std::string holds_only() const {
    bool restrictive =
        m_id_type == "uuid" || m_id_type == "bigint" || m_id_type == "integer" || m_id_type == "smallint";
    return restrictive ? fmt::format("the inbox's id column {} is {}", m_settings.schema.id_column, m_id_type) : "";
  }

  // The rows of `keys` (a key the column cannot hold has none: asking would fail the whole batch),
  // in one statement: the session is default_transaction_read_only, so it runs in a read-only
  // transaction of its own. Rows come back by the key's position: the column's equality decides (a
  // uuid matches whatever case it was sent in). The states' values point into `values`.
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
              std::deque<std::string>& values) {
    m_sent.clear();
    m_positions.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (can_hold(keys[i])) {
        m_sent.push_back(keys[i]);
        m_positions.push_back(i);
      }
    }
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

  // The four columns (id, consumer, processed_at, status) as COPY … TO STDOUT writes them: absent
  // columns come out as NULL, and only the consumer's rows with --consumer. libpqxx 6 pastes the
  // "table" of a stream_from into COPY … TO STDOUT as it is, which lets a query through; every
  // identifier in it is quoted, and the consumer is a quoted literal. Returns when it started.
  std::int64_t copy_rows(pqxx::connection& connection, const std::string& query,
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

  template <typename F> void guard(F&& body) const {
    std::string where = core::redact_secrets(m_settings.conninfo);
    try {
      body();
    } catch (const pqxx::broken_connection& e) {
      throw UnreachableError(fmt::format("cannot reach PostgreSQL at {} ({}); check --store and that the server is up",
                                         where, detail::first_line(e.what())));
    } catch (const pqxx::sql_error& e) {
      std::string what = detail::first_line(e.what());
      if (e.sqlstate() == "22003") { // "bigint out of range": the epoch of an infinite time, most likely
        if (auto refusal = infinite_times()) {
          throw UsageError(*refusal);
        }
      }
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

  // PostgreSQL keeps 'infinity' and '-infinity' as times, whose epoch no bigint holds: a statement
  // that asks for one fails whole. The cleanup's retention is counted from the row's time, which
  // such a row does not give, so the audit cannot go on: a usage error naming the rows and what to
  // write instead. Asked on a connection of its own (the failed one may be another thread's);
  // nullopt if none is found or the question fails.
  std::optional<std::string> infinite_times() const {
    const auto& schema = m_settings.schema;
    std::string where = fmt::format("NOT isfinite({})", m_time);
    std::optional<std::string> refusal;
    try {
      auto connection = connect();
      pqxx::nontransaction tx(*connection);
      if (!m_settings.consumer.empty()) {
        where += fmt::format(" AND {} = {}", m_consumer, connection->quote(m_settings.consumer));
      }
      pqxx::result r = tx.exec(fmt::format("SELECT {}::text, {}, {}::text, count(*) OVER () FROM {} WHERE {} "
                                           "ORDER BY 1 LIMIT 1",
                                           m_id, m_consumer.empty() ? "NULL::text" : m_consumer + "::text", m_time,
                                           m_table_name, where));
      if (!r.empty()) {
        auto rows = r[0][3].as<std::int64_t>();
        std::string consumer =
            r[0][1].is_null() ? "" : fmt::format(" ({} {})", schema.consumer_column, r[0][1].c_str());
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

  // Rows the table holds by the planner's count (what the COPY load reserves).
  std::int64_t reltuples() const { return m_reltuples; }
  // A new connection with the session's settings (the COPY load runs on one of its own).
  std::unique_ptr<pqxx::connection> connect() const {
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

private:
  std::string quote_table(const std::string& table) {
    std::string out;
    for (auto part : core::split(table, '.')) {
      // Folded to lower case as the server folds an unquoted name (and as to_regclass found it).
      if (!out.empty()) {
        out += '.';
      }
      out += m_connection->quote_name(core::ascii_lower(part));
    }
    return out;
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
      m_table_name = quote_table(schema.table);
      m_id = m_connection->quote_name(schema.id_column);
      m_time = m_connection->quote_name(schema.time_column);
      m_consumer = schema.consumer_column.empty() ? "" : m_connection->quote_name(schema.consumer_column);
      std::string status =
          schema.status_column.empty() ? "NULL" : m_connection->quote_name(schema.status_column) + "::text";
      // Compare in the id column's own type so that its index is used (text, uuid, varchar …).
      pqxx::nontransaction tx(*m_connection);
      pqxx::result column = tx.exec_params(
          "SELECT format_type(a.atttypid, NULL), coalesce(co.collisdeterministic, true), c.relkind::text, "
          "CASE WHEN c.reltuples >= 0 THEN c.reltuples::bigint ELSE pg_relation_size(c.oid) / 32 END "
          "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
          "LEFT JOIN pg_collation co ON co.oid = a.attcollation WHERE a.attrelid = to_regclass($1) AND a.attname = $2",
          schema.table, schema.id_column);
      std::string id_type = column.empty() ? "text" : column[0][0].as<std::string>();
      m_id_deterministic = !column.empty() && column[0][1].as<bool>();
      m_reltuples = column.empty() ? 0 : column[0][3].as<std::int64_t>();
      m_estimated_rows = column.empty() || column[0][2].as<std::string>() == "p"
                             ? std::nullopt
                             : std::optional(column[0][3].as<std::int64_t>());
      std::string consumer = schema.consumer_column.empty() ? "NULL::text" : m_consumer + "::text";
      std::string where =
          m_settings.consumer.empty() ? "" : " WHERE " + m_consumer + " = " + m_connection->quote(m_settings.consumer);
      m_copy_query =
          fmt::format("(SELECT {}::text, {}, {}, {} FROM {}{})", m_id, consumer, m_time, status, m_table_name, where);
      m_load_query =
          fmt::format("(SELECT {}::text, {}, {} FROM {}{})", m_id, epoch_us(m_time), status, m_table_name, where);
      m_id_type = id_type;
      std::string query =
          fmt::format("SELECT k.ord, {1}, {2} FROM "
                      "unnest($1::{4}[]) WITH ORDINALITY AS k(id, ord) JOIN {3} t ON t.{0} = k.id",
                      m_id, epoch_us("t." + m_time), schema.status_column.empty() ? "NULL::text" : "t." + status,
                      m_table_name, id_type);
      if (!m_settings.consumer.empty()) {
        query += fmt::format(" AND t.{} = $2", m_consumer);
      }
      m_connection->prepare("lookup", query);
    });
  }

  InboxSettings m_settings;
  std::unique_ptr<pqxx::connection> m_connection;
  InboxFacts m_facts;
  std::string m_table_name, m_id, m_time, m_consumer, m_copy_query, m_load_query;
  std::string m_id_type;
  bool m_id_deterministic = false;
  std::int64_t m_reltuples = 0;
  std::optional<std::int64_t> m_estimated_rows;
  std::vector<std::string> m_sent;      // this batch's keys the column can hold …
  std::vector<std::size_t> m_positions; // … and their positions in the batch
};

// The whole inbox (the consumer's rows) in memory: COPY … TO STDOUT on a connection of its own,
// started while the log is read; the first lookup waits for it and rethrows what it threw.
class InboxLoader {
public:
  explicit InboxLoader(InboxSession& session) : m_session(session) {
    m_table.reserve(static_cast<std::size_t>(std::max<std::int64_t>(session.reltuples(), 0)));
    m_load = std::async(std::launch::async, [this] { load(); });
  }
  ~InboxLoader() {
    if (m_load.valid()) {
      m_load.wait(); // it uses this object; its outcome no longer matters
    }
  }
  InboxLoader(const InboxLoader&) = delete;
  InboxLoader& operator=(const InboxLoader&) = delete;

  const core::InboxTable& table() {
    if (m_load.valid()) {
      auto waiting = std::chrono::steady_clock::now();
      m_load.get();
      m_wait_us =
          std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - waiting).count();
    }
    return m_table;
  }
  std::string stats() const {
    return fmt::format("{} rows loaded with COPY in {} ms (the audit waited {} ms for it); ", m_table.size(),
                       m_load_ms.load(), m_wait_us / 1000);
  }

private:
  void load() {
    auto started = std::chrono::steady_clock::now();
    const auto& settings = m_session.settings();
    m_session.guard([&] {
      auto connection = m_session.connect();
      core::InboxLoadRow row;
      std::int64_t rows = 0;
      m_session.copy_rows(*connection, m_session.load_query(), [&](const std::string& raw) {
        if (++rows % 65536 == 0 && settings.stop && settings.stop->load()) {
          throw InterruptedError("interrupted");
        }
        if (!core::parse_inbox_load_row(raw, row)) {
          throw pqxx::failure(fmt::format("unexpected COPY row {}", rows));
        }
        m_table.insert(row.event_id, row.processed_at_ms, row.status);
      });
    });
    m_load_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  }

  InboxSession& m_session;
  core::InboxTable m_table;
  std::future<void> m_load;
  std::atomic<std::int64_t> m_load_ms{0};
  std::int64_t m_wait_us = 0;
};

// The inbox as an audit reads it: batched lookups, or the whole inbox loaded beside the log read
// (decided by --inbox-lookup and the table's size), and the facts its findings need.
class PqxxInboxStore final : public core::InboxStore {
public:
  explicit PqxxInboxStore(const InboxSettings& settings) : m_session(settings) {
    if (decide_load()) {
      m_loader.emplace(m_session);
    }
  }

  std::string kind() const override { return "postgres"; }
  std::string lookup_method() const override { return m_loader ? "COPY into memory" : "batched = ANY"; }
  std::optional<bool> has_unique_constraint() override { return m_session.facts().unique_over_id; }

  std::string lookup_stats() const override {
    return (m_loader ? m_loader->stats() : std::string()) +
           fmt::format("{} ids looked up in {} ms ({} calls, waiting included)", m_ids_looked_up, m_lookup_us / 1000,
                       m_lookups);
  }

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    auto started = std::chrono::steady_clock::now();
    const auto& settings = m_session.settings();
    if (settings.stop && settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    if (m_loader) {
      m_loader->table().states(keys, out);
    } else {
      m_session.lookup(keys, out, m_values);
    }
    m_lookup_us +=
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
    m_ids_looked_up += static_cast<std::int64_t>(keys.size());
    ++m_lookups;
  }

  std::optional<std::int64_t> oldest_row_age_ms(std::int64_t now_ms) override {
    std::optional<std::int64_t> oldest;
    m_session.guard([&] {
      pqxx::read_transaction tx(m_session.connection());
      std::string query = fmt::format(
          "SELECT {} FROM {}{}", epoch_us(fmt::format("min({})", m_session.quoted_time())), m_session.quoted_table(),
          m_session.settings().consumer.empty() ? "" : fmt::format(" WHERE {} = $1", m_session.quoted_consumer()));
      pqxx::result r =
          m_session.settings().consumer.empty() ? tx.exec(query) : tx.exec_params(query, m_session.settings().consumer);
      if (!r.empty() && !r[0][0].is_null()) {
        oldest = now_ms - *ms_of(r[0][0]);
      }
    });
    return oldest;
  }

  std::int64_t ids_under_several_consumers() override {
    if (m_session.settings().schema.consumer_column.empty()) {
      return 0;
    }
    std::int64_t count = 0;
    m_session.guard([&] {
      pqxx::read_transaction tx(m_session.connection());
      pqxx::result r =
          tx.exec(fmt::format("SELECT count(*) FROM (SELECT {0} FROM {1} GROUP BY {0} HAVING count(DISTINCT "
                              "{2}) > 1) shared",
                              m_session.quoted_id(), m_session.quoted_table(), m_session.quoted_consumer()));
      count = r[0][0].as<std::int64_t>();
    });
    return count;
  }

private:
  // Loading compares ids byte for byte, which is the column's equality only for text-like types with
  // a deterministic collation (a uuid matches whatever case and hyphens its input had).
  bool decide_load() const {
    const auto& m_settings = m_session.settings();
    const std::string& id_type = m_session.id_type();
    bool deterministic = m_session.id_deterministic();
    auto estimated_rows = m_session.estimated_rows();
    bool text_like = id_type == "text" || id_type == "character varying";
    if (m_settings.lookup == InboxLookup::Load && !(text_like && deterministic)) {
      throw UsageError(fmt::format("--inbox-lookup load compares event ids byte for byte, but {}.{} is {}{}; use "
                                   "--inbox-lookup batches (or auto)",
                                   m_settings.schema.table, m_settings.schema.id_column, id_type,
                                   deterministic ? "" : " with a nondeterministic collation"));
    }
    if (m_settings.lookup == InboxLookup::Auto) {
      std::int64_t bound = std::max<std::int64_t>(k_load_rows, 2 * m_settings.expected_events.value_or(0));
      return text_like && deterministic && estimated_rows && *estimated_rows <= bound;
    }
    return m_settings.lookup == InboxLookup::Load;
  }

  // Auto loads tables up to this many rows (about 60 MB in memory), or twice the audit's events.
  static constexpr std::int64_t k_load_rows = 2'000'000;

  InboxSession m_session;
  std::optional<InboxLoader> m_loader; // after the session it uses, so it goes first
  std::deque<std::string> m_values;    // this batch's statuses (the states' values)
  std::int64_t m_lookup_us = 0, m_ids_looked_up = 0, m_lookups = 0;
};

// The inbox as the placement a replay routes through: its own writable session, a transaction per
// batch (INSERT … ON CONFLICT DO NOTHING, then DELETE of the failed deliveries and COMMIT).
class InboxReplayPlacement final : public core::ReplayPlacement {
public:
  InboxReplayPlacement(const InboxSettings& settings, std::vector<std::string> markers)
      : m_session(writable(settings)), m_markers(std::move(markers)) {
    if (!m_session.facts().unique_over_id) {
      throw UsageError(fmt::format("the inbox {} has no primary key or unique index over its id: it cannot refuse a "
                                   "second insert, so a replay cannot claim through it; add the constraint",
                                   settings.schema.table));
    }
    m_session.guard([&] { prepare_replay(); });
  }

  std::string kind() const override { return "postgres"; }
  // One connection, one open transaction: a batch is settled before the next is claimed.
  std::size_t max_in_flight() const override { return 1; }

  std::string unfit_keys() const override { return m_session.holds_only(); }

  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override {
    const auto& fit = fitting(keys, out);
    m_session.lookup(fit, m_states, m_values);
    for (std::size_t i = 0; i < fit.size(); ++i) {
      out[m_positions[i]] = core::plan_claim(m_states[i], m_markers);
    }
  }

  void claim(const std::vector<std::string>& keys, const std::string&, std::vector<core::Claim>& out) override {
    const auto& fit = fitting(keys, out);
    claim_rows(fit, m_inserted, m_status);
    for (std::size_t i = 0; i < fit.size(); ++i) {
      out[m_positions[i]] = m_inserted[i]                                  ? core::Claim::Claimed
                            : core::is_in_progress(m_status[i], m_markers) ? core::Claim::HeldByOther
                                                                           : core::Claim::Done;
    }
  }

  void settle(const std::vector<std::string>& keys, const std::vector<core::Claim>& claims,
              const std::vector<bool>& delivered) override {
    m_failed.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (claims[i] == core::Claim::Claimed && !delivered[i]) {
        m_failed.push_back(keys[i]);
      }
    }
    settle_rows(m_failed);
  }

private:
  // Replay: BEGIN and insert the batch's rows; returns per key whether it was inserted, and the
  // status of the rows that were not (empty without a status column).
  void claim_rows(const std::vector<std::string>& keys, std::vector<bool>& inserted, std::vector<std::string>& status) {
    inserted.assign(keys.size(), false);
    status.assign(keys.size(), std::string());
    m_session.guard([&] {
      m_work.reset();
      m_work = std::make_unique<pqxx::work>(m_session.connection());
      pqxx::result rows = m_session.settings().consumer.empty()
                              ? m_work->exec_prepared("claim", array_literal(keys))
                              : m_work->exec_prepared("claim", array_literal(keys), m_session.settings().consumer);
      for (const auto& row : rows) {
        inserted[row[0].as<std::size_t>() - 1] = true;
      }
      if (!m_session.settings().schema.status_column.empty()) {
        pqxx::result existing =
            m_session.settings().consumer.empty()
                ? m_work->exec_prepared("lookup", array_literal(keys))
                : m_work->exec_prepared("lookup", array_literal(keys), m_session.settings().consumer);
        for (const auto& row : existing) {
          auto i = row[0].as<std::size_t>() - 1;
          if (!inserted[i] && !row[2].is_null()) {
            status[i] = row[2].c_str();
          }
        }
      }
    });
  }

  // Replay: delete the rows of failed deliveries and COMMIT the batch.
  void settle_rows(const std::vector<std::string>& failed) {
    m_session.guard([&] {
      if (!m_work) {
        return;
      }
      if (!failed.empty()) {
        if (m_session.settings().consumer.empty()) {
          m_work->exec_prepared("release", array_literal(failed));
        } else {
          m_work->exec_prepared("release", array_literal(failed), m_session.settings().consumer);
        }
      }
      try {
        m_work->commit();
      } catch (const pqxx::in_doubt_error&) {
        // The COMMIT went out and the connection died before its answer: the batch may be durable.
        // The checkpoint stays before it; a rerun with it finds those rows (a dedup record exists)
        // and their events in the sink, so nothing is applied twice either way.
        m_work.reset();
        throw UnreachableError(fmt::format(
            "PostgreSQL at {} went away during a batch's COMMIT: whether it committed is unknown; rerun with "
            "--checkpoint (what committed is then skipped as a dedup record)",
            core::redact_secrets(m_session.settings().conninfo)));
      }
      m_work.reset();
    });
  }

  // INSERT the batch's ids (with the consumer, now, and status 'done' where the table has those
  // columns) returning the positions inserted; DELETE by id for releases.
  void prepare_replay() {
    const auto& settings = m_session.settings();
    const auto& schema = settings.schema;
    const std::string& id_type = m_session.id_type();
    const std::string& m_id = m_session.quoted_id();
    const std::string& m_table_name = m_session.quoted_table();
    auto& connection = m_session.connection();
    std::string columns = m_id, values = "k.id";
    if (!settings.consumer.empty()) {
      columns += ", " + m_session.quoted_consumer();
      values += ", $2";
    }
    columns += ", " + m_session.quoted_time();
    values += ", now()";
    if (!schema.status_column.empty()) {
      columns += ", " + connection.quote_name(schema.status_column);
      values += ", 'done'";
    }
    // RETURNING cannot name the ordinality of the source: match the ids inserted back to positions.
    connection.prepare(
        "claim", fmt::format("WITH k AS (SELECT id, ord FROM unnest($1::{0}[]) WITH ORDINALITY AS k(id, ord)), "
                             "ins AS (INSERT INTO {1} ({2}) SELECT {3} FROM k ON CONFLICT DO NOTHING RETURNING {4}) "
                             "SELECT k.ord FROM k JOIN ins ON ins.{4} = k.id",
                             id_type, m_table_name, columns, values, m_id));
    std::string release = fmt::format("DELETE FROM {} WHERE {} = ANY($1::{}[])", m_table_name, m_id, id_type);
    if (!settings.consumer.empty()) {
      release += fmt::format(" AND {} = $2", m_session.quoted_consumer());
    }
    connection.prepare("release", release);
  }

  // The keys the id column can hold (their positions in m_positions); `out` is Unfit for the rest.
  // Asking for a key the column's type cannot hold would fail the whole batch.
  const std::vector<std::string>& fitting(const std::vector<std::string>& keys, std::vector<core::Claim>& out) {
    out.assign(keys.size(), core::Claim::Unfit);
    m_fit.clear();
    m_positions.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (m_session.can_hold(keys[i])) {
        m_fit.push_back(keys[i]);
        m_positions.push_back(i);
      }
    }
    return m_fit;
  }

  static InboxSettings writable(InboxSettings settings) {
    settings.writable = true;
    settings.lookup = InboxLookup::Batches;
    return settings;
  }

  InboxSession m_session;
  std::unique_ptr<pqxx::work> m_work; // a batch's transaction, from its claim to its settling
  std::vector<std::string> m_markers;
  std::deque<std::string> m_values; // a plan's statuses (the states' values)
  std::vector<core::RecordState> m_states;
  std::vector<bool> m_inserted;
  std::vector<std::string> m_status;
  std::vector<std::string> m_failed;
  std::vector<std::string> m_fit;
  std::vector<std::size_t> m_positions;
};

} // namespace

std::unique_ptr<core::ReplayPlacement> open_inbox_replay(const InboxSettings& settings,
                                                         std::vector<std::string> in_progress_values) {
  return std::make_unique<InboxReplayPlacement>(settings, std::move(in_progress_values));
}

std::unique_ptr<core::InboxStore> open_inbox_store(const InboxSettings& settings) {
  return std::make_unique<PqxxInboxStore>(settings);
}

std::int64_t export_inbox(const InboxSettings& settings, const std::function<void(const std::string&)>& line) {
  InboxSession session(settings); // an export streams the rows once: nothing to load
  std::int64_t started = 0;
  bool infinite = false;
  session.guard([&] {
    started = session.copy_rows(session.connection(), session.copy_query(), [&](const std::string& raw) {
      // The time is the third of the four columns, as COPY writes it: a snapshot no audit can read
      // is not written.
      std::string_view fields[4];
      if (core::split_copy_fields(raw, fields, 4) && (fields[2] == "infinity" || fields[2] == "-infinity")) {
        infinite = true;
      }
      line(raw);
    });
  });
  if (infinite) {
    throw UsageError(session.infinite_times().value_or(fmt::format(
        "the inbox table {} has rows whose {} is infinite: set it to when the event was processed (NULL for "
        "a row kept forever)",
        settings.schema.table, settings.schema.time_column)));
  }
  return started;
}

} // namespace dedupctl::connectors::postgres
