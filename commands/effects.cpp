#include "commands/effects.hpp"

#include "commands/placement/family.hpp"
#include "commands/settings.hpp"
#include "connectors/kafka/kafka.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

void add_effects_options(CLI::App& app, EffectsFlags& flags) {
  auto* group = app.add_option_group("Effects");
  group
      ->add_option("--effects", flags.uri,
                   "where the consumer's effect of each event can be looked up: postgres://… (a row by "
                   "--effects-column), redis://… (a key by --effects-key-template) or kafka:TOPIC (a record it "
                   "produced, by --effects-id); the audit then tells lost events (marked processed, never applied) "
                   "from unguarded ones (applied, no record)")
      ->type_name("URI");
  group->add_option("--effects-table", flags.table, "the table holding one row per applied event (postgres)")
      ->type_name("NAME");
  group->add_option("--effects-column", flags.column, "its column holding the event id (postgres)")
      ->type_name("COLUMN")
      ->capture_default_str();
  group
      ->add_option("--effects-key-template", flags.key_template,
                   "the key the consumer writes per applied event (redis; placeholders and filters as "
                   "--key-template)")
      ->type_name("TEMPLATE");
  group
      ->add_option("--effects-id", flags.id,
                   "how an output record names the event it is the effect of (kafka:; specs as --id)")
      ->type_name("SPEC[,...]")
      ->capture_default_str();
  group
      ->add_option("--effects-allowance", flags.allowance,
                   "kafka:: the output topic is read from the audited range's earliest timestamp less this (clocks "
                   "that disagree), to its end")
      ->type_name("DURATION")
      ->capture_default_str();
}

std::optional<EffectsOptions> parse_effects(const EffectsFlags& flags) {
  if (flags.uri.empty()) {
    if (!flags.table.empty() || !flags.key_template.empty()) {
      throw UsageError(fmt::format("{} needs --effects URI: where the effects are",
                                   flags.table.empty() ? "--effects-key-template" : "--effects-table"));
    }
    return std::nullopt;
  }
  EffectsOptions out;
  bool kafka = flags.uri.starts_with("kafka:");
  const EffectsFlags defaults;
  if (!kafka && (flags.id != defaults.id || flags.allowance != defaults.allowance)) {
    throw UsageError(fmt::format("{} is for --effects kafka:TOPIC (records of an output topic)",
                                 flags.id != defaults.id ? "--effects-id" : "--effects-allowance"));
  }
  if (kafka) {
    std::string topic = flags.uri.substr(6);
    if (topic.empty()) {
      throw UsageError("--effects kafka:TOPIC: name the topic the consumer produces its effects to");
    }
    if (!flags.table.empty() || !flags.key_template.empty()) {
      throw UsageError(fmt::format("{} is not for --effects kafka:{}: an output record is found by its event id "
                                   "(--effects-id)",
                                   flags.table.empty() ? "--effects-key-template" : "--effects-table", topic));
    }
    out.id = core::parse_field_specs(flags.id, "--effects-id");
    out.id_text = flags.id;
    out.allowance_ms = core::parse_duration(flags.allowance, "--effects-allowance");
    out.placement.kind = reports::EffectsKind::Kafka; // not a store: the topic is read through -b's cluster
    out.placement.store = flags.uri;
    out.placement.topic = topic;
    return out;
  }
  out.uri = core::parse_store_uri(flags.uri, "--effects");
  out.placement.store = out.uri.redacted();
  family(out.uri.kind).effects_options(out.uri, flags, out);
  return out;
}

std::string describe_effects(const EffectsOptions& options) {
  const auto& where = options.placement;
  return where.kind == reports::EffectsKind::Postgres
             ? fmt::format("{} ({}.{})", where.store, where.table, where.column)
         : where.kind == reports::EffectsKind::Kafka
             ? fmt::format("{} (ids by {}, from the range's earliest event less {})", where.store, options.id_text,
                           core::format_duration(options.allowance_ms))
             : fmt::format("{} ({})", where.store, where.key_template);
}

OpenedEffects open_effects(const EffectsOptions& options, Context& context, std::optional<std::int64_t> expected_events,
                           bool batched, const std::vector<core::PartitionPlan>* plans) {
  OpenedEffects out;
  bool kafka = options.placement.kind == reports::EffectsKind::Kafka;
  if (kafka && !plans) {
    throw UsageError(fmt::format("--effects {}: effects read from a topic need the audited range on the brokers "
                                 "(-b, --topic), from whose earliest event the output topic is read; a kcat dump "
                                 "(--input) has none",
                                 options.placement.store));
  }
  try {
    if (kafka) {
      auto settings = kafka_settings(context);
      auto earliest = connectors::kafka::earliest_timestamp(settings, *plans);
      out.store = connectors::kafka::open_topic_effects(settings, options.placement.topic,
                                                        earliest ? *earliest - options.allowance_ms : context.now_ms(),
                                                        options.id, batched);
      context.note(fmt::format("effects: {} read from {} (the range's earliest event less {}) to its end",
                               options.placement.store,
                               earliest ? core::format_time(*earliest - options.allowance_ms) : "now",
                               core::format_duration(options.allowance_ms)));
    } else {
      out.store = family(options.uri.kind).effects(options, context, expected_events, batched);
    }
  } catch (const UnreachableError& e) {
    out.failure = e.what();
  }
  return out;
}

} // namespace dedupctl::commands
