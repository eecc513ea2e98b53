#include "commands/pipeline/check.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/options.hpp"
#include "commands/placement/family.hpp"
#include "commands/settings.hpp"
#include "commands/source.hpp"
#include "connectors/file/text.hpp"
#include "connectors/kafka/kafka.hpp"
#include "core/store/secrets.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

// Live checks get a short leash each: one unreachable system must not hold up the gate.
constexpr std::int64_t k_live_timeout_ms = 3000;

struct CheckFlags {
  std::string file;
  bool live = false;
};

// The real systems, through the connectors.
class ConnectorInspector final : public core::LiveInspector {
public:
  explicit ConnectorInspector(const Context& context) : m_context(context) {}

  std::optional<core::TopicRetention> topic_retention(const std::string& topic) override {
    if (m_context.global.bootstrap.empty()) {
      throw UnreachableError("no --bootstrap-server was given");
    }
    std::string why;
    auto retention = connectors::kafka::describe_retention(kafka_settings(m_context), topic, k_live_timeout_ms, &why);
    if (!retention) {
      throw UnreachableError(why); // refused or unanswered: the check says which
    }
    return retention;
  }

  Redis redis(const core::ConsumerDeclaration& consumer) override {
    auto store = inspect(consumer);
    if (!store.redis) {
      throw UnreachableError(fmt::format("store '{}' is not redis://", core::redact_secrets(consumer.store)));
    }
    return *store.redis;
  }

  Dynamo dynamodb(const core::ConsumerDeclaration& consumer) override {
    auto store = inspect(consumer);
    if (!store.dynamodb) {
      throw UnreachableError(fmt::format("store '{}' is not dynamodb://TABLE", core::redact_secrets(consumer.store)));
    }
    return *store.dynamodb;
  }

  Inbox inbox(const core::ConsumerDeclaration& consumer) override {
    auto store = inspect(consumer);
    if (!store.inbox) {
      throw UnreachableError(fmt::format("store '{}' is not postgres://", core::redact_secrets(consumer.store)));
    }
    return *store.inbox;
  }

private:
  std::int64_t timeout() const { return core::parse_duration(m_context.global.timeout, "--timeout"); }
  // The store's family asks it, under the short leash; a kind it cannot ask is refused by its row.
  InspectedStore inspect(const core::ConsumerDeclaration& consumer) const {
    auto uri = core::parse_store_uri(consumer.store, "store");
    return family(uri.kind).inspect_live(consumer, uri, m_context, std::min(timeout(), k_live_timeout_ms));
  }
  const Context& m_context;
};

int run(const CheckFlags& options, Context& context) {
  auto format = parse_output_format(context);
  auto fail_on = core::parse_fail_on(context.global.fail_on);
  core::parse_duration(context.global.timeout, "--timeout");
  std::string text = connectors::file::read_text_file(options.file, "declarations");
  auto declarations = core::parse_declarations(text, options.file);
  if (!declarations.errors.empty()) {
    for (const auto& error : declarations.errors) {
      print_stderr(fmt::format("{}:{}:{}: error: {}\n", options.file, error.at.line, error.at.column, error.message));
    }
    // The first one's place in the sentence too: a failure document (GitLab's, SARIF's) carries only
    // this sentence, and a CI's widget then points at a line.
    const auto& first = declarations.errors.front();
    throw UsageError(fmt::format("{} has {} error{}, the first at {}:{}:{} ({}); fix them and run again", options.file,
                                 declarations.errors.size(), declarations.errors.size() == 1 ? "" : "s", options.file,
                                 first.at.line, first.at.column, first.message));
  }
  ConnectorInspector inspector(context);
  auto report = run_check(declarations, options.file, options.live ? &inspector : nullptr, fail_on,
                          context.global.fail_on, context.now_ms());
  OpenedSource none;
  return deliver_report(report, none, format, context);
}

} // namespace

CommandRunner register_check(CLI::App& app, Context& context) {
  auto options = std::make_shared<CheckFlags>();
  auto* sub = app.add_subcommand("check", "CI gate over dedup declarations: TTL vs retention, keys, namespaces, "
                                          "placements (--live: the brokers', Redis' and PostgreSQL's own settings)");
  sub->add_option("file", options->file, "the TOML file declaring [[consumer]] entries")
      ->required()
      ->type_name("FILE.toml");
  sub->add_flag("--live", options->live, "also ask the brokers, Redis and PostgreSQL (each under a short timeout)");
  return [options, &context, sub]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "check";
    return run(*options, context);
  };
}

} // namespace dedupctl::commands
