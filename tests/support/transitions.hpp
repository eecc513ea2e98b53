#pragma once

// An order's life under a state-transition guard (issue 63): placed, paid, shipped, delivered;
// cancelled from pending or paid. The tests' table is examples/order-transitions.toml's, without
// its comments.

namespace dedupctl::testing {

inline constexpr const char* k_order_transitions = R"([OrderPlaced]
to = "pending"
[OrderPaid]
from = ["pending"]
to = "paid"
[OrderShipped]
from = ["paid"]
to = "shipped"
[OrderDelivered]
from = ["shipped"]
to = "delivered"
[OrderCancelled]
from = ["pending", "paid"]
to = "cancelled"
)";

} // namespace dedupctl::testing
