#include "connectors/postgres/inbox_store.hpp"

#include "connectors/postgres/session.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <pqxx/pqxx>

#include <deque>
#include <string>
#include <vector>

// The inbox's rows as replay --repair-lost reads and releases them (open_inbox_release).
namespace dedupctl::connectors::postgres {

namespace {

using detail::array_literal;
using detail::InboxSession;

// Each row read as the audit reads it and, whole, as row_to_json's text; a release deletes the rows
// still equal to that text, in one statement (autocommit).
class InboxRecordRelease final : public core::RecordRelease {
public:
  explicit InboxRecordRelease(const InboxSettings& settings) : m_session(writable(settings)) {
    m_session.guard([&] { prepare(); });
  }
  std::string kind() const override { return "postgres"; }

  void read(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    m_keys = keys;
    m_rows.assign(keys.size(), std::string());
    // Keys the id column cannot hold have no row (an id that is not a uuid): absent, never lost.
    m_session.fitting(keys, m_fit, m_positions);
    m_session.lookup(keys, out, m_values); // a key the column cannot hold: absent
    m_session.guard([&] {
      pqxx::nontransaction work(m_session.connection());
      pqxx::result rows = with_consumer(work, "repair_rows", array_literal(m_fit));
      for (const auto& row : rows) {
        m_rows[m_positions[row[0].as<std::size_t>() - 1]] = row[1].c_str();
      }
    });
  }

  void release(const std::vector<std::uint8_t>& release, std::vector<std::uint8_t>& released) override {
    released.assign(m_keys.size(), 0);
    std::vector<std::string> ids, seen;
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < m_keys.size() && i < release.size(); ++i) {
      if (release[i] != 0 && !m_rows[i].empty()) {
        ids.push_back(m_keys[i]);
        seen.push_back(m_rows[i]);
        at.push_back(i);
      }
    }
    if (ids.empty()) {
      return;
    }
    m_session.guard([&] {
      pqxx::nontransaction work(m_session.connection());
      pqxx::result rows = m_session.settings().consumer.empty()
                              ? work.exec_prepared("repair_release", array_literal(ids), array_literal(seen))
                              : work.exec_prepared("repair_release", array_literal(ids), array_literal(seen),
                                                   m_session.settings().consumer);
      for (const auto& row : rows) {
        released[at[row[0].as<std::size_t>() - 1]] = 1;
      }
    });
  }

private:
  pqxx::result with_consumer(pqxx::nontransaction& work, const char* statement, const std::string& ids) {
    return m_session.settings().consumer.empty() ? work.exec_prepared(statement, ids)
                                                 : work.exec_prepared(statement, ids, m_session.settings().consumer);
  }

  // The rows whole, by position; and their deletion where a row still reads as it did.
  void prepare() {
    const std::string& table = m_session.quoted_table();
    const std::string& id = m_session.quoted_id();
    const std::string& type = m_session.id_cast();
    bool scoped = !m_session.settings().consumer.empty();
    std::string scope_rows = scoped ? fmt::format(" AND t.{} = $2", m_session.quoted_consumer()) : "";
    std::string scope_release = scoped ? fmt::format(" AND t.{} = $3", m_session.quoted_consumer()) : "";
    m_session.connection().prepare(
        "repair_rows", fmt::format("SELECT k.ord, row_to_json(t)::text FROM unnest($1::{0}[]) WITH ORDINALITY "
                                   "AS k(id, ord) JOIN {1} t ON t.{2} = k.id{3}",
                                   type, table, id, scope_rows));
    m_session.connection().prepare(
        "repair_release",
        fmt::format("DELETE FROM {1} t USING unnest($1::{0}[], $2::text[]) WITH ORDINALITY AS k(id, seen, ord) "
                    "WHERE t.{2} = k.id AND row_to_json(t)::text = k.seen{3} RETURNING k.ord",
                    type, table, id, scope_release));
  }

  static InboxSettings writable(InboxSettings settings) {
    settings.writable = true;
    settings.lookup = InboxLookup::Batches;
    return settings;
  }

  InboxSession m_session;
  std::vector<std::string> m_keys, m_rows, m_fit;
  std::vector<std::size_t> m_positions;
  std::deque<std::string> m_values;
};

} // namespace

std::unique_ptr<core::RecordRelease> open_inbox_release(const InboxSettings& settings) {
  return std::make_unique<InboxRecordRelease>(settings);
}

} // namespace dedupctl::connectors::postgres
