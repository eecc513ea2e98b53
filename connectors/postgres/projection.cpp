#include "connectors/postgres/projection.hpp"
#include "connectors/postgres/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>

namespace dedupctl::connectors::postgres {

namespace {

// The column types each order compares as the handler's `version < $v` does, by the type's category
// (pg_type.typcategory: N numbers, S strings, D times, of which a timestamp).
bool fits(core::VersionOrder order, const core::InboxColumnType& column) {
  switch (order) {
  case core::VersionOrder::Numeric:
    return column.category == 'N' && column.type != "oid" && !column.type.starts_with("reg");
  case core::VersionOrder::Lexical:
    return column.category == 'S';
  case core::VersionOrder::Rfc3339:
    return column.category == 'D' && column.type.starts_with("timestamp");
  }
  return false;
}

std::string_view wanted(core::VersionOrder order) {
  switch (order) {
  case core::VersionOrder::Numeric:
    return "smallint, integer, bigint, numeric, real or double precision";
  case core::VersionOrder::Lexical:
    return "text, varchar or char";
  case core::VersionOrder::Rfc3339:
    return "timestamp or timestamptz";
  }
  return "";
}

class ProjectionStore final : public core::DedupStore {
public:
  explicit ProjectionStore(const ProjectionSettings& settings)
      : m_settings(settings), m_session(session_settings(settings)) {
    const auto& facts = m_session.facts();
    auto column = std::find_if(facts.column_types.begin(), facts.column_types.end(),
                               [&](const auto& c) { return c.name == settings.version_column; });
    std::string columns;
    for (const auto& c : facts.columns) {
      columns += (columns.empty() ? "" : ", ") + c;
    }
    std::string_view option = settings.states ? "state-column" : "version-column";
    if (column == facts.column_types.end()) {
      throw UsageError(fmt::format("the projection {} has no column {} (--layout-option {}); its columns are {}",
                                   settings.session.schema.table, settings.version_column, option, columns));
    }
    if (settings.states && column->category != 'S' && column->category != 'E') {
      throw UsageError(fmt::format("--layout-option state-column={}: {}.{} is {}, not a state a guard's `WHERE "
                                   "status = …` compares; give the column that holds the state (text, varchar, "
                                   "char or an enum type)",
                                   settings.version_column, settings.session.schema.table, settings.version_column,
                                   column->type));
    }
    if (!settings.states && !fits(settings.order, *column)) {
      throw UsageError(fmt::format("--layout-option version-column={}: {}.{} is {}, which --version-order {} does "
                                   "not compare; the handler's guard compares {} (give the --version-order it "
                                   "compares by, or the column that holds the version)",
                                   settings.version_column, settings.session.schema.table, settings.version_column,
                                   column->type, core::to_string(settings.order), wanted(settings.order)));
    }
    m_session.guard([&] {
      auto& c = m_session.connection();
      std::string version = "t." + c.quote_name(settings.version_column);
      std::string text =
          column->type.find("with time zone") != std::string::npos
              ? fmt::format("to_char({} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')", version)
          : column->type.starts_with("timestamp")
              ? fmt::format("to_char({}, 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')", version)
              : version + "::text";
      c.prepare("projection", fmt::format("SELECT k.ord, {} FROM unnest($1::{}[]) WITH ORDINALITY AS k(id, ord) "
                                          "JOIN {} t ON t.{} = k.id",
                                          text, m_session.id_cast(), m_session.quoted_table(), m_session.quoted_id()));
    });
  }

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override {
    std::vector<std::string> sent;
    std::vector<std::size_t> positions;
    m_session.fitting(keys, sent, positions);
    out.assign(keys.size(), core::RecordState{});
    m_values.clear();
    m_session.guard([&] {
      pqxx::nontransaction tx(m_session.connection());
      pqxx::result rows = tx.exec_prepared("projection", detail::array_literal(sent));
      for (const auto& row : rows) {
        auto& state = out[positions[row[0].as<std::size_t>() - 1]];
        if (state.kind == core::RecordState::Kind::Present) {
          continue;
        }
        // A NULL version is no version the guard can compare (`NULL < $v` is never true): "" says so.
        m_values.emplace_back(row[1].is_null() ? "" : row[1].c_str());
        state.kind = core::RecordState::Kind::Present;
        state.value = m_values.back();
      }
    });
  }

  std::string kind() const override { return "postgres"; }

private:
  static InboxSettings session_settings(const ProjectionSettings& settings) {
    InboxSettings s = settings.session;
    s.naming = {"projection", "--inbox-table", "--layout-option entity-column", "--store"};
    s.schema.id_column = settings.entity_column;
    s.schema.consumer_column.clear();
    s.schema.time_column.clear();
    s.schema.status_column.clear();
    s.schema.in_progress_column.clear();
    s.consumer.clear();
    s.lookup = InboxLookup::Batches;
    return s;
  }

  ProjectionSettings m_settings;
  detail::InboxSession m_session;
  std::deque<std::string> m_values;
};

} // namespace

std::unique_ptr<core::DedupStore> open_projection_store(const ProjectionSettings& settings) {
  return std::make_unique<ProjectionStore>(settings);
}

} // namespace dedupctl::connectors::postgres
