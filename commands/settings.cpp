#include "commands/settings.hpp"

#include "connectors/file/text.hpp"
#include "core/util/errors.hpp"
#include "core/util/properties.hpp"
#include "core/util/text.hpp"
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

std::optional<connectors::schema::RegistrySettings> registry_settings(const IdentityFlags& options, Context& context) {
  if (options.registry.empty()) {
    return std::nullopt;
  }
  connectors::schema::RegistrySettings settings;
  settings.url = options.registry;
  settings.ca_file = options.registry_ca;
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  auto secret_of = [](const std::string& file, const char* variable, const char* flag) {
    std::string value;
    if (!file.empty()) {
      value = std::string(core::trim(connectors::file::read_text_file(file, flag)));
    } else if (const char* env = std::getenv(variable); env && *env) {
      value = env;
    }
    return value;
  };
  settings.user_info =
      secret_of(options.registry_user_info_file, "DEDUPCTL_REGISTRY_USER_INFO", "--registry-user-info-file");
  settings.token = secret_of(options.registry_token_file, "DEDUPCTL_REGISTRY_TOKEN", "--registry-token-file");
  // A password in the URL in every spelling core::secrets_in knows (as typed, percent-decoded),
  // also when the URL came from the config file or the environment and not from argv.
  for (auto& secret : core::secrets_in(settings.url)) {
    context.secrets.push_back(std::move(secret));
  }
  for (const std::string* secret : {&settings.user_info, &settings.token}) {
    if (!secret->empty()) {
      context.secrets.push_back(*secret);
      if (auto colon = secret->find(':'); secret == &settings.user_info && colon != std::string::npos) {
        context.secrets.push_back(secret->substr(colon + 1)); // the password alone
      }
    }
  }
  if (!settings.user_info.empty() && settings.user_info.find(':') == std::string::npos) {
    throw UsageError("the registry's user info is not USER:PASSWORD (--registry-user-info-file or "
                     "DEDUPCTL_REGISTRY_USER_INFO)");
  }
  if (!settings.ca_file.empty()) {
    connectors::file::read_text_file(settings.ca_file, "--registry-ca"); // readable now, not at the first event
  }
  return settings;
}

} // namespace dedupctl::commands
