#include "connectors/postgres/inbox_store.hpp"

#include "connectors/postgres/session.hpp"
#include "core/store/inbox_table.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

// The inbox as the placement a replay routes through (open_inbox_replay).
namespace dedupctl::connectors::postgres {

namespace {

using detail::array_literal;
using detail::epoch_us;
using detail::InboxSession;
using detail::ms_of;

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
    const std::string& id_type = m_session.id_cast();
    const std::string& m_id = m_session.quoted_id();
    const std::string& m_table_name = m_session.quoted_table();
    auto& connection = m_session.connection();
    std::string columns = m_id, values = "k.id";
    if (!settings.consumer.empty()) {
      columns += ", " + m_session.quoted_consumer();
      values += ", $2";
    }
    // The time as the table keeps it (an inbox layout's epoch ms, as a bigint or as text).
    columns += ", " + m_session.quoted_time();
    switch (schema.time) {
    case InboxSchema::Time::EpochMs:
      values += ", (extract(epoch FROM now()) * 1000)::bigint";
      break;
    case InboxSchema::Time::TextMs:
      values += ", ((extract(epoch FROM now()) * 1000)::bigint)::text";
      break;
    default:
      values += ", now()";
      break;
    }
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
    m_session.fitting(keys, m_fit, m_positions);
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

} // namespace dedupctl::connectors::postgres
