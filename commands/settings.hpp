#pragma once

// The connectors' settings from the global flags (--bootstrap-server, -X, --timeout) and a store's URI.
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "connectors/aws/aws.hpp"
#include "connectors/kafka/kafka.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/redis/redis.hpp"
#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"

#include <string>

namespace dedupctl::commands {

connectors::kafka::KafkaSettings kafka_settings(const Context& context);
// A redis:// store's settings with --timeout and the stop flag.
connectors::redis::RedisSettings redis_settings(const core::StoreUri& uri, const Context& context);
// A postgres:// store's settings: the inbox schema flags, --consumer, --timeout and the stop flag.
// The inbox flags' names, checked before anything is contacted (UsageError naming the flag).
void check_inbox_options(const InboxFlags& inbox);
connectors::postgres::InboxSettings inbox_settings(const core::StoreUri& uri, const InboxFlags& inbox,
                                                   const std::string& consumer, const Context& context,
                                                   const core::RecordLayout* layout = nullptr);

// A dynamodb:// store's settings: the layout, --aws-profile, --timeout, the stop flag and notes.
connectors::aws::AwsSettings aws_settings(const core::StoreUri& uri, const core::RecordLayout& layout,
                                          const Context& context);

} // namespace dedupctl::commands
