#include "commands/options.hpp"

#include "commands/settings.hpp"
#include "connectors/schema/decoder.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

void add_global_options(CLI::App& app, GlobalFlags& global) {
  auto* group = app.add_option_group("Global options");
  group->add_option("-b,--bootstrap-server,--brokers", global.bootstrap, "Kafka brokers HOST:PORT[,...]")
      ->envname("DEDUPCTL_BOOTSTRAP_SERVER");
  // One value an occurrence, as kcat's -X: a vector option would take every word up to the next
  // flag, the file of `check -X a=b FILE` included.
  group
      ->add_option("-X,--kafka-property", global.properties,
                   "librdkafka property prop=value (repeatable), as in kcat; overrides -F")
      ->type_name("PROP=VALUE")
      ->allow_extra_args(false);
  // Secrets off the command line: a file of properties, as kcat's -F, named by a flag, the config
  // file or the environment.
  group
      ->add_option("-F,--kafka-config", global.kafka_config,
                   "librdkafka properties from FILE (PROP=VALUE lines, # comments), as kcat's -F")
      ->type_name("FILE")
      ->envname("DEDUPCTL_KAFKA_CONFIG");
  group
      ->add_option("--kafka-token-command", global.kafka_token_command,
                   "SASL OAUTHBEARER: a command that prints a token (a JWT, or JSON {token, expires_at_ms, "
                   "principal}), run again before it expires")
      ->type_name("CMD")
      ->envname("DEDUPCTL_KAFKA_TOKEN_COMMAND");
  // Redis passwords off the command line, for a token that rotates: read or run at every connection.
  group
      ->add_option("--redis-password-file", global.redis_password_file,
                   "the Redis password from FILE, read again at every connection")
      ->type_name("FILE")
      ->envname("DEDUPCTL_REDIS_PASSWORD_FILE");
  group
      ->add_option("--redis-password-command", global.redis_password_command,
                   "a command that prints the Redis password (a token), run at every connection and again "
                   "when the server refuses the last one")
      ->type_name("CMD")
      ->envname("DEDUPCTL_REDIS_PASSWORD_COMMAND");
  // As the AWS CLI's --profile: the profile's keys, credential_process or web identity, and region.
  group
      ->add_option("--aws-profile", global.aws_profile,
                   "dynamodb://: the credentials and region of this profile of ~/.aws/credentials and ~/.aws/config "
                   "(AWS_SHARED_CREDENTIALS_FILE, AWS_CONFIG_FILE)")
      ->type_name("NAME")
      ->envname("AWS_PROFILE");
  group->add_option("-o,--format", global.format, "text, json, markdown, html, sarif, junit, github or gitlab")
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

void add_source_options(CLI::App& app, SourceFlags& options) {
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
  group->add_flag("--read-uncommitted", options.read_uncommitted,
                  "read aborted transactions' records too, for forensics (default: read_committed, what consumers "
                  "see)");
}

void add_shard_options(CLI::App& app, ShardFlags& options) {
  auto* group = app.add_option_group("Sharding", "One of N processes over one range, put together by dedupctl merge");
  group
      ->add_option("--shard", options.shard,
                   "read only partitions p with p mod N = K (0-based: a Kubernetes Indexed Job's JOB_COMPLETION_INDEX)")
      ->type_name("K/N");
  group->add_option("--digest", options.digest, "write what dedupctl merge needs from this shard to FILE")
      ->type_name("FILE");
  group
      ->add_option("--now", options.now,
                   "judge as of TIME (RFC 3339 or epoch ms) instead of the clock: every shard of a run needs the same")
      ->type_name("TIME");
}

void apply_shard_options(const ShardFlags& options, SourceFlags& source, Context& context, bool needs_now) {
  if (!options.now.empty()) {
    std::int64_t now = core::parse_time(options.now, "--now");
    context.now_ms = [now] { return now; };
  }
  if (!options.shard.empty()) {
    source.shard = core::parse_shard(options.shard);
    if (options.digest.empty()) {
      throw UsageError(fmt::format("--shard {} needs --digest FILE: dedupctl merge puts the shards together from their "
                                   "digests, not from their reports",
                                   options.shard));
    }
    if (needs_now && options.now.empty() && source.shard->count > 1) {
      throw UsageError(fmt::format("--shard {} needs --now TIME: an audit judges records by the time, and the shards "
                                   "of one run must judge them as of the same one (e.g. --now "
                                   "2026-11-24T06:00:00Z, the same for every shard)",
                                   options.shard));
    }
  } else if (!options.digest.empty()) {
    source.shard = core::ShardSpec{};
  }
}

void add_identity_options(CLI::App& app, IdentityFlags& options) {
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
  add_registry_options(app, options);
}

void add_version_options(CLI::App& app, IdentityFlags& options) {
  auto* group = app.get_option_group("Identity");
  group
      ->add_option("--version", options.version,
                   "a version guard's version (UPDATE … WHERE version < $v): checked per --entity; the first spec "
                   "that yields a value wins")
      ->type_name("SPEC[,...]");
  group
      ->add_option("--version-order", options.version_order,
                   "how the handler compares --version: numeric, lexical (byte order) or rfc3339 (times)")
      ->type_name("ORDER");
}

std::optional<core::VersionOrder> parse_version_options(const IdentityFlags& options, bool sharded) {
  if (options.version.empty()) {
    return std::nullopt;
  }
  if (sharded) {
    throw UsageError("--version with --shard/--digest: an entity's versions are walked in one pass over every "
                     "partition, which shards split; check the range in one run");
  }
  if (options.entity.empty()) {
    throw UsageError("--version needs --entity: a version guard compares versions of one entity (give --entity "
                     "json:/order_id, or the spec of the key the handler updates)");
  }
  return core::parse_version_order(options.version_order);
}

core::VersionOrder guard_order(const IdentityFlags& options, const PlacementOptions& placement, std::string_view how,
                               bool sharded) {
  if (!placement.layout.projection.states) {
    auto order = parse_version_options(options, sharded);
    if (!order) {
      throw UsageError(fmt::format("{} version-guard needs --entity and --version: the guard compares each event's "
                                   "version with its entity's in the projection",
                                   how));
    }
    return *order;
  }
  if (!options.version.empty()) {
    throw UsageError(fmt::format("--version with {} state-guard: a state guard compares its entity's state, not a "
                                 "version; drop --version (or use --layout version-guard)",
                                 how));
  }
  if (sharded) {
    throw UsageError("--layout state-guard with --shard/--digest: an entity's events are walked in one pass over "
                     "every partition, which shards split; check the range in one run");
  }
  if (options.entity.empty()) {
    throw UsageError(fmt::format("{} state-guard needs --entity: the guard moves one entity's state (give --entity "
                                 "json:/order_id, or the spec of the key the handler updates)",
                                 how));
  }
  return core::VersionOrder::Lexical; // never compared: the walk follows the types
}

void add_registry_options(CLI::App& app, IdentityFlags& options, bool directory) {
  auto* registry = app.add_option_group(
      "Schema registry", "Payloads and keys in a schema registry's wire format (Avro, Protobuf, JSON Schema) are "
                         "decoded for json: and key-json: specs");
  registry
      ->add_option("--registry", options.registry,
                   "the schema registry's URL (Confluent API; Apicurio's ccompat), e.g. https://registry:8081")
      ->type_name("URL")
      ->envname("DEDUPCTL_REGISTRY_URL");
  registry->add_option("--registry-ca", options.registry_ca, "trust these CAs (PEM) for an https registry")
      ->type_name("FILE")
      ->envname("DEDUPCTL_REGISTRY_CA");
  registry
      ->add_option("--registry-user-info-file", options.registry_user_info_file,
                   "basic auth USER:PASSWORD from FILE (or DEDUPCTL_REGISTRY_USER_INFO)")
      ->type_name("FILE")
      ->envname("DEDUPCTL_REGISTRY_USER_INFO_FILE");
  registry
      ->add_option("--registry-token-file", options.registry_token_file,
                   "a bearer token from FILE, read at start (or DEDUPCTL_REGISTRY_TOKEN)")
      ->type_name("FILE")
      ->envname("DEDUPCTL_REGISTRY_TOKEN_FILE");
  if (!directory) {
    return;
  }
  registry
      ->add_option("--schemas", options.schemas,
                   "schemas from DIR (<id>.json, as dedupctl schemas export writes them) instead of a registry")
      ->type_name("DIR");
}

void add_examples_option(CLI::Option_group& group, std::size_t& examples) {
  auto bounded = CLI::Validator(
      [](std::string& text) -> std::string {
        std::size_t pos = 0;
        long long n = -1;
        try {
          n = std::stoll(text, &pos);
        } catch (const std::exception&) {
          pos = 0;
        }
        if (pos != text.size() || n < 0) {
          return fmt::format("'{}' is not a number of examples: give 0 (none) to {}", text, k_max_examples);
        }
        if (static_cast<std::size_t>(n) > k_max_examples) {
          return fmt::format("{} examples a finding is more than the {} a report keeps (each is held in memory and "
                             "printed); give at most {}",
                             n, k_max_examples, k_max_examples);
        }
        return "";
      },
      "");
  group.add_option("--examples", examples, fmt::format("examples kept per finding (0 to {})", k_max_examples))
      ->type_name("N")
      ->check(bounded);
}

core::IdentifyOptions parse_identity(const IdentityFlags& options, Context& context) {
  core::IdentifyOptions out;
  out.id = core::parse_field_specs(options.id, "--id");
  out.type = core::parse_field_specs(options.type, "--type");
  if (!options.entity.empty()) {
    out.entity = core::parse_field_specs(options.entity, "--entity");
  }
  if (!options.semantic_key.empty()) {
    out.semantic = core::parse_field_specs(options.semantic_key, "--semantic-key");
  }
  if (!options.version.empty()) {
    out.version = core::parse_field_specs(options.version, "--version");
  }
  if (!options.registry.empty() && !options.schemas.empty()) {
    throw UsageError("--registry and --schemas are two sources of the same schemas: give one");
  }
  if (auto settings = registry_settings(options, context)) {
    out.decoder = std::make_shared<connectors::schema::SchemaDecoder>(connectors::schema::open_registry(*settings));
  } else if (!options.schemas.empty()) {
    out.decoder =
        std::make_shared<connectors::schema::SchemaDecoder>(connectors::schema::open_directory(options.schemas));
  }
  return out;
}

reports::Format parse_output_format(const Context& context) { return reports::parse_format(context.global.format); }

void for_each_own_option(const CLI::App& app, const std::function<void(const CLI::Option&)>& visit) {
  for (const auto* option : app.get_options()) {
    visit(*option);
  }
  for (const auto* group : app.get_subcommands([](const CLI::App* g) { return g->get_name().empty(); })) {
    for_each_own_option(*group, visit);
  }
}

} // namespace dedupctl::commands
