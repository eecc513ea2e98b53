#pragma once

#include "core/finding.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

// What an inbox table's schema and contents say of it as a dedup placement, for audit and check.
namespace dedupctl::core {

// `inbox-without-unique-constraint` (error): no primary key or unique index over the id, or over
// (consumer, id) when the table has a consumer column: two deliveries both insert their row.
Finding inbox_without_unique_constraint(std::string_view table, std::string_view id_column,
                                        std::string_view consumer_column);

// `namespace-shared` (error) when `shared_ids` event ids have rows under several consumers and the
// audit is not scoped by --consumer; nullopt when there are none.
std::optional<Finding> inbox_ids_shared(std::int64_t shared_ids);

} // namespace dedupctl::core
