#pragma once

#include "core/finding.hpp"

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

// What an inbox table's schema and contents say of it as a dedup placement, for audit and check.
namespace dedupctl::core {

// `inbox-without-unique-constraint` (error): no primary key or unique index over the id, or over
// (consumer, id) when the table has a consumer column: two deliveries both insert their row.
// The inbox's names checked before anything is contacted (UsageError naming the flag): the table is
// [schema.]table of plain SQL names (letters, digits, _ and $, not starting with a digit; PostgreSQL
// folds them to lower case, as the server's to_regclass does), each at most 63 bytes (longer names
// are silently truncated by the server); a column is any name up to 63 bytes without NUL, empty for
// an optional one. `columns` pairs each flag with its value.
void check_inbox_names(std::string_view table,
                       const std::vector<std::pair<std::string_view, std::string_view>>& columns);

Finding inbox_without_unique_constraint(std::string_view table, std::string_view id_column,
                                        std::string_view consumer_column);

// `namespace-shared` (error) when `shared_ids` event ids have rows under several consumers and the
// audit is not scoped by --consumer; nullopt when there are none.
std::optional<Finding> inbox_ids_shared(std::int64_t shared_ids);

} // namespace dedupctl::core
