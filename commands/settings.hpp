#pragma once

// The brokers' settings from the global flags (--bootstrap-server, -F, -X, --timeout); a store's are its
// family's (commands/placement/settings.hpp).
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "connectors/kafka/kafka.hpp"

#include <string>

namespace dedupctl::commands {

connectors::kafka::KafkaSettings kafka_settings(const Context& context);

} // namespace dedupctl::commands
