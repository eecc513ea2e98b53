#pragma once

// The settings of the connectors a range is read through, from the flags: the brokers' (--bootstrap-server,
// -F, -X, --timeout) and the schema registry's. A store's are its family's (commands/placement/settings.hpp).
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "connectors/kafka/kafka.hpp"
#include "connectors/schema/source.hpp"

#include <optional>
#include <string>

namespace dedupctl::commands {

connectors::kafka::KafkaSettings kafka_settings(const Context& context);

// The registry's settings from the flags and the environment (DEDUPCTL_REGISTRY_USER_INFO,
// DEDUPCTL_REGISTRY_TOKEN), files read; nullopt without --registry.
std::optional<connectors::schema::RegistrySettings> registry_settings(const IdentityFlags& options, Context& context);

} // namespace dedupctl::commands
