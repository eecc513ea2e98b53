#include "commands/settings.hpp"

#include "connectors/file/text.hpp"
#include "core/util/errors.hpp"
#include "core/util/properties.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <tuple>

#include <cstdlib>

namespace dedupctl::commands {

connectors::kafka::KafkaSettings kafka_settings(const Context& context) {
  connectors::kafka::KafkaSettings settings;
  settings.bootstrap = context.global.bootstrap;
  settings.token_command = context.global.kafka_token_command;
  // -F's file first, then each -X: a later property wins, as in kcat.
  if (!context.global.kafka_config.empty()) {
    const std::string& path = context.global.kafka_config;
    for (auto& line : core::parse_properties(connectors::file::read_text_file(path, "-F"), path)) {
      settings.properties.emplace_back(std::move(line.name), std::move(line.value));
      settings.property_sources.push_back(fmt::format("property in {}:{}", path, line.line));
    }
  }
  const auto& properties = context.global.properties;
  for (std::size_t i = 0; i < properties.size(); ++i) {
    const auto& property = properties[i];
    auto eq = property.find('=');
    if (eq == std::string::npos || eq == 0) {
      // Not shown: a value typed with the wrong separator (sasl.password:…) is still a secret.
      throw UsageError(fmt::format("invalid -X (number {} of {}): expected PROP=VALUE, as kcat's -X; the argument is "
                                   "not shown, since it may hold a secret",
                                   i + 1, properties.size()));
    }
    settings.properties.emplace_back(property.substr(0, eq), property.substr(eq + 1));
    settings.property_sources.emplace_back("-X");
  }
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  if (settings.timeout_ms <= 0) {
    throw UsageError("invalid --timeout: it must be longer than 0");
  }
  settings.verbosity = context.global.verbose;
  settings.stop = &context.stop;
  return settings;
}

} // namespace dedupctl::commands
