#include "core/check/inbox_rules.hpp"

#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

namespace {

constexpr std::size_t k_max_name_bytes = 63; // NAMEDATALEN - 1

bool plain_sql_name(std::string_view name) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (name.empty() || !letter(name[0])) {
    return false;
  }
  for (char c : name) {
    if (!letter(c) && !(c >= '0' && c <= '9') && c != '$') {
      return false;
    }
  }
  return true;
}

} // namespace

void check_inbox_names(std::string_view table,
                       const std::vector<std::pair<std::string_view, std::string_view>>& columns) {
  auto parts = split(table, '.');
  for (auto part : parts) {
    bool quoted = part.size() > 2 && part.front() == '"' && part.back() == '"' &&
                  part.substr(1, part.size() - 2).find_first_of("\"\0") == std::string_view::npos;
    if (quoted) {
      part = part.substr(1, part.size() - 2); // a quoted name keeps its case: MassTransit's "InboxState"
    } else if (!plain_sql_name(part)) {
      throw UsageError(
          fmt::format("invalid --inbox-table '{}': '{}' is not a plain SQL name (letters, digits, _ "
                      "and $, not starting with a digit) or a \"Quoted\" one; give the table as [schema.]table",
                      table, part));
    }
    if (part.size() > k_max_name_bytes) {
      throw UsageError(
          fmt::format("invalid --inbox-table '{}': '{}' is longer than PostgreSQL's 63-byte names", table, part));
    }
  }
  if (parts.size() > 2) {
    throw UsageError(fmt::format("invalid --inbox-table '{}': give the table as [schema.]table", table));
  }
  for (const auto& [flag, column] : columns) {
    if (column.find('\0') != std::string_view::npos || column.size() > k_max_name_bytes) {
      throw UsageError(fmt::format("invalid {} '{}': a column name has at most 63 bytes and no NUL", flag, column));
    }
  }
}

Finding inbox_without_unique_constraint(std::string_view table, std::string_view id_column,
                                        std::string_view consumer_column) {
  Finding f;
  f.id = "inbox-without-unique-constraint";
  f.severity = Severity::Error;
  f.title = fmt::format("the inbox {} has no primary key or unique index over {}", table,
                        consumer_column.empty() ? std::string(id_column)
                                                : fmt::format("({}, {})", consumer_column, id_column));
  f.count = 1;
  f.advice = "Without one, two deliveries of an event both insert their row and both apply the change. Add a unique "
             "constraint and write the row with INSERT ... ON CONFLICT DO NOTHING in the business transaction.";
  return f;
}

std::optional<Finding> inbox_ids_shared(std::int64_t shared_ids) {
  if (shared_ids <= 0) {
    return std::nullopt;
  }
  Finding f;
  f.id = "namespace-shared";
  f.severity = Severity::Error;
  f.title = fmt::format("{} event ids have rows under several consumers, and the audit is not scoped by --consumer",
                        shared_ids);
  f.count = shared_ids;
  f.advice = "A row of one consumer makes the audit (and a consumer that ignores the column) count the event as "
             "processed. Pass --consumer NAME.";
  return f;
}

} // namespace dedupctl::core
