#pragma once

// A declarations file that check's rules and the declarations parser are both tested on.
namespace dedupctl::testing {

inline const char* k_file = R"([[consumer]]
name = "billing"
topic = "orders"
placement = "redis"
store = "redis://cache:6379"
key_template = "dedup:{event_id}"
ttl = "1d"
retention = "7d"
side_effects = "external"

[[consumer]]
name = "refunds"
topic = "orders"
placement = "redis"
store = "redis://cache:6379"
key_template = "dedup:refunds:{json:/order_id}:{offset}"
ttl = "none"
retention = "7d"

[[consumer]]
name = "shipping"
topic = "orders"
placement = "postgres"
store = "postgres://db/shipping"
inbox_consumer_column = ""
inbox_retention = "8d"
retention = "7d"
max_lag = "1h"

[[consumer]]
name = "invoices"
topic = "orders"
placement = "postgres"
store = "postgres://db/shipping"
inbox_retention = "30d"
retention = "7d"

[[consumer]]
name = "emails"
topic = "orders"
placement = "memory"

[[consumer]]
name = "verification"
topic = "customers"
placement = "design"
)";

} // namespace dedupctl::testing
