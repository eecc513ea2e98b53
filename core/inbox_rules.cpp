#include "core/inbox_rules.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

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
