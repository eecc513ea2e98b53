// The Redis family: redis://, rediss://, redis+cluster://, redis+sentinel://, redis+unix://.
#include "commands/placement/family.hpp"
#include "commands/placement/settings.hpp"

#include "commands/pipeline/check.hpp"
#include "connectors/file/text.hpp"
#include "connectors/redis/redis.hpp"
#include "core/check/check_rules.hpp"
#include "core/store/snapshot_line.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
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

namespace {

// The placement's own keys: its layout and collection, named by the flag that gave it.
connectors::redis::RedisSettings placement_settings(const PlacementOptions& placement, const Context& context) {
  auto settings = redis_settings(placement.uri, context);
  if (placement.flag != "--store") {
    settings.flag = placement.flag;
  }
  settings.layout = placement.layout;
  settings.collection = placement.collection;
  return settings;
}

OpenedStore open_store(const PlacementOptions& placement, Context& context, std::optional<std::int64_t>) {
  OpenedStore out;
  auto settings = placement_settings(placement, context);
  out.store = connectors::redis::open_store(settings);
  if (auto topology = out.store->topology(); !topology.empty()) {
    context.note(fmt::format("--store {}: {}", placement.uri.redacted(), topology));
  }
  if (placement.layout.shape == core::RecordShape::BloomMember) {
    // What the filter was sized for beside what it holds: a scaling filter's links each halve the
    // error rate, a full non-scaling one refuses new ids.
    if (auto info = connectors::redis::bloom_info(settings)) {
      context.note(fmt::format("--collection {}: a Bloom filter of {} items in {} link{}, capacity {}{} (BF.INFO); "
                               "\"maybe\" reads as seen",
                               placement.collection, info->items, info->filters, info->filters == 1 ? "" : "s",
                               info->capacity, info->expansion == 0 ? ", not scaling" : ""));
    }
  }
  return out;
}

void check_writes(const PlacementOptions& placement, bool writes) {
  const auto& layout = placement.layout;
  const auto& ttl = placement.audit.ttl.span;
  if (layout.never_expires && ttl.finite_ms()) {
    throw UsageError(fmt::format("--ttl {}: --layout {} writes records that never expire (fields of one hash); "
                                 "leave --ttl out",
                                 core::to_text(ttl), layout.name));
  }
  if (writes && !ttl.known() && !layout.never_expires) {
    throw UsageError("--via redis:// needs --ttl (the TTL the consumer gives its records, or none) to mark replayed "
                     "events done");
  }
  if (writes && layout.value == core::RecordValue::Json && !ttl.finite_ms()) {
    throw UsageError(fmt::format("--layout {} writes records that carry their expiration: --ttl none cannot be "
                                 "written; give the consumer's{} TTL",
                                 layout.name,
                                 layout.default_ttl_ms > 0 ? " expires_after_seconds (Powertools' default: 1h)" : ""));
  }
}

std::unique_ptr<core::ReplayPlacement> open_via(const PlacementOptions& placement, const ViaOptions&,
                                                Context& context) {
  return connectors::redis::open_replay_placement(
      placement_settings(placement, context), placement.audit.ttl.span, placement.audit.policy.lease_ms,
      placement.audit.policy.in_progress_values, connectors::redis::ClaimForm::Auto, context.now_ms);
}

std::unique_ptr<core::RecordRelease> open_release(const PlacementOptions& placement, Context& context) {
  return connectors::redis::open_record_release(placement_settings(placement, context));
}

void parse_effects(const EffectsFlags& flags, EffectsOptions& out) {
  if (flags.key_template.empty()) {
    throw UsageError("--effects redis://…: give the key the consumer writes per applied event with "
                     "--effects-key-template TEMPLATE (e.g. 'charged:{event_id}')");
  }
  if (!flags.table.empty()) {
    throw UsageError("--effects-table is for --effects postgres://…; Redis effects are keys "
                     "(--effects-key-template)");
  }
  out.key_template = core::KeyTemplate::parse(flags.key_template, "--effects-key-template");
  out.placement.kind = reports::EffectsKind::Redis;
  out.placement.key_template = flags.key_template;
}

std::unique_ptr<core::EffectStore> open_effects(const EffectsOptions& options, Context& context,
                                                std::optional<std::int64_t>, bool) {
  auto settings = redis_settings(options.uri, context);
  settings.flag = "--effects";
  return std::make_unique<core::RecordEffects>(connectors::redis::open_store(settings));
}

// Discover over a Redis store: its keys sampled with SCAN, each candidate looked up as an audit
// with its layout would.
class RedisDiscoverStore final : public DiscoverStore {
public:
  explicit RedisDiscoverStore(connectors::redis::RedisSettings settings) : m_settings(std::move(settings)) {}

  std::vector<core::SampledKey> sample_keys(std::size_t limit) override {
    return connectors::redis::sample_keys(m_settings, limit);
  }

  std::int64_t count_found(const core::RecordLayout& layout, const std::string& collection,
                           const std::vector<std::string>& keys) override {
    auto settings = m_settings;
    settings.layout = layout;
    settings.collection = collection;
    auto store = connectors::redis::open_store(settings);
    std::vector<core::RecordState> states;
    store->lookup(keys, states);
    return std::count_if(states.begin(), states.end(),
                         [](const auto& s) { return s.kind == core::RecordState::Kind::Present; });
  }

private:
  connectors::redis::RedisSettings m_settings;
};

DiscoverResult discover(const core::StoreUri& uri, const DiscoverRequest& request, core::EventSource& source,
                        Context& context) {
  RedisDiscoverStore store(redis_settings(uri, context));
  return run_discover(request, source, store);
}

InspectedStore inspect(const core::ConsumerDeclaration& consumer, const core::StoreUri& uri, const Context& context,
                       std::int64_t timeout_ms) {
  // The password as for every command (REDISCLI_AUTH, a password file or command), TLS as the URI says.
  auto settings = redis_settings(uri, context);
  settings.timeout_ms = timeout_ms;
  constexpr std::int64_t k_sample_keys = 100;
  auto facts = connectors::redis::inspect_server(settings, key_pattern(consumer), k_sample_keys);
  auto worst = core::worst_redis_node(facts.nodes);
  core::LiveInspector::Redis redis;
  redis.maxmemory_policy = worst.maxmemory_policy;
  redis.persistence = worst.persistence;
  redis.policy_node = worst.policy_node;
  redis.persistence_node = worst.persistence_node;
  redis.sampled_keys = facts.sampled_keys;
  redis.sampled_without_expiry = facts.sampled_without_expiry;
  redis.max_pttl_ms = facts.max_pttl_ms;
  InspectedStore out;
  out.redis = redis;
  return out;
}

// SCAN, PTTL and the value (the fields a layout's rules read) of every key matching --match, into a
// file that appears whole or not at all. The header needs the snapshot's time, known only once the
// scan starts, so records are kept until then.
int snapshot(const SnapshotOptions& options, Context& context) {
  auto settings = redis_settings(options.uri, context);
  settings.layout = options.layout;
  settings.collection = options.collection;
  std::vector<std::string> lines;
  std::int64_t records = 0;
  auto scanned = connectors::redis::scan_records(
      settings, options.match,
      [&](const connectors::redis::SnapshotRecord& record) {
        lines.push_back(core::format_snapshot_entry(core::SnapshotEntry{record.key, record.pttl_ms, record.value}));
        ++records;
      },
      [&](std::int64_t seen) {
        if (context.progress) {
          context.progress(fmt::format("snapshot: {} keys scanned, {} records", seen, records));
        }
      });
  if (context.progress) {
    context.progress("");
  }
  std::int64_t taken_at = scanned.started_ms;
  // The header says which servers were scanned: every master of a cluster, each once. A filter's
  // snapshot is its BF.SCANDUMP: the key it dumped stands as what it matched.
  std::string nodes = fmt::format("{}", fmt::join(scanned.nodes, ","));
  bool bloom = settings.layout.shape == core::RecordShape::BloomMember;
  std::string match = bloom ? settings.collection : options.match;
  std::string what =
      bloom ? fmt::format("snapshot of the Bloom filter {} ({} chunks of BF.SCANDUMP)", settings.collection, records)
            : fmt::format("snapshot of {} records matching '{}'", records, options.match);
  return write_snapshot(core::format_snapshot_header(
                            core::SnapshotHeader{taken_at, options.uri.redacted(), match, nodes, settings.layout.name}),
                        lines,
                        fmt::format("{} from {} ({}) taken at {}", what, options.uri.redacted(),
                                    scanned.nodes.size() == 1 ? "one server" : "masters " + nodes,
                                    core::format_time(taken_at)),
                        context);
}

} // namespace

StoreFamily redis_family() {
  StoreFamily family;
  family.row = &placement::family_row(core::StoreUri::Kind::Redis);
  family.check_writes = check_writes;
  family.open_store = open_store;
  family.open_via = open_via;
  family.open_release = open_release;
  family.parse_effects = parse_effects;
  family.open_effects = open_effects;
  family.discover = discover;
  family.inspect = inspect;
  family.snapshot = snapshot;
  return family;
}

} // namespace dedupctl::commands
