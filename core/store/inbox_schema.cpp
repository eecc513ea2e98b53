#include "core/store/inbox_schema.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

namespace {

const InboxColumnType* find_column(const std::vector<InboxColumnType>& columns, const std::string& name) {
  auto it = std::find_if(columns.begin(), columns.end(), [&](const auto& c) { return c.name == name; });
  return it == columns.end() ? nullptr : &*it;
}

} // namespace

std::string inbox_column_type_problem(const InboxSchema& schema, const std::vector<InboxColumnType>& columns,
                                      const std::string& id_flag) {
  if (const auto* id = find_column(columns, schema.id_column);
      id && id->category != 'S' && id->category != 'N' && id->type != "uuid") {
    return fmt::format("the column {} of {} is {}, which no event id fits (ids are compared as text, a number or "
                       "a uuid): name the id column with {}",
                       id->name, schema.table, id->type, id_flag);
  }
  if (const auto* time = schema.time_column.empty() ? nullptr : find_column(columns, schema.time_column)) {
    bool timestamp = time->category == 'D' && (time->type.starts_with("timestamp") || time->type == "date");
    const char* wanted = nullptr;
    switch (schema.time) {
    case InboxSchema::Time::Timestamp:
    case InboxSchema::Time::Expiry:
      wanted = timestamp ? nullptr : "a time (timestamp, timestamp with time zone or date)";
      break;
    case InboxSchema::Time::EpochMs:
      wanted = time->category == 'N' ? nullptr : "epoch milliseconds (a number: bigint, integer or numeric)";
      break;
    case InboxSchema::Time::TextMs:
      wanted = time->category == 'S' || time->category == 'N' ? nullptr : "milliseconds written as text";
      break;
    }
    if (wanted) {
      return fmt::format("the column {} of {} is {}, but it is read as {}: name the table's time column with "
                         "--inbox-time-column, or choose the --layout whose table this is",
                         time->name, schema.table, time->type, wanted);
    }
  }
  if (schema.in_progress_when == InboxSchema::InProgressWhen::False && !schema.in_progress_column.empty()) {
    if (const auto* flag = find_column(columns, schema.in_progress_column); flag && flag->category != 'B') {
      return fmt::format("the column {} of {} is {}, but the layout reads it as a boolean (in progress while "
                         "false): choose the --layout whose table this is",
                         flag->name, schema.table, flag->type);
    }
  }
  return "";
}

} // namespace dedupctl::core
