#include "commands/settings.hpp"

#include "connectors/file/text.hpp"
#include "core/check/inbox_rules.hpp"
#include "core/util/errors.hpp"
#include "core/util/properties.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <tuple>

#include <cstdlib>

namespace dedupctl::commands {

connectors::redis::RedisSettings redis_settings(const core::StoreUri& uri, const Context& context) {
  connectors::redis::RedisSettings settings;
  settings.uri = uri;
  const auto& global = context.global;
  if (!global.redis_password_file.empty() && !global.redis_password_command.empty()) {
    throw UsageError("--redis-password-file and --redis-password-command both give the Redis password: keep one");
  }
  if (uri.password && (!global.redis_password_file.empty() || !global.redis_password_command.empty())) {
    throw UsageError(
        fmt::format("{} has a password and {} gives another: keep one", uri.redacted(),
                    global.redis_password_file.empty() ? "--redis-password-command" : "--redis-password-file"));
  }
  if (!global.redis_password_file.empty()) {
    connectors::file::read_text_file(global.redis_password_file, "--redis-password-file"); // readable now
  }
  settings.password_file = global.redis_password_file;
  settings.password_command = global.redis_password_command;
  // redis-cli's variable: the password off the command line (and out of `ps`).
  if (const char* auth = std::getenv("REDISCLI_AUTH");
      auth && *auth && !settings.uri.password && settings.password_file.empty() && settings.password_command.empty()) {
    settings.uri.password = auth;
  }
  if (uri.tls.enabled && uri.tls.mode == core::TlsMode::Require && context.note) {
    context.note(fmt::format("warning: {} has sslmode=require: the traffic is encrypted, but the server's "
                             "certificate is not verified (use verify-full with sslrootcert)",
                             uri.redacted()));
  }
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  settings.stop = &context.stop;
  return settings;
}

void check_inbox_options(const InboxFlags& inbox) {
  core::check_inbox_names(inbox.table, {{"--inbox-id-column", inbox.id_column},
                                        {"--inbox-consumer-column", inbox.consumer_column},
                                        {"--inbox-time-column", inbox.time_column},
                                        {"--inbox-status-column", inbox.status_column}});
}

connectors::postgres::InboxSettings inbox_settings(const core::StoreUri& uri, const InboxFlags& inbox,
                                                   const std::string& consumer, const Context& context,
                                                   const core::RecordLayout* layout) {
  connectors::postgres::InboxSettings settings;
  settings.conninfo = uri.conninfo;
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  // An inbox layout gives the library's table and columns; a flag given says otherwise.
  InboxFlags flags = inbox;
  bool by_layout = layout && layout->inbox;
  if (by_layout) {
    settings.schema = layout->inbox_schema;
    auto given = [&](const char* name) { return context.origin_of(name) != core::ValueOrigin::Default; };
    for (auto [name, flag, field] :
         {std::tuple{"inbox-table", &flags.table, &settings.schema.table},
          std::tuple{"inbox-id-column", &flags.id_column, &settings.schema.id_column},
          std::tuple{"inbox-consumer-column", &flags.consumer_column, &settings.schema.consumer_column},
          std::tuple{"inbox-time-column", &flags.time_column, &settings.schema.time_column},
          std::tuple{"inbox-status-column", &flags.status_column, &settings.schema.status_column}}) {
      if (given(name)) {
        *field = *flag;
      } else {
        *flag = *field;
      }
    }
    if (settings.schema.table.empty()) {
      throw UsageError(fmt::format("--layout {} keeps its rows in a table named after the endpoint: give "
                                   "--inbox-table (\"Sales_OutboxData\", quoted as the library creates it)",
                                   layout->name));
    }
  }
  check_inbox_options(flags);
  if (!by_layout) {
    settings.schema = connectors::postgres::InboxSchema{};
    settings.schema.table = inbox.table;
    settings.schema.id_column = inbox.id_column;
    settings.schema.consumer_column = inbox.consumer_column;
    settings.schema.time_column = inbox.time_column;
    settings.schema.status_column = inbox.status_column;
  }
  settings.consumer = consumer.empty() && by_layout ? layout->default_consumer : consumer;
  settings.stop = &context.stop;
  return settings;
}

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

connectors::aws::AwsSettings aws_settings(const core::StoreUri& uri, const core::RecordLayout& layout,
                                          const Context& context) {
  connectors::aws::AwsSettings settings;
  settings.uri = uri;
  settings.layout = layout;
  settings.profile = context.global.aws_profile;
  settings.profile_explicit = context.origin_of("aws-profile") == core::ValueOrigin::Flag;
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  settings.stop = &context.stop;
  settings.note = context.note;
  return settings;
}

} // namespace dedupctl::commands
