#include "connectors/postgres/inbox_store.hpp"

#include "connectors/postgres/session.hpp"
#include "core/store/inbox_snapshot.hpp"
#include "core/store/inbox_table.hpp"
#include "core/store/layout.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <future>

// The inbox as an audit reads it (open_inbox_store): batched lookups on the session, or the whole
// inbox loaded with COPY beside the log read.
namespace dedupctl::connectors::postgres {

namespace {

using detail::epoch_us;
using detail::InboxSession;
using detail::ms_of;

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
    if (settings.schema.time == core::InboxSchema::Time::Expiry) {
      for (auto& state : out) { // the time column says when the row lapses (Wolverine's keep_until)
        state.expires_at_ms = state.processed_at_ms;
        state.processed_at_ms.reset();
      }
    }
    m_lookup_us +=
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
    m_ids_looked_up += static_cast<std::int64_t>(keys.size());
    ++m_lookups;
  }

  std::optional<std::int64_t> oldest_row_age_ms(std::int64_t now_ms) override {
    std::optional<std::int64_t> oldest;
    if (m_session.settings().schema.time == core::InboxSchema::Time::Expiry) {
      return oldest; // rows say when they lapse, not when they were processed: no age to learn from
    }
    m_session.guard([&] {
      pqxx::read_transaction tx(m_session.connection());
      std::string query = fmt::format(
          "SELECT {} FROM {}{}", epoch_us(fmt::format("min({})", m_session.time_value())), m_session.quoted_table(),
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

  std::vector<std::pair<std::string, std::string>> row_fields(const std::string& id) override {
    std::vector<std::pair<std::string, std::string>> fields;
    if (!m_session.can_hold(id)) {
      return fields;
    }
    const auto& consumer = m_session.settings().consumer;
    m_session.guard([&] {
      pqxx::read_transaction tx(m_session.connection());
      std::string query = fmt::format("SELECT row_to_json(r)::text FROM {} r WHERE {} = $1{} LIMIT 1",
                                      m_session.quoted_table(), m_session.quoted_id(),
                                      consumer.empty() ? "" : fmt::format(" AND {} = $2", m_session.quoted_consumer()));
      pqxx::result r = consumer.empty() ? tx.exec_params(query, id) : tx.exec_params(query, id, consumer);
      if (!r.empty() && !r[0][0].is_null()) {
        fields = core::json_scalar_fields(r[0][0].as<std::string>());
      }
    });
    return fields;
  }

private:
  // Loading compares ids byte for byte, which is the column's equality only for text-like types with
  // a deterministic collation (a uuid matches whatever case and hyphens its input had).
  bool decide_load() const {
    const auto& m_settings = m_session.settings();
    const std::string& id_type = m_session.id_type();
    bool deterministic = m_session.id_deterministic();
    auto estimated_rows = m_session.estimated_rows();
    const std::string& id_cast = m_session.id_cast();
    bool text_like = id_cast == "text" || id_cast == "character varying";
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

} // namespace

std::unique_ptr<core::InboxStore> open_inbox_store(const InboxSettings& settings) {
  return std::make_unique<PqxxInboxStore>(settings);
}

std::int64_t count_inbox_ids(const InboxSettings& settings, const std::vector<std::string>& ids,
                             std::string& consumer) {
  // The rows as an audit reads them: the same session, its validation and its lookup.
  detail::InboxSession session(settings);
  std::vector<core::RecordState> states;
  std::deque<std::string> values;
  session.lookup(ids, states, values);
  std::int64_t found = std::count_if(states.begin(), states.end(),
                                     [](const auto& s) { return s.kind == core::RecordState::Kind::Present; });
  consumer.clear();
  if (found == 0 || session.quoted_consumer().empty()) {
    return found;
  }
  std::vector<std::string> fit;
  std::copy_if(ids.begin(), ids.end(), std::back_inserter(fit), [&](const auto& id) { return session.can_hold(id); });
  session.guard([&] {
    pqxx::read_transaction tx(session.connection());
    pqxx::result r = tx.exec_params(fmt::format("SELECT {0}::text FROM {1} WHERE {2}::text = ANY($1::text[]) "
                                                "AND {0} IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC, 1 LIMIT 1",
                                                session.quoted_consumer(), session.quoted_table(), session.quoted_id()),
                                    detail::array_literal(fit));
    if (!r.empty()) {
      consumer = r[0][0].as<std::string>();
    }
  });
  return found;
}

} // namespace dedupctl::connectors::postgres
