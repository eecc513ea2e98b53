#include "commands/options.hpp"

#include "connectors/file/output.hpp"
#include "core/errors.hpp"
#include "core/offset_spec.hpp"
#include "core/retention.hpp"
#include "core/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <charconv>

namespace dedupctl::commands {

void add_global_options(CLI::App& app, GlobalOptions& global) {
  auto* group = app.add_option_group("Global options");
  group->add_option("-b,--bootstrap-server,--brokers", global.bootstrap, "Kafka brokers HOST:PORT[,...]")
      ->envname("DEDUPCTL_BOOTSTRAP_SERVER");
  group->add_option("-X", global.properties, "librdkafka property prop=value (repeatable), as in kcat")
      ->type_name("PROP=VALUE");
  group->add_option("-o,--format", global.format, "text, json, markdown, html, sarif, junit or github")
      ->type_name("FMT");
  group->add_option("--output", global.output, "write the report to FILE instead of stdout")->type_name("FILE");
  group->add_option("--fail-on", global.fail_on, "exit 1 on findings at or above: error, warning, info, none")
      ->type_name("LEVEL");
  group->add_option("--timeout", global.timeout, "give up on an unresponsive system after this long (exit 3)")
      ->type_name("DURATION");
  group->add_flag("-v,--verbose", global.verbose, "more diagnostics on stderr (-vv: librdkafka's own)");
  group->add_flag("-q,--quiet", global.quiet, "fewer diagnostics on stderr");
  group->add_flag("--no-progress", global.no_progress, "no progress line (shown only when stderr is a TTY)");
  group->add_flag("--no-color", global.no_color, "no colour in text reports");
}

void add_source_options(CLI::App& app, SourceOptions& options) {
  auto* group = app.add_option_group("Source", "Where the events come from");
  group->add_option("--topic", options.topics, "topic and optional partitions, T or T:0,1,5 (repeatable)")
      ->type_name("T[:P,...]");
  group->add_option("--input", options.input, "a kcat -J dump (NDJSON) instead of brokers; - for stdin")
      ->type_name("FILE");
  group
      ->add_option("--from", options.from,
                   "range start (inclusive): earliest, latest, committed, N, -N, @TIME, -DURATION")
      ->type_name("SPEC");
  group->add_option("--to", options.to, "range end (exclusive), same SPEC grammar")->type_name("SPEC");
  group->add_option("--group", options.group, "consumer group whose committed offsets split processed from pending")
      ->type_name("G");
  group->add_flag("--skip-invalid", options.skip_invalid, "count malformed --input lines instead of stopping (exit 2)");
}

void add_identity_options(CLI::App& app, IdentityOptions& options) {
  auto* group = app.add_option_group("Identity", "How an event is identified: header:NAME, json:/pointer, key, offset");
  group->add_option("--id", options.id, "event id; the first spec that yields a value wins")->type_name("SPEC[,...]");
  group->add_option("--type", options.type, "event type; the first spec that yields a value wins")
      ->type_name("SPEC[,...]");
  group->add_option("--entity", options.entity, "business key (order id ...); the first spec that yields a value wins")
      ->type_name("SPEC[,...]");
  group
      ->add_option("--semantic-key", options.semantic_key,
                   "what makes two events the same intent, all specs combined (default: type + entity + payload "
                   "without the id)")
      ->type_name("SPEC[,...]");
}

void add_inbox_options(CLI::Option_group& group, InboxOptions& options) {
  group.add_option("--inbox-table", options.table, "the inbox table of a postgres:// store (may be schema-qualified)")
      ->type_name("TABLE");
  group.add_option("--inbox-id-column", options.id_column, "the inbox's event id column")->type_name("COLUMN");
  group
      .add_option("--inbox-consumer-column", options.consumer_column,
                  "the inbox's consumer column; \"\" when it has none")
      ->type_name("COLUMN");
  group.add_option("--inbox-time-column", options.time_column, "when the row was written")->type_name("COLUMN");
  group
      .add_option("--inbox-status-column", options.status_column,
                  "a status column whose in-progress values mark claims (none by default)")
      ->type_name("COLUMN");
}

void add_placement_options(CLI::App& app, PlacementOptions& options, PlacementUse use) {
  bool audit = use == PlacementUse::Audit;
  auto* group = app.add_option_group("Placement", audit ? "Where and how the consumer keeps its dedup records"
                                                        : "The placement the replay routes every event through");
  auto* store =
      group
          ->add_option(audit ? "--store" : "--via", options.store,
                       audit ? "redis://[user:pass@]host:port[/db], redis+unix:///path[?db=N], postgres://… or a libpq "
                               "conninfo (an inbox table), or file:PATH (a snapshot)"
                             : "redis://…, postgres://… or a libpq conninfo (an inbox table), or memory: (an LRU of "
                               "recent ids with a Bloom filter behind it)")
          ->type_name("URI");
  if (audit) {
    store->required();
  }
  group
      ->add_option("--key-template", options.key_template,
                   "the dedup key per event: {event_id} {type} {entity} {topic} {partition} {offset} {key} "
                   "{consumer} {header:NAME} {json:/ptr}; {{ }} are literal braces")
      ->type_name("T");
  group->add_option("--consumer", options.consumer, "the consumer whose records are checked ({consumer} in templates)")
      ->type_name("NAME");
  group
      ->add_option("--ttl", options.ttl,
                   audit ? "the TTL the consumer sets, or none; estimated from the records when absent"
                         : "the TTL of the records a replay marks done, or none (needed with --via redis://)")
      ->type_name("DURATION|none");
  if (audit) {
    group
        ->add_option("--retention", options.retention,
                     "the topic's retention, or infinite; read with DescribeConfigs when absent")
        ->type_name("DURATION|infinite");
    group->add_option("--max-lag", options.max_lag, "allowance between an event's timestamp and its processing")
        ->type_name("DURATION");
  }
  group
      ->add_option("--in-progress-value", options.in_progress_values, "values that mean claimed, not done (repeatable)")
      ->type_name("V");
  group
      ->add_option("--lease", options.lease,
                   audit ? "an in-progress claim older than this is orphaned"
                         : "how long a replay's claim holds before it lapses")
      ->type_name("DURATION");
  add_inbox_options(*group, options.inbox);
  if (!audit) {
    return;
  }
  group
      ->add_option("--inbox-retention", options.inbox_retention,
                   "how long the cleanup job keeps rows; estimated from the oldest row when absent")
      ->type_name("DURATION|none");
  group
      ->add_option("--inbox-lookup", options.inbox_lookup,
                   "batches (= ANY per batch), load (the whole inbox with COPY while the log is read), or auto")
      ->check(CLI::IsMember({"auto", "batches", "load"}))
      ->type_name("auto|batches|load");
  group
      ->add_option("--side-effects", options.side_effects,
                   "TYPE=external|internal|idempotent for replay-risk (repeatable); unknown types are external")
      ->type_name("TYPE=CLASS");
}

ParsedPlacement parse_placement(const PlacementOptions& options, std::string_view store_flag) {
  ParsedPlacement out;
  if (!options.store.empty()) {
    out.uri = core::parse_store_uri(options.store, std::string(store_flag));
  }
  out.audit.key_template = core::KeyTemplate::parse(options.key_template);
  auto& policy = out.audit.policy;
  if (!options.ttl.empty()) {
    out.audit.ttl = core::declared_ttl(core::parse_ttl(options.ttl));
  }
  if (!options.inbox_retention.empty()) {
    out.inbox_retention = core::parse_ttl(options.inbox_retention, "--inbox-retention");
  }
  if (!options.retention.empty()) {
    policy.retention = core::parse_retention(options.retention);
  }
  policy.max_lag_ms = core::parse_duration(options.max_lag, "--max-lag");
  policy.lease_ms = core::parse_duration(options.lease, "--lease");
  policy.in_progress_values = options.in_progress_values;
  for (const auto& item : options.side_effects) {
    out.audit.side_effects.insert(core::parse_side_effect(item));
  }
  return out;
}

std::string kind_name(core::StoreUri::Kind kind) {
  switch (kind) {
  case core::StoreUri::Kind::Redis:
    return "redis";
  case core::StoreUri::Kind::Postgres:
    return "postgres";
  case core::StoreUri::Kind::File:
    return "file";
  case core::StoreUri::Kind::Memory:
    return "memory";
  }
  return "redis";
}

core::IdentifyOptions parse_identity(const IdentityOptions& options) {
  core::IdentifyOptions out;
  out.id = core::parse_field_specs(options.id, "--id");
  out.type = core::parse_field_specs(options.type, "--type");
  if (!options.entity.empty()) {
    out.entity = core::parse_field_specs(options.entity, "--entity");
  }
  if (!options.semantic_key.empty()) {
    out.semantic = core::parse_field_specs(options.semantic_key, "--semantic-key");
  }
  return out;
}

connectors::redis::RedisSettings redis_settings(const core::StoreUri& uri, const Context& context) {
  connectors::redis::RedisSettings settings;
  settings.uri = uri;
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  settings.stop = &context.stop;
  return settings;
}

connectors::postgres::InboxSettings inbox_settings(const core::StoreUri& uri, const InboxOptions& inbox,
                                                   const std::string& consumer, const Context& context) {
  connectors::postgres::InboxSettings settings;
  settings.conninfo = uri.conninfo;
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  settings.schema = connectors::postgres::InboxSchema{inbox.table, inbox.id_column, inbox.consumer_column,
                                                      inbox.time_column, inbox.status_column};
  settings.consumer = consumer;
  settings.stop = &context.stop;
  return settings;
}

connectors::kafka::KafkaSettings kafka_settings(const Context& context) {
  connectors::kafka::KafkaSettings settings;
  settings.bootstrap = context.global.bootstrap;
  for (const auto& property : context.global.properties) {
    auto eq = property.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw UsageError(fmt::format("invalid -X '{}': expected prop=value", property));
    }
    settings.properties.emplace_back(property.substr(0, eq), property.substr(eq + 1));
  }
  settings.timeout_ms = core::parse_duration(context.global.timeout, "--timeout");
  if (settings.timeout_ms <= 0) {
    throw UsageError("invalid --timeout: it must be longer than 0");
  }
  settings.verbosity = context.global.verbose;
  settings.stop = &context.stop;
  return settings;
}

namespace {

connectors::kafka::TopicRequest parse_topic(const std::string& text) {
  connectors::kafka::TopicRequest request;
  auto colon = text.find(':');
  request.topic = text.substr(0, colon);
  if (request.topic.empty()) {
    throw UsageError(fmt::format("invalid --topic '{}': expected T or T:0,1,5", text));
  }
  if (colon == std::string::npos) {
    return request;
  }
  std::string_view rest(text);
  rest.remove_prefix(colon + 1);
  while (true) {
    auto comma = rest.find(',');
    auto item = rest.substr(0, comma);
    std::int32_t partition = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), partition);
    if (item.empty() || ec != std::errc{} || ptr != item.data() + item.size() || partition < 0) {
      throw UsageError(fmt::format("invalid --topic '{}': '{}' is not a partition number", text, item));
    }
    request.partitions.push_back(partition);
    if (comma == std::string_view::npos) {
      break;
    }
    rest.remove_prefix(comma + 1);
  }
  return request;
}

} // namespace

OpenedSource open_source(const SourceOptions& options, const Context& context, const std::optional<std::string>& seek,
                         const core::Checkpoint* resume) {
  auto from = core::parse_offset_spec(options.from, "--from");
  auto to = core::parse_offset_spec(options.to, "--to");
  std::int64_t now = context.now_ms();
  OpenedSource opened;
  if (!options.input.empty()) {
    if (!options.topics.empty()) {
      throw UsageError("--input and --topic exclude each other: read a kcat dump or a topic, not both");
    }
    auto plan = core::plan_without_broker(from, to, now);
    auto file =
        std::make_unique<connectors::file::KcatFileSource>(options.input, plan, options.skip_invalid, &context.stop);
    opened.file = file.get();
    opened.source = std::move(file);
    opened.info.kind = "file";
    opened.info.path = options.input == "-" ? "<stdin>" : options.input;
    if (!options.group.empty()) {
      opened.info.group = options.group;
    }
    return opened;
  }
  if (options.topics.empty()) {
    throw UsageError("no events to read: give --topic T (with --bootstrap-server) or --input FILE");
  }
  auto settings = kafka_settings(context);
  connectors::kafka::RangeRequest request;
  for (const auto& topic : options.topics) {
    request.topics.push_back(parse_topic(topic));
  }
  request.from = from;
  request.to = to;
  if (!options.group.empty()) {
    request.group = options.group;
  }
  if (seek) {
    request.seek = core::parse_offset_spec(*seek, "--seek");
  }
  request.now_ms = now;
  if (!request.group) {
    // Refuse `committed` before contacting anyone.
    for (const auto* spec : {&request.from, &request.to}) {
      if (spec->kind == core::SpecKind::Committed) {
        throw UsageError(
            fmt::format("'{}' needs --group: the committed offset belongs to a consumer group", spec->text));
      }
    }
  }
  try {
    auto resolved = connectors::kafka::resolve_range(settings, request);
    opened.info = resolved.info;
    if (resume) {
      for (auto& plan : resolved.plans) {
        if (auto next = resume->next_offset(plan.topic, plan.partition); next && *next > plan.start) {
          plan.start = std::min(*next, plan.end);
        }
      }
    }
    opened.source = connectors::kafka::open_reader(settings, std::move(resolved.plans));
  } catch (const UnreachableError& e) {
    opened.failure = e.what();
    opened.info.kind = "kafka";
    opened.info.bootstrap = settings.bootstrap;
    opened.info.group = request.group;
    for (const auto& topic : request.topics) {
      opened.info.topics.push_back(topic.topic);
    }
  }
  return opened;
}

void note_ranges(const core::SourceInfo& info, const Context& context) {
  if (context.global.quiet > 0 || info.kind != "kafka") {
    return;
  }
  for (const auto& range : info.partitions) {
    std::string extra;
    if (range.from_timestamp) {
      extra = fmt::format(", from the first event at or after {}", core::format_time(*range.from_timestamp));
    }
    if (range.committed) {
      extra += fmt::format(", committed {}", *range.committed);
    }
    context.note(fmt::format("{}[{}] {}..{} (log {}..{}{})", range.topic, range.partition, range.from, range.to,
                             range.log_start.value_or(0), range.log_end.value_or(0), extra));
  }
}

reports::Format parse_output_format(const Context& context) { return reports::parse_format(context.global.format); }

reports::Report unreachable_report(const std::string& command, const std::string& error, const core::SourceInfo& info,
                                   const Context& context) {
  reports::Report report;
  report.command = command;
  report.generated_at_ms = context.now_ms();
  report.complete = false;
  report.error = error;
  report.exit_code = k_exit_unreachable;
  report.fail_on = context.global.fail_on;
  report.source = info;
  return report;
}

int deliver_report(reports::Report& report, const OpenedSource& opened, reports::Format format,
                   const Context& context) {
  if (opened.file && report.source) {
    report.source->invalid_lines = opened.file->invalid_lines();
  }
  if (context.progress) {
    context.progress("");
  }
  if (report.error) {
    context.note(fmt::format("error: {}", *report.error));
  }
  write_report(report, format, context);
  return report.exit_code;
}

void write_report(const reports::Report& report, reports::Format format, const Context& context) {
  connectors::file::ReportOutput output(context.global.output);
  reports::RenderOptions render_options;
  render_options.color = !context.global.no_color && output.is_terminal();
  reports::render(report, format, output.stream(), render_options);
  output.commit();
}

} // namespace dedupctl::commands
