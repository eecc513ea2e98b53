#include "connectors/postgres/inbox_store.hpp"

#include "connectors/postgres/inbox.hpp"
#include "connectors/postgres/libpq_options.hpp"
#include "core/errors.hpp"
#include "core/inbox_snapshot.hpp"
#include "core/inbox_table.hpp"
#include "core/store_uri.hpp"

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
    guard([&] { m_connection = connect(); });
    validate();
    if (m_load_rows && !settings.writable) {
      m_table.reserve(static_cast<std::size_t>(std::max<std::int64_t>(m_estimated_rows, 0)));
      start_load();
    }
  }

  ~PqxxInboxStore() override {
    if (m_load.valid()) {
      m_load.wait(); // it uses this object; its outcome no longer matters
    }
  }

  std::string lookup_method() const override { return m_load_rows ? "COPY into memory" : "batched = ANY"; }

  std::string kind() const override { return "postgres"; }

  std::string lookup_stats() const override {
    std::string out;
    if (m_load_rows) {
      out = fmt::format("{} rows loaded with COPY in {} ms (the audit waited {} ms for it); ", m_table.size(),
                        m_load_ms.load(), m_wait_us / 1000);
    }
    return out + fmt::format("{} ids looked up in {} ms ({} calls, waiting included)", m_ids_looked_up,
                             m_lookup_us / 1000, m_lookups);
  }

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    auto started = std::chrono::steady_clock::now();
    lookup_timed(keys, out);
    m_lookup_us +=
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
    m_ids_looked_up += static_cast<std::int64_t>(keys.size());
    ++m_lookups;
  }

  void lookup_timed(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
    if (m_settings.stop && m_settings.stop->load()) {
      throw InterruptedError("interrupted");
    }
    if (m_load_rows) {
      if (m_load.valid()) {
        auto waiting = std::chrono::steady_clock::now();
        m_load.get(); // the first lookup waits for the load and rethrows what it threw
        m_wait_us =
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - waiting).count();
      }
      m_table.states(keys, out);
      return;
    }
    // Keys the id column's type cannot hold (not a uuid, not a number) have no row: asking would
    // fail the whole batch.
    m_sent.clear();
    m_positions.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (castable(keys[i])) {
        m_sent.push_back(keys[i]);
        m_positions.push_back(i);
      }
    }
    out.assign(keys.size(), core::RecordState{});
    m_values.clear();
    guard([&] {
      // One statement, one round trip: the session is default_transaction_read_only, so it runs in a
      // read-only transaction of its own without BEGIN and COMMIT around it. Rows come back by the
      // key's position: the column's equality decides (a uuid matches whatever case it was sent in).
      pqxx::nontransaction tx(*m_connection);
      pqxx::result rows = m_settings.consumer.empty()
                              ? tx.exec_prepared("lookup", array_literal(m_sent))
                              : tx.exec_prepared("lookup", array_literal(m_sent), m_settings.consumer);
      for (const auto& row : rows) {
        auto& state = out[m_positions[row[0].as<std::size_t>() - 1]];
        if (state.kind == core::RecordState::Kind::Present) {
          continue; // the first row wins (several consumers' rows, unscoped)
        }
        m_values.emplace_back(row[2].is_null() ? "" : row[2].c_str());
        state = core::inbox_row(row[1].is_null() ? std::optional<std::int64_t>() : row[1].as<std::int64_t>(),
                                m_values.back());
      }
    });
  }

  std::optional<std::int64_t> oldest_row_age_ms(std::int64_t now_ms) override {
    std::optional<std::int64_t> oldest;
    guard([&] {
      pqxx::read_transaction tx(*m_connection);
      std::string query =
          fmt::format("SELECT (extract(epoch FROM min({}))*1000)::bigint FROM {}{}", m_time, m_table_name,
                      m_settings.consumer.empty() ? "" : fmt::format(" WHERE {} = $1", m_consumer));
      pqxx::result r = m_settings.consumer.empty() ? tx.exec(query) : tx.exec_params(query, m_settings.consumer);
      if (!r.empty() && !r[0][0].is_null()) {
        oldest = now_ms - r[0][0].as<std::int64_t>();
      }
    });
    return oldest;
  }

  std::optional<bool> has_unique_constraint() override { return m_facts.unique_over_id; }

  // Whether the id column can hold `key` (any key unless it is a uuid or an integer column), and what
  // it cannot hold otherwise.
  bool can_hold(const std::string& key) const { return castable(key); }
  std::string holds_only() const {
    bool restrictive = m_id_type == "uuid" || m_id_type == "bigint" || m_id_type == "integer" || m_id_type == "smallint";
    return restrictive ? fmt::format("the inbox's id column {} is {}", m_settings.schema.id_column, m_id_type) : "";
  }

  // Replay: BEGIN and insert the batch's rows; returns per key whether it was inserted, and the
  // status of the rows that were not (empty without a status column).
  void claim_rows(const std::vector<std::string>& keys, std::vector<bool>& inserted, std::vector<std::string>& status) {
    inserted.assign(keys.size(), false);
    status.assign(keys.size(), std::string());
    guard([&] {
      m_work.reset();
      m_work = std::make_unique<pqxx::work>(*m_connection);
      pqxx::result rows = m_settings.consumer.empty()
                              ? m_work->exec_prepared("claim", array_literal(keys))
                              : m_work->exec_prepared("claim", array_literal(keys), m_settings.consumer);
      for (const auto& row : rows) {
        inserted[row[0].as<std::size_t>() - 1] = true;
      }
      if (!m_settings.schema.status_column.empty()) {
        pqxx::result existing = m_settings.consumer.empty()
                                    ? m_work->exec_prepared("lookup", array_literal(keys))
                                    : m_work->exec_prepared("lookup", array_literal(keys), m_settings.consumer);
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
    guard([&] {
      if (!m_work) {
        return;
      }
      if (!failed.empty()) {
        if (m_settings.consumer.empty()) {
          m_work->exec_prepared("release", array_literal(failed));
        } else {
          m_work->exec_prepared("release", array_literal(failed), m_settings.consumer);
        }
      }
      m_work->commit();
      m_work.reset();
    });
  }

  // COPY (SELECT the four columns) TO STDOUT in the snapshot's format; returns when it started.
  std::int64_t export_rows(const std::function<void(const std::string&)>& line) {
    std::int64_t started = 0;
    guard([&] { started = copy_rows(*m_connection, m_copy_query, line); });
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
                              m_id, m_table_name, m_consumer));
      count = r[0][0].as<std::int64_t>();
    });
    return count;
  }

private:
  // A read-only session with the statement timeout.
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
      pqxx::result now = setup.exec("SELECT (extract(epoch FROM clock_timestamp())*1000)::bigint");
      started = now[0][0].as<std::int64_t>();
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

  // The whole inbox (the consumer's rows) into m_table, on a connection of its own while the log is
  // read; the first lookup waits for it.
  void start_load() {
    m_load = std::async(std::launch::async, [this] {
      auto started = std::chrono::steady_clock::now();
      guard([&] {
        auto connection = connect();
        core::InboxLoadRow row;
        std::int64_t rows = 0;
        copy_rows(*connection, m_load_query, [&](const std::string& raw) {
          if (++rows % 65536 == 0 && m_settings.stop && m_settings.stop->load()) {
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
    });
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
      m_estimated_rows = column.empty() ? 0 : column[0][3].as<std::int64_t>();
      decide_lookup(id_type, !column.empty() && column[0][1].as<bool>(),
                    column.empty() || column[0][2].as<std::string>() == "p"
                        ? std::nullopt
                        : std::optional(column[0][3].as<std::int64_t>()));
      std::string consumer = schema.consumer_column.empty() ? "NULL::text" : m_consumer + "::text";
      std::string where =
          m_settings.consumer.empty() ? "" : " WHERE " + m_consumer + " = " + m_connection->quote(m_settings.consumer);
      m_copy_query =
          fmt::format("(SELECT {}::text, {}, {}, {} FROM {}{})", m_id, consumer, m_time, status, m_table_name, where);
      m_load_query = fmt::format("(SELECT {}::text, (extract(epoch FROM {})*1000)::bigint, {} FROM {}{})", m_id, m_time,
                                 status, m_table_name, where);
      m_id_type = id_type;
      std::string query =
          fmt::format("SELECT k.ord, (extract(epoch FROM t.{1})*1000)::bigint, {2} FROM "
                      "unnest($1::{4}[]) WITH ORDINALITY AS k(id, ord) JOIN {3} t ON t.{0} = k.id",
                      m_id, m_time, schema.status_column.empty() ? "NULL::text" : "t." + status, m_table_name, id_type);
      if (!m_settings.consumer.empty()) {
        query += fmt::format(" AND t.{} = $2", m_consumer);
      }
      m_connection->prepare("lookup", query);
      if (m_settings.writable) {
        prepare_replay(id_type);
      }
    });
  }

  // Whether the id column's type can hold the key: a uuid (PostgreSQL's input forms: any case,
  // optional braces, a hyphen after any group of four digits) or an integer. Other types are asked.
  bool castable(const std::string& key) const {
    if (m_id_type == "uuid") {
      std::string_view v = key;
      if (v.size() >= 2 && v.front() == '{' && v.back() == '}') {
        v = v.substr(1, v.size() - 2);
      }
      int digits = 0;
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (std::isxdigit(static_cast<unsigned char>(v[i]))) {
          ++digits;
        } else if (!(v[i] == '-' && digits % 4 == 0 && digits > 0 && i + 1 < v.size() && v[i + 1] != '-')) {
          return false;
        }
      }
      return digits == 32;
    }
    if (m_id_type == "bigint" || m_id_type == "integer" || m_id_type == "smallint") {
      std::string_view v = key;
      if (!v.empty() && v.front() == '+') {
        v.remove_prefix(1);
      }
      std::int64_t value = 0;
      auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (error != std::errc() || end != v.data() + v.size()) {
        return false;
      }
      std::int64_t limit = m_id_type == "bigint" ? INT64_MAX : m_id_type == "integer" ? INT32_MAX : INT16_MAX;
      return value <= limit && value >= -limit - 1;
    }
    return true;
  }

  // INSERT the batch's ids (with the consumer, now, and status 'done' where the table has those
  // columns) returning the positions inserted; DELETE by id for releases.
  void prepare_replay(const std::string& id_type) {
    const auto& schema = m_settings.schema;
    std::string columns = m_id, values = "k.id";
    if (!m_settings.consumer.empty()) {
      columns += ", " + m_consumer;
      values += ", $2";
    }
    columns += ", " + m_time;
    values += ", now()";
    if (!schema.status_column.empty()) {
      columns += ", " + m_connection->quote_name(schema.status_column);
      values += ", 'done'";
    }
    // RETURNING cannot name the ordinality of the source: match the ids inserted back to positions.
    m_connection->prepare(
        "claim", fmt::format("WITH k AS (SELECT id, ord FROM unnest($1::{0}[]) WITH ORDINALITY AS k(id, ord)), "
                             "ins AS (INSERT INTO {1} ({2}) SELECT {3} FROM k ON CONFLICT DO NOTHING RETURNING {4}) "
                             "SELECT k.ord FROM k JOIN ins ON ins.{4} = k.id",
                             id_type, m_table_name, columns, values, m_id));
    std::string release = fmt::format("DELETE FROM {} WHERE {} = ANY($1::{}[])", m_table_name, m_id, id_type);
    if (!m_settings.consumer.empty()) {
      release += fmt::format(" AND {} = $2", m_consumer);
    }
    m_connection->prepare("release", release);
  }

  // Loading compares ids byte for byte, which is the column's equality only for text-like types with
  // a deterministic collation (a uuid matches whatever case and hyphens its input had).
  void decide_lookup(const std::string& id_type, bool deterministic, std::optional<std::int64_t> estimated_rows) {
    bool text_like = id_type == "text" || id_type == "character varying";
    if (m_settings.lookup == InboxLookup::Load && !(text_like && deterministic)) {
      throw UsageError(fmt::format("--inbox-lookup load compares event ids byte for byte, but {}.{} is {}{}; use "
                                   "--inbox-lookup batches (or auto)",
                                   m_settings.schema.table, m_settings.schema.id_column, id_type,
                                   deterministic ? "" : " with a nondeterministic collation"));
    }
    if (m_settings.lookup == InboxLookup::Auto) {
      std::int64_t bound = std::max<std::int64_t>(k_load_rows, 2 * m_settings.expected_events.value_or(0));
      m_load_rows = text_like && deterministic && estimated_rows && *estimated_rows <= bound;
    } else {
      m_load_rows = m_settings.lookup == InboxLookup::Load;
    }
  }

  // Auto loads tables up to this many rows (about 60 MB in memory), or twice the audit's events.
  static constexpr std::int64_t k_load_rows = 2'000'000;

  InboxSettings m_settings;
  std::unique_ptr<pqxx::connection> m_connection;
  InboxFacts m_facts;
  std::string m_table_name, m_id, m_time, m_consumer, m_copy_query, m_load_query;
  bool m_load_rows = false;
  std::int64_t m_estimated_rows = 0;
  std::atomic<std::int64_t> m_load_ms{0};
  std::int64_t m_lookup_us = 0, m_ids_looked_up = 0, m_lookups = 0, m_wait_us = 0;
  core::InboxTable m_table; // the loaded inbox
  std::future<void> m_load;
  std::unique_ptr<pqxx::work> m_work; // a replay batch's transaction
  std::string m_id_type;
  std::vector<std::string> m_sent;      // this batch's keys the column can hold …
  std::vector<std::size_t> m_positions; // … and their positions in the batch
  std::deque<std::string> m_values;     // this batch's statuses (the states' values)
};

class InboxReplayPlacement final : public core::ReplayPlacement {
public:
  InboxReplayPlacement(const InboxSettings& settings, std::vector<std::string> markers)
      : m_store(writable(settings)), m_markers(std::move(markers)) {
    if (m_store.has_unique_constraint() == false) {
      throw UsageError(fmt::format("the inbox {} has no primary key or unique index over its id: it cannot refuse a "
                                   "second insert, so a replay cannot claim through it; add the constraint",
                                   settings.schema.table));
    }
  }

  std::string kind() const override { return "postgres"; }
  // One connection, one open transaction: a batch is settled before the next is claimed.
  std::size_t max_in_flight() const override { return 1; }

  std::string unfit_keys() const override { return m_store.holds_only(); }

  void plan(const std::vector<std::string>& keys, std::vector<core::Claim>& out) override {
    const auto& fit = fitting(keys, out);
    m_store.lookup(fit, m_states);
    for (std::size_t i = 0; i < fit.size(); ++i) {
      out[m_positions[i]] = core::plan_claim(m_states[i], m_markers);
    }
  }

  void claim(const std::vector<std::string>& keys, const std::string&, std::vector<core::Claim>& out) override {
    const auto& fit = fitting(keys, out);
    m_store.claim_rows(fit, m_inserted, m_status);
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
    m_store.settle_rows(m_failed);
  }

private:
  // The keys the id column can hold (their positions in m_positions); `out` is Unfit for the rest.
  // Asking for a key the column's type cannot hold would fail the whole batch.
  const std::vector<std::string>& fitting(const std::vector<std::string>& keys, std::vector<core::Claim>& out) {
    out.assign(keys.size(), core::Claim::Unfit);
    m_fit.clear();
    m_positions.clear();
    for (std::size_t i = 0; i < keys.size(); ++i) {
      if (m_store.can_hold(keys[i])) {
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

  PqxxInboxStore m_store;
  std::vector<std::string> m_markers;
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

std::unique_ptr<InboxStore> InboxStore::open(const InboxSettings& settings) {
  return std::make_unique<PqxxInboxStore>(settings);
}

std::int64_t export_inbox(const InboxSettings& settings, const std::function<void(const std::string&)>& line) {
  InboxSettings export_settings = settings;
  export_settings.lookup = InboxLookup::Batches; // an export streams the rows once; nothing to load
  PqxxInboxStore store(export_settings);
  return store.export_rows(line);
}

} // namespace dedupctl::connectors::postgres
