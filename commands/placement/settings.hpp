#pragma once

// A store's connector settings from its URI and the global flags (--timeout, the stop flag, the
// password's sources), for the families and what reads a store outside them (check --live).
#include "commands/context.hpp"
#include "commands/placement/options.hpp"
#include "connectors/aws/aws.hpp"
#include "connectors/postgres/inbox_store.hpp"
#include "connectors/redis/redis.hpp"
#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"

#include <string>

namespace dedupctl::commands {

// A redis:// store's settings with --timeout, the stop flag and the password as every command finds
// it (the URI, --redis-password-file, --redis-password-command, REDISCLI_AUTH).
connectors::redis::RedisSettings redis_settings(const core::StoreUri& uri, const Context& context);

// The inbox flags' names, checked before anything is contacted (UsageError naming the flag).
void check_inbox_options(const InboxFlags& inbox);
// A postgres:// store's settings: the inbox schema (a layout's, unless a flag says otherwise),
// --consumer, --timeout and the stop flag.
connectors::postgres::InboxSettings inbox_settings(const core::StoreUri& uri, const InboxFlags& inbox,
                                                   const std::string& consumer, const Context& context,
                                                   const core::RecordLayout* layout = nullptr);

// A dynamodb:// store's settings: the layout, --aws-profile, --timeout, the stop flag and notes.
connectors::aws::AwsSettings aws_settings(const core::StoreUri& uri, const core::RecordLayout& layout,
                                          const Context& context);

} // namespace dedupctl::commands
