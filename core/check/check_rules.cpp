#include "core/check/check_rules.hpp"
#include "core/store/dynamodb.hpp"

#include "core/audit/ttl.hpp"
#include "core/check/inbox_rules.hpp"
#include "core/identity/key_template.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

namespace {

// The literal start of a template's keys, with {consumer} filled in: two consumers whose starts
// are prefixes of one another can write the same keys.
std::string literal_prefix(const ConsumerDeclaration& consumer) {
  std::string prefix;
  try {
    KeyTemplate tmpl = KeyTemplate::parse(consumer.key_template);
    for (const auto& segment : tmpl.segments()) {
      if (segment.part == KeyTemplate::Part::Literal) {
        prefix += segment.text;
      } else if (segment.part == KeyTemplate::Part::Consumer) {
        prefix += consumer.name;
      } else {
        break;
      }
    }
  } catch (...) {
  }
  return prefix;
}

std::string one_key_name(const ConsumerDeclaration& consumer) {
  return consumer.collection.empty() ? consumer.layout.collection : consumer.collection;
}

// Whether two Redis consumers' records can collide: their templates' literal starts are prefixes of
// one another, or, for one-key layouts, they keep their records in the same key.
bool shares_keys(const ConsumerDeclaration& a, const ConsumerDeclaration& b) {
  if (one_key(a.layout) || one_key(b.layout)) {
    return one_key(a.layout) && one_key(b.layout) && one_key_name(a) == one_key_name(b);
  }
  std::string pa = literal_prefix(a);
  std::string pb = literal_prefix(b);
  return pa.starts_with(pb) || pb.starts_with(pa);
}

} // namespace

Finding consumer_finding(const ConsumerDeclaration& consumer, const std::string& file, const std::string& field,
                         std::string id, Severity severity, std::string title, std::string advice) {
  Finding f;
  f.id = std::move(id);
  f.severity = severity;
  f.title = fmt::format("{}: {}", consumer.name, title);
  f.count = 1;
  f.advice = std::move(advice);
  f.file = file;
  SourcePosition at = consumer.position_of(field);
  f.line = at.line;
  f.column = at.column;
  f.subject = consumer.name;
  return f;
}

namespace {

// Adds a finding about one consumer's declaration, at the field it is about.
class FindingAdder {
public:
  FindingAdder(std::vector<Finding>& findings, const std::string& file) : m_findings(findings), m_file(file) {}
  void operator()(const ConsumerDeclaration& consumer, const std::string& field, std::string id, Severity severity,
                  std::string title, std::string advice) const {
    m_findings.push_back(
        consumer_finding(consumer, m_file, field, std::move(id), severity, std::move(title), std::move(advice)));
  }

private:
  std::vector<Finding>& m_findings;
  const std::string& m_file;
};

// The TTL the consumer's records keep: an inbox's cleanup retention, or the Redis TTL.
std::optional<Span> declared_ttl(const ConsumerDeclaration& consumer) {
  return consumer.placement == Placement::Postgres ? consumer.inbox_retention : consumer.ttl;
}

// A Kafka Streams store (placement = "kstreams"): its retention (ttl) against the topic's and against each
// seek the team declares, and a lookup by stream time, which a replay may never meet.
void check_window_store(const ConsumerDeclaration& consumer, const LiveFacts* facts, const FindingAdder& add) {
  std::optional<Span> retention = consumer.retention;
  if (facts && facts->retention) {
    retention = facts->retention;
  }
  bool key_value = consumer.layout.changelog.key_value;
  if (!key_value && !consumer.ttl) {
    add(consumer, "placement", "ttl-unknown", Severity::Info, "the store's retention is not declared",
        "Declare ttl = \"1h\", the window store's retentionPeriod (Stores.persistentWindowStore), so that it can "
        "be checked against the topic's retention and the seeks.");
  }
  if (!key_value && consumer.ttl && retention) {
    std::string label = fmt::format("window store's retention (ttl, {})", to_text(*consumer.ttl));
    if (auto f = ttl_vs_retention(label, *consumer.ttl, *retention, consumer.max_lag_ms, facts && facts->compacted)) {
      add(consumer, "ttl", std::move(f->id), f->severity, std::move(f->title),
          f->advice + " A window store keeps its records for its retention behind its stream time, whatever the "
                      "topic keeps: seek no further back than that, or audit the seek first (dedupctl audit "
                      "--store kstreams://… --seek …).");
    }
  }
  auto store_ms = consumer.ttl ? consumer.ttl->finite_ms() : std::nullopt;
  for (std::int64_t seek : consumer.seeks_ms) {
    if (!key_value && store_ms && seek > *store_ms) {
      add(consumer, "seeks", "seek-beyond-store-retention", Severity::Error,
          fmt::format("a seek of {} reaches past the window store's retention ({}): the events older than {} are "
                      "forwarded again",
                      format_duration(seek), format_duration(*store_ms), format_duration(*store_ms)),
          fmt::format("The store returns only records within {} of its stream time. Keep the store's retention at "
                      "{} or more, or audit the seek before making it (dedupctl audit --store kstreams://… --seek "
                      "-{}).",
                      format_duration(*store_ms), format_duration(seek), format_duration(seek)));
    }
  }
  if (consumer.lookup_stream_time) {
    add(consumer, "lookup_time", "stream-time-lookup", Severity::Warning,
        "the processor looks events up around the task's stream time, not their own timestamps",
        "An event replayed after stream time moved on is looked up at that later time, where its own record is not: "
        "a replay through the application's own commits (which carry the partition time) is never suppressed. A "
        "group reset (kafka-consumer-groups --reset-offsets) starts stream time again from the replayed records. "
        "Look up by the record's timestamp where the processor can.");
  }
}

// What the declaration says of itself: TTL against retention, the key template, the placement for
// the effects (the retention the broker gave, with --live, where it is known).
void check_declaration(const ConsumerDeclaration& consumer, const LiveFacts* facts, const FindingAdder& add) {
  if (consumer.layout.version_guard() && consumer.layout.projection.states) {
    add(consumer, "layout", "state-guard-declared", Severity::Info,
        "idempotent by a state-transition guard: no dedup record, so no TTL or key template to check here",
        "What the guard drops and what its projection lacks are in the log and the projection: run dedupctl audit "
        "--entity … --layout state-guard --layout-option transitions=FILE for the transition gaps, the projection "
        "and a seek's preview.");
    return;
  }
  if (consumer.layout.version_guard()) {
    // No record lapses and the key is the entity's by design: what a guard risks is in the log.
    add(consumer, "layout", "version-guard-declared", Severity::Info,
        "idempotent by a version guard: no dedup record, so no TTL or key template to check here",
        "What the guard drops and what its projection lacks are in the log: run dedupctl scan --entity … --version "
        "… for the dropped changes, and dedupctl audit --layout version-guard for the projection and a seek's "
        "preview.");
    return;
  }
  if (consumer.placement == Placement::Kstreams) {
    check_window_store(consumer, facts, add);
    return;
  }
  bool durable = consumer.placement == Placement::Redis || consumer.placement == Placement::Postgres;
  std::string ttl_field = consumer.placement == Placement::Postgres ? "inbox_retention" : "ttl";
  std::optional<Span> ttl = declared_ttl(consumer);
  // A ttl the layout gave (none was written) is named as the library's default, at the layout line.
  std::string ttl_label = ttl ? fmt::format("{} ({})", ttl_field, to_text(*ttl)) : ttl_field;
  if (consumer.ttl_from_layout && ttl) {
    ttl_label = fmt::format("ttl ({}: {}, as none is declared)", to_text(*ttl), consumer.layout.default_ttl_source);
    ttl_field = "layout";
  }
  std::optional<Span> retention = consumer.retention;
  if (facts && facts->retention) {
    retention = facts->retention;
  }
  std::string needed = ttl_needed(retention.value_or(Span::unknown()), consumer.max_lag_ms);
  if (durable && ttl && retention) {
    if (auto f = ttl_vs_retention(ttl_label, *ttl, *retention, consumer.max_lag_ms, facts && facts->compacted)) {
      add(consumer, ttl_field, std::move(f->id), f->severity, std::move(f->title), std::move(f->advice));
    }
  }
  if (durable && !retention) {
    add(consumer, "topic", "retention-unknown", Severity::Info,
        fmt::format("the retention of topic '{}' is not declared: the TTL could not be checked against it",
                    consumer.topic),
        "Declare retention = \"7d\" (the topic's retention.ms, or \"infinite\"), or run with --live.");
  }
  if (consumer.placement == Placement::Redis && !ttl) {
    add(consumer, "placement", "ttl-unknown", Severity::Info, "no ttl is declared",
        "Declare the TTL the consumer sets (ttl = \"8d\", or \"none\") so that it can be checked.");
  }
  if (consumer.placement == Placement::Redis && consumer.layout.never_expires) {
    std::string key = one_key_name(consumer);
    add(consumer, "layout", "no-expiry", Severity::Warning,
        fmt::format("dedup records never expire: layout {} keeps every id in the one key {}, which only grows",
                    consumer.layout.name, key),
        fmt::format("Every id ever seen stays in {} (unbounded growth: memory, and an eviction takes all the records "
                    "at once). Prune it on a schedule (ids older than the topic's retention), or keep the records as "
                    "keys with a TTL.",
                    key));
  } else if (consumer.placement == Placement::Redis && ttl && ttl->is_infinite()) {
    add(consumer, "ttl", "no-expiry", Severity::Warning, "dedup records never expire (ttl = \"none\")",
        "The keyspace grows without bound and, under memory pressure, evictions pick dedup keys. Set a TTL of " +
            needed + ".");
  }
  if (consumer.placement == Placement::Redis && !consumer.key_template.empty()) {
    try {
      auto tmpl = KeyTemplate::parse(consumer.key_template);
      if (!tmpl.uses(KeyTemplate::Part::EventId)) {
        add(consumer, "key_template", "key-template-lacks-event-id", Severity::Error,
            fmt::format("the key template '{}' has no {{event_id}}", consumer.key_template),
            "Keys built from a business id (an order id) make distinct events share one record: the consumer "
            "silently drops all but the first. Put {event_id} in the key.");
      }
      if (tmpl.uses(KeyTemplate::Part::Offset) || tmpl.uses(KeyTemplate::Part::Partition)) {
        add(consumer, "key_template", "key-template-uses-offset", Severity::Warning,
            fmt::format("the key template '{}' uses the partition or offset", consumer.key_template),
            "Offsets change when a topic is recreated or mirrored: the same event gets a new key. Use {event_id}.");
      }
    } catch (...) {
      // Reported as a declaration error already.
    }
  }
  if (consumer.placement == Placement::Memory && consumer.side_effects == SideEffect::External) {
    add(consumer, "placement", "memory-placement-for-external-effects", Severity::Error,
        "an in-memory window guards effects that customers see",
        "A restart, a rebalance or a replay forgets the window and repeats the effect. External side effects need "
        "a durable placement (a Redis key or an inbox row written with the effect) plus the external API's own "
        "idempotency key; keep an in-memory window for streams where a rare duplicate is acceptable.");
  }
}

// A DynamoDB table's TTL against the attribute the library writes its expiry to, and what reading it
// costs against the declaration's max_read_units.
void check_dynamodb(const ConsumerDeclaration& consumer, const LiveFacts& facts, const FindingAdder& add) {
  const std::string& status = *facts.dynamodb_ttl_status;
  const std::string& expiration = consumer.layout.json.expiration;
  if (status != "ENABLED" && status != "ENABLING") {
    add(consumer, "store", "dynamodb-ttl-disabled", Severity::Warning,
        fmt::format("the table's TTL is {}: DynamoDB never deletes the dedup records", status),
        fmt::format("The library still treats a record past its {} as expired, but the table grows without bound. "
                    "Enable TTL on the attribute {} (aws dynamodb update-time-to-live).",
                    expiration.empty() ? "expiry" : expiration, expiration.empty() ? "expiration" : expiration));
  } else if (!expiration.empty() && facts.dynamodb_ttl_attribute != expiration) {
    add(consumer, "store", "dynamodb-ttl-attribute", Severity::Error,
        fmt::format("the table's TTL deletes by the attribute {}, but {} writes its expiry to {}",
                    facts.dynamodb_ttl_attribute, consumer.layout.name, expiration),
        fmt::format("DynamoDB deletes items by another clock than the library's: records may go before their {} "
                    "(a duplicate applied) or never. Point the TTL at {}.",
                    expiration, expiration));
  }
  if (consumer.max_read_units && facts.dynamodb_size_bytes) {
    double units = scan_read_units(*facts.dynamodb_size_bytes);
    if (units > *consumer.max_read_units) {
      add(consumer, "max_read_units", "dynamodb-read-cost", Severity::Warning,
          fmt::format("reading the table costs about {:.0f} read units ({} items, {} bytes), more than max_read_units "
                      "= {:g}",
                      units, facts.dynamodb_items, *facts.dynamodb_size_bytes, *consumer.max_read_units),
          "A snapshot scans the whole table; an audit reads half a unit per event. Audit from a scan or an export "
          "(--store file:) or a narrower range, or raise max_read_units.");
    }
  }
}

// What the live systems say (check --live): Redis' eviction policy and persistence, sampled keys'
// TTLs, the inbox's unique constraint.
void check_live(const ConsumerDeclaration& consumer, const LiveFacts& live_facts, const FindingAdder& add) {
  const LiveFacts* facts = &live_facts;
  std::optional<Span> ttl = declared_ttl(consumer);
  auto on_master = [](const std::string& node) { return node.empty() ? "" : " on master " + node; };
  std::string on = on_master(facts->policy_node);
  if (facts->maxmemory_policy) {
    const std::string& policy = *facts->maxmemory_policy;
    if (policy.starts_with("allkeys-")) {
      add(consumer, "store", "eviction-policy-unsafe", Severity::Error,
          fmt::format("Redis maxmemory-policy is {}{}: dedup keys can be evicted under memory pressure", policy, on),
          "Use noeviction (writes fail loudly instead), or a Redis of its own for dedup keys.");
    } else if (policy.starts_with("volatile-")) {
      add(consumer, "store", "eviction-policy-unsafe", Severity::Warning,
          fmt::format("Redis maxmemory-policy is {}{}: keys with a TTL, dedup keys among them, can be evicted", policy,
                      on),
          "Use noeviction for the dedup keyspace, or size maxmemory so that it is never reached.");
    }
  }
  if (facts->persistence && !*facts->persistence) {
    add(consumer, "store", "persistence-off", Severity::Warning,
        fmt::format("Redis{} keeps no RDB snapshots and no AOF: a restart empties the dedup keyspace",
                    on_master(facts->persistence_node)),
        "Enable appendonly yes (or save points), or treat every restart as a loss of dedup state.");
  }
  if (consumer.layout.version_guard()) {
    return; // a projection's keys and rows are meant to stay, one an entity
  }
  if (facts->sampled_without_expiry && *facts->sampled_without_expiry > 0) {
    add(consumer, "key_template", "no-expiry", Severity::Warning,
        fmt::format("{} of {} sampled keys of the template have no TTL", *facts->sampled_without_expiry,
                    facts->sampled_keys.value_or(0)),
        "Records written without PX/EX never expire; check the consumer's SET call against the declared ttl.");
  }
  if (auto ttl_ms = ttl ? ttl->finite_ms() : std::nullopt;
      ttl_ms && facts->sampled_max_pttl_ms && *facts->sampled_max_pttl_ms > *ttl_ms + k_ms_per_second) {
    add(consumer, "ttl", "ttl-declaration-mismatch", Severity::Warning,
        fmt::format("sampled keys have up to {} left, more than the declared ttl ({})",
                    format_duration(*facts->sampled_max_pttl_ms), to_text(*ttl)),
        "The declaration does not describe what the consumer writes, so the other checks judged the wrong TTL. "
        "Declare the TTL of the consumer's SET call.");
  }
  if (facts->dynamodb_ttl_status) {
    check_dynamodb(consumer, *facts, add);
  }
  if (facts->inbox_unique && !*facts->inbox_unique) {
    auto f =
        inbox_without_unique_constraint(consumer.inbox_table, consumer.inbox_id_column, consumer.inbox_consumer_column);
    add(consumer, "inbox_table", std::move(f.id), f.severity, std::move(f.title), std::move(f.advice));
  }
}

// Two consumers writing one key space, or one inbox without a consumer column.
void check_shared(const std::vector<ConsumerDeclaration>& consumers, const FindingAdder& add) {
  for (std::size_t i = 0; i < consumers.size(); ++i) {
    for (std::size_t j = i + 1; j < consumers.size(); ++j) {
      const auto& a = consumers[i];
      const auto& b = consumers[j];
      if (a.placement != b.placement) {
        continue;
      }
      bool same_store = a.store.empty() || b.store.empty() || a.store == b.store;
      if (a.placement == Placement::Redis && same_store && !a.key_template.empty() && !b.key_template.empty()) {
        if (shares_keys(a, b) && one_key(b.layout)) {
          add(b, "collection", "namespace-shared", Severity::Error,
              fmt::format("keeps its records in {}, as consumer {} does", one_key_name(b), a.name),
              fmt::format("One consumer's record makes the other skip the event. Give each consumer a collection of "
                          "its own (collection = \"{}\").",
                          b.name));
        } else if (shares_keys(a, b)) {
          add(b, "key_template", "namespace-shared", Severity::Error,
              fmt::format("keys '{}' can collide with consumer {}'s '{}'", b.key_template, a.name, a.key_template),
              fmt::format("Each consumer must own its key space, or one consumer's record makes the other skip the "
                          "event. Prefix the keys with the consumer: \"dedup:{}:{{event_id}}\".",
                          b.name));
        }
      }
      if (a.placement == Placement::Postgres && same_store && a.inbox_table == b.inbox_table &&
          (a.inbox_consumer_column.empty() || b.inbox_consumer_column.empty())) {
        add(b, "inbox_table", "namespace-shared", Severity::Error,
            fmt::format("shares the inbox {} with consumer {} without a consumer column", b.inbox_table, a.name),
            "A row written by one consumer makes the other skip the event. Add a consumer column to the inbox and "
            "its unique constraint (consumer, event_id), or give each consumer its own table.");
      }
    }
  }
}

} // namespace

namespace {

// A tier whose records outlive the topic's retention: a durable store whose TTL is no shorter.
bool keeps_through_retention(const ConsumerDeclaration& tier, const std::map<std::string, LiveFacts>& live) {
  bool durable = tier.placement == Placement::Redis || tier.placement == Placement::Postgres;
  std::optional<Span> ttl = declared_ttl(tier);
  std::optional<Span> retention = tier.retention;
  const LiveFacts* facts = nullptr;
  if (auto it = live.find(tier.name); it != live.end()) {
    facts = &it->second;
    retention = facts->retention ? facts->retention : retention;
  }
  if (!durable || !ttl || !retention) {
    return false;
  }
  auto f = ttl_vs_retention("ttl", *ttl, *retention, tier.max_lag_ms, facts && facts->compacted);
  return !f || f->id != "ttl-shorter-than-retention";
}

// A chain of tiers: a tier's TTL shorter than the retention, or a window in memory, is no gap where
// another tier keeps the records through the retention: info, tier-gap-covered, naming that tier.
void covered_gaps(const std::vector<ConsumerDeclaration>& consumers, const std::map<std::string, LiveFacts>& live,
                  std::vector<Finding>& findings) {
  std::map<std::string, const ConsumerDeclaration*> keeper; // chain → the first tier that keeps its records
  for (const auto& tier : consumers) {
    if (tier.tier > 0 && !keeper.count(tier.chain) && keeps_through_retention(tier, live)) {
      keeper[tier.chain] = &tier;
    }
  }
  for (auto& finding : findings) {
    for (const auto& tier : consumers) {
      auto it = keeper.find(tier.chain);
      if (tier.tier == 0 || finding.subject != tier.name || it == keeper.end() || it->second == &tier ||
          (finding.id != "ttl-shorter-than-retention" && finding.id != "memory-placement-for-external-effects")) {
        continue;
      }
      finding.title = fmt::format("tier {}: {}; tier {} ({}) keeps the records through the retention", tier.tier,
                                  finding.title, it->second->tier, to_string(it->second->placement));
      finding.id = "tier-gap-covered";
      finding.severity = Severity::Info;
      finding.advice = "No event is applied again for it: the consumer asks the tiers in order, and the later one "
                       "still holds the record. " +
                       finding.advice;
    }
  }
}

} // namespace

std::vector<Finding> check_consumers(const std::vector<ConsumerDeclaration>& consumers, const std::string& file,
                                     const std::map<std::string, LiveFacts>& live) {
  std::vector<Finding> findings;
  FindingAdder add(findings, file);
  for (const auto& consumer : consumers) {
    const LiveFacts* facts = nullptr;
    if (auto it = live.find(consumer.name); it != live.end()) {
      facts = &it->second;
    }
    check_declaration(consumer, facts, add);
    if (facts) {
      check_live(consumer, *facts, add);
    }
  }
  check_shared(consumers, add);
  covered_gaps(consumers, live, findings);
  sort_findings(findings);
  return findings;
}

namespace {

int eviction_rank(const std::optional<std::string>& policy) {
  if (!policy) {
    return -1;
  }
  return policy->starts_with("allkeys-") ? 2 : policy->starts_with("volatile-") ? 1 : 0;
}

} // namespace

WorstRedisNode worst_redis_node(const std::vector<RedisNodeFacts>& nodes) {
  WorstRedisNode worst;
  for (const auto& node : nodes) {
    if (eviction_rank(node.maxmemory_policy) > eviction_rank(worst.maxmemory_policy)) {
      worst.maxmemory_policy = node.maxmemory_policy;
      worst.policy_node = node.node;
    }
    if (node.persistence && (!worst.persistence || (*worst.persistence && !*node.persistence))) {
      worst.persistence = node.persistence;
      worst.persistence_node = node.node;
    }
  }
  // Name a master only where it stands out: when every master says the same, none is worse.
  auto same = [&](auto field) {
    return std::all_of(nodes.begin(), nodes.end(),
                       [&](const RedisNodeFacts& n) { return n.*field == nodes.front().*field; });
  };
  if (nodes.empty() || same(&RedisNodeFacts::maxmemory_policy)) {
    worst.policy_node.clear();
  }
  if (nodes.empty() || same(&RedisNodeFacts::persistence)) {
    worst.persistence_node.clear();
  }
  return worst;
}

} // namespace dedupctl::core
