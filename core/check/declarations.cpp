#include "core/check/declarations.hpp"

#include "core/audit/retention.hpp"
#include "core/identity/key_template.hpp"
#include "core/store/inbox_schema.hpp"
#include "core/util/errors.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

namespace dedupctl::core {

std::string_view to_string(Placement placement) {
  switch (placement) {
  case Placement::Redis:
    return "redis";
  case Placement::Postgres:
    return "postgres";
  case Placement::Memory:
    return "memory";
  case Placement::Design:
    return "design";
  case Placement::Dynamodb:
    return "dynamodb";
  case Placement::Kstreams:
    return "kstreams";
  }
  return "redis";
}

SourcePosition ConsumerDeclaration::position_of(const std::string& field) const {
  auto it = fields.find(field);
  return it == fields.end() ? at : it->second;
}

namespace {

// The keys of a [[consumer.tier]]: its placement. A [[consumer]] takes them too, with its own.
const std::set<std::string, std::less<>> k_tier_keys{"placement",
                                                     "store",
                                                     "key_template",
                                                     "ttl",
                                                     "inbox_table",
                                                     "inbox_id_column",
                                                     "inbox_consumer_column",
                                                     "inbox_time_column",
                                                     "inbox_status_column",
                                                     "inbox_retention",
                                                     "layout",
                                                     "key_prefix",
                                                     "collection",
                                                     "max_read_units",
                                                     "lookup_window",
                                                     "lookup_time"};
const std::set<std::string, std::less<>> k_consumer_keys{"name",    "topic",        "group", "retention",
                                                         "max_lag", "side_effects", "tier",  "seeks"};

bool consumer_key(const std::string& name) { return k_consumer_keys.count(name) || k_tier_keys.count(name); }

SourcePosition position(const toml::source_region& region) {
  return SourcePosition{static_cast<int>(region.begin.line), static_cast<int>(region.begin.column)};
}

// Reads one [[consumer]] table, its errors (each at its position) into `errors`.
class ConsumerReader {
public:
  explicit ConsumerReader(std::vector<DeclarationError>& errors) : m_errors(errors) {}

  ConsumerDeclaration read(const toml::table& table) {
    ConsumerDeclaration consumer;
    m_placement_valid = false;
    consumer.at = position(table.source());
    for (auto&& [key, node] : table) {
      std::string name(key.str());
      consumer.fields[name] = position(key.source());
      if (!consumer_key(name)) {
        m_errors.push_back({position(key.source()),
                            fmt::format("unknown key '{}' in [[consumer]]; expected one of name, topic, group, "
                                        "placement, store, key_template, ttl, retention, max_lag, side_effects, "
                                        "inbox_table, inbox_id_column, inbox_consumer_column, inbox_time_column, "
                                        "inbox_status_column, inbox_retention, layout, key_prefix, collection, "
                                        "max_read_units, lookup_window, lookup_time, seeks, tier",
                                        name)});
        continue;
      }
      if (name == "tier") {
        read_tiers(node, consumer);
        continue;
      }
      if (!read_text_field(name, node, consumer)) {
        read_typed_field(name, node, consumer);
      }
    }
    return consumer;
  }

  // The fields every consumer needs, named where they are missing.
  void check_required(const ConsumerDeclaration& consumer, std::set<std::string>& names) {
    auto missing = [&](const char* field, const char* why) {
      m_errors.push_back(
          {consumer.at, fmt::format("consumer{} has no '{}' ({})",
                                    consumer.name.empty() ? "" : " '" + consumer.name + "'", field, why)});
    };
    if (!consumer.fields.count("name")) {
      missing("name", "every consumer is named");
    } else if (!consumer.name.empty() && !names.insert(consumer.name).second) {
      m_errors.push_back({consumer.position_of("name"), fmt::format("consumer '{}' is declared twice", consumer.name)});
    }
    if (!consumer.fields.count("topic")) {
      missing("topic", "the topic it consumes");
    }
    if (!consumer.fields.count("placement") && consumer.tiers == 0) {
      missing("placement", "redis, postgres, dynamodb, kstreams, memory or design");
    }
    if (m_placement_valid && consumer.placement == Placement::Redis && !consumer.fields.count("key_template") &&
        !consumer.fields.count("layout")) {
      missing("key_template", "a Redis placement keys each event, e.g. \"dedup:billing:{event_id}\"");
    }
  }

  // Each [[consumer.tier]] of the last consumer read, as read (the consumer's fields are filled in
  // by parse_declarations).
  std::vector<ConsumerDeclaration> take_tiers() { return std::exchange(m_tiers, {}); }

private:
  // [[consumer.tier]]: an array of tables, each read as a consumer of its placement keys alone.
  void read_tiers(const toml::node& node, ConsumerDeclaration& consumer) {
    const toml::array* array = node.as_array();
    if (!array || !array->is_array_of_tables()) {
      error(node, "'tier' must be an array of tables: write [[consumer.tier]] after its [[consumer]]");
      return;
    }
    bool outer_valid = m_placement_valid;
    for (const toml::node& element : *array) {
      const toml::table& table = *element.as_table();
      ConsumerDeclaration tier;
      m_placement_valid = false;
      tier.at = position(table.source());
      for (auto&& [key, value] : table) {
        std::string name(key.str());
        tier.fields[name] = position(key.source());
        if (!k_tier_keys.count(name)) {
          error(value, k_consumer_keys.count(name)
                           ? fmt::format("'{}' is the consumer's: write it in its [[consumer]], not "
                                         "in a [[consumer.tier]]",
                                         name)
                           : fmt::format("unknown key '{}' in [[consumer.tier]]", name));
        } else if (!read_text_field(name, value, tier)) {
          read_typed_field(name, value, tier);
        }
      }
      if (!tier.fields.count("placement")) {
        error(element, "a [[consumer.tier]] has no 'placement' (redis, postgres, dynamodb, memory or design)");
      } else if (m_placement_valid && tier.placement == Placement::Redis && !tier.fields.count("key_template") &&
                 !tier.fields.count("layout")) {
        error(element, "a Redis tier has no 'key_template' (e.g. \"dedup:billing:{event_id}\")");
      }
      m_tiers.push_back(std::move(tier));
    }
    consumer.tiers = static_cast<int>(m_tiers.size());
    m_placement_valid = outer_valid;
  }

  void error(const toml::node& node, std::string message) {
    m_errors.push_back({position(node.source()), std::move(message)});
  }

  bool string_of(const std::string& name, const toml::node& node, std::string& target) {
    if (auto value = node.value<std::string>()) {
      target = *value;
      return true;
    }
    error(node, fmt::format("'{}' must be a string", name));
    return false;
  }

  template <typename Parse>
  std::optional<Span> duration_of(const std::string& name, const toml::node& node, Parse parse) {
    std::string text_value;
    if (!string_of(name, node, text_value)) {
      return std::nullopt;
    }
    try {
      return parse(text_value);
    } catch (const UsageError&) {
      error(node, fmt::format("'{}' is \"{}\": expected a duration such as \"90s\", \"15m\", \"6h\", \"7d\", "
                              "\"1d12h\" or \"PT6H\"{}",
                              name, text_value,
                              name == "retention" ? ", or \"infinite\""
                              : name == "max_lag" ? ""
                                                  : ", or \"none\""));
      return std::nullopt;
    }
  }

  // The fields whose value is any string; false for the others.
  bool read_text_field(const std::string& name, const toml::node& node, ConsumerDeclaration& consumer) {
    static const std::map<std::string, std::string ConsumerDeclaration::*, std::less<>> k_text{
        {"name", &ConsumerDeclaration::name},
        {"topic", &ConsumerDeclaration::topic},
        {"group", &ConsumerDeclaration::group},
        {"store", &ConsumerDeclaration::store},
        {"inbox_table", &ConsumerDeclaration::inbox_table},
        {"inbox_id_column", &ConsumerDeclaration::inbox_id_column},
        {"inbox_consumer_column", &ConsumerDeclaration::inbox_consumer_column},
        {"inbox_time_column", &ConsumerDeclaration::inbox_time_column},
        {"inbox_status_column", &ConsumerDeclaration::inbox_status_column},
        {"key_prefix", &ConsumerDeclaration::key_prefix},
        {"collection", &ConsumerDeclaration::collection}};
    auto field = k_text.find(name);
    if (field == k_text.end()) {
      return false;
    }
    string_of(name, node, consumer.*(field->second));
    return true;
  }

  // The fields whose string is parsed: a key template, a placement, durations, a side-effect class.
  void read_typed_field(const std::string& name, const toml::node& node, ConsumerDeclaration& consumer) {
    if (name == "key_template") {
      if (string_of(name, node, consumer.key_template)) {
        try {
          KeyTemplate::parse(consumer.key_template);
        } catch (const UsageError& e) {
          error(node, e.what());
        }
      }
    } else if (name == "placement") {
      read_placement(node, consumer);
    } else if (name == "layout") {
      std::string value;
      if (string_of(name, node, value)) {
        try {
          consumer.layout = find_layout(value);
        } catch (const UsageError& e) {
          error(node, fmt::format("'layout' is '{}': {}", value, e.what()));
        }
      }
    } else if (name == "ttl") {
      consumer.ttl = duration_of(name, node, [](const std::string& t) { return parse_ttl(t); });
    } else if (name == "retention") {
      consumer.retention = duration_of(name, node, [](const std::string& t) { return parse_retention(t); });
    } else if (name == "inbox_retention") {
      consumer.inbox_retention = duration_of(name, node, [](const std::string& t) { return parse_ttl(t); });
    } else if (name == "max_lag") {
      if (auto span = duration_of(name, node,
                                  [](const std::string& t) { return Span::finite(parse_duration(t, "max_lag")); })) {
        consumer.max_lag_ms = span->finite_ms().value_or(0);
      }
    } else if (name == "lookup_window") {
      if (auto span = duration_of(
              name, node, [](const std::string& t) { return Span::finite(parse_duration(t, "lookup_window")); })) {
        consumer.lookup_window_ms = span->finite_ms();
      }
    } else if (name == "lookup_time") {
      std::string value;
      if (string_of(name, node, value)) {
        if (value != "record" && value != "stream") {
          error(node, fmt::format("'lookup_time' is '{}'; expected record or stream (the processor's fetch around "
                                  "the record's timestamp or the task's stream time)",
                                  value));
        }
        consumer.lookup_stream_time = value == "stream";
      }
    } else if (name == "seeks") {
      read_seeks(node, consumer);
    } else if (name == "max_read_units") {
      auto units = node.value<double>();
      if (!units || *units <= 0) {
        error(node, "'max_read_units' must be a positive number (read units, as DynamoDB counts them)");
      } else {
        consumer.max_read_units = *units;
      }
    } else if (name == "side_effects") {
      std::string value;
      if (string_of(name, node, value)) {
        try {
          consumer.side_effects = parse_side_effect("x=" + value).second;
        } catch (const UsageError&) {
          error(node, fmt::format("'side_effects' is '{}'; expected external, internal or idempotent", value));
        }
      }
    }
  }

  // seeks = ["30m", "6h"]: how far back the team seeks, each a duration.
  void read_seeks(const toml::node& node, ConsumerDeclaration& consumer) {
    const toml::array* array = node.as_array();
    if (!array) {
      error(node, "'seeks' is a list of durations, how far back each seek reaches: seeks = [\"30m\", \"6h\"]");
      return;
    }
    for (const auto& item : *array) {
      auto text = item.value<std::string>();
      std::int64_t ms = 0;
      try {
        ms = text ? parse_duration(*text, "seeks") : -1;
      } catch (const UsageError&) {
        ms = -1;
      }
      if (ms <= 0) {
        error(item, "'seeks' holds durations such as \"30m\" or \"6h\": how far back each seek reaches");
        continue;
      }
      consumer.seeks_ms.push_back(ms);
    }
  }

  void read_placement(const toml::node& node, ConsumerDeclaration& consumer) {
    std::string value;
    if (!string_of("placement", node, value)) {
      return;
    }
    static const std::map<std::string, Placement, std::less<>> k_placements{
        {"redis", Placement::Redis},   {"postgres", Placement::Postgres}, {"memory", Placement::Memory},
        {"design", Placement::Design}, {"dynamodb", Placement::Dynamodb}, {"kstreams", Placement::Kstreams}};
    auto found = k_placements.find(value);
    m_placement_valid = found != k_placements.end();
    if (m_placement_valid) {
      consumer.placement = found->second;
    } else {
      error(node,
            fmt::format("'placement' is '{}'; expected redis, postgres, dynamodb, kstreams, memory or design", value));
    }
  }

  std::vector<DeclarationError>& m_errors;
  bool m_placement_valid = false;
  std::vector<ConsumerDeclaration> m_tiers;
};

// A Kafka Streams store's layout: the guides' window store unless one is written, and a Kafka Streams
// layout only on placement = "kstreams".
template <typename Error> void apply_changelog_layout(ConsumerDeclaration& consumer, const Error& error) {
  const RecordLayout& layout = consumer.layout;
  if (consumer.placement != Placement::Kstreams) {
    error("layout", fmt::format("layout '{}' is a Kafka Streams store: write placement = \"kstreams\"", layout.name));
  } else if (layout.home == LayoutHome::Any && !consumer.fields.count("layout")) {
    consumer.layout = find_layout("kstreams-window"); // the guides' window store
  } else if (layout.home != LayoutHome::Changelog) {
    error("layout", fmt::format("layout '{}' on kstreams: write layout = \"kstreams-window\" (the default) or "
                                "\"kstreams-kv\"",
                                layout.name));
  }
}

// What a layout gives that the declaration did not write (the key template, an inbox's table and
// columns, the library's TTL), and the errors of a layout that does not fit the declaration. A
// layout that could not be read is left plain (its error is reported).
void apply_layout(ConsumerDeclaration& consumer, std::vector<DeclarationError>& errors) {
  const RecordLayout& layout = consumer.layout;
  auto error = [&](const std::string& field, std::string message) {
    errors.push_back({consumer.position_of(field), std::move(message)});
  };
  if (consumer.placement == Placement::Kstreams || layout.home == LayoutHome::Changelog) {
    apply_changelog_layout(consumer, error);
    return;
  }
  if (layout.home == LayoutHome::Any) {
    for (const char* field : {"key_prefix", "collection"}) {
      if (consumer.fields.count(field)) {
        error(field, fmt::format("'{}' goes with a layout: write layout = \"…\" ({})", field, layout_names_text()));
      }
    }
    return;
  }
  if (layout.version_guard()) { // no dedup record: the projection's table or key per entity
    if (consumer.placement == Placement::Postgres && consumer.inbox_table.empty()) {
      error("layout", fmt::format("layout '{}' on postgres reads the projection's table: write inbox_table = "
                                  "\"orders\"",
                                  layout.name));
    } else if (consumer.placement != Placement::Postgres && consumer.placement != Placement::Redis) {
      error("layout", fmt::format("layout '{}' reads the handler's projection: write placement = \"postgres\" (with "
                                  "inbox_table) or \"redis\" (with key_template = \"order:{{entity}}\")",
                                  layout.name));
    } else if (consumer.key_template.empty()) {
      consumer.key_template = layout.key_template; // {entity}
    }
    return;
  }
  if (layout.inbox() != (consumer.placement == Placement::Postgres)) {
    error("layout",
          layout.inbox()
              ? fmt::format("layout '{}' is an inbox layout: write placement = \"postgres\"", layout.name)
              : fmt::format("layout '{}' keeps its records in Redis: write placement = \"redis\"", layout.name));
    return;
  }
  if (layout.inbox()) {
    const InboxSchema& schema = layout.inbox_schema;
    for (auto [field, member] :
         {std::pair{"inbox_table", &InboxSchema::table}, std::pair{"inbox_id_column", &InboxSchema::id_column},
          std::pair{"inbox_consumer_column", &InboxSchema::consumer_column},
          std::pair{"inbox_time_column", &InboxSchema::time_column},
          std::pair{"inbox_status_column", &InboxSchema::status_column}}) {
      static const std::map<std::string_view, std::string ConsumerDeclaration::*> k_fields{
          {"inbox_table", &ConsumerDeclaration::inbox_table},
          {"inbox_id_column", &ConsumerDeclaration::inbox_id_column},
          {"inbox_consumer_column", &ConsumerDeclaration::inbox_consumer_column},
          {"inbox_time_column", &ConsumerDeclaration::inbox_time_column},
          {"inbox_status_column", &ConsumerDeclaration::inbox_status_column}};
      if (!consumer.fields.count(field)) {
        consumer.*(k_fields.at(field)) = schema.*member;
      }
    }
    if (consumer.inbox_table.empty()) {
      error("layout", fmt::format("layout '{}' has no table name of its own (the library names it after the endpoint): "
                                  "write inbox_table = \"<endpoint>_OutboxData\"",
                                  layout.name));
    }
    return;
  }
  bool prefixed = layout.key_template.find("{prefix}") != std::string::npos;
  if (!prefixed && consumer.fields.count("key_prefix")) {
    error("key_prefix", fmt::format("layout '{}' derives its keys as {}, without a prefix: leave key_prefix out",
                                    layout.name, layout.key_template));
  }
  if (one_key(layout) && consumer.collection.empty() && layout.collection.empty()) {
    error("layout",
          fmt::format("layout '{}' keeps every record under one key: name it with collection = \"…\"", layout.name));
  } else if (!one_key(layout) && consumer.fields.count("collection")) {
    error("collection", fmt::format("layout '{}' keeps a key per id; collection is for spring-hash, camel-set and zset",
                                    layout.name));
  }
  if (consumer.key_template.empty()) {
    const std::string& prefix = consumer.key_prefix;
    if (prefixed && prefix.empty()) {
      error("layout", fmt::format("layout '{}' derives its keys as {}: write key_prefix = \"…\" (or a whole "
                                  "key_template)",
                                  layout.name, layout.key_template));
    } else {
      consumer.key_template = layout_key_template(layout, prefix, "");
    }
  }
  if (layout.never_expires) {
    if (consumer.ttl && !consumer.ttl->is_infinite()) {
      error("ttl", fmt::format("'ttl' is \"{}\", but layout '{}' writes records that never expire (every id stays in "
                               "the one key {}): write ttl = \"none\" or leave it out",
                               to_text(*consumer.ttl), layout.name,
                               consumer.collection.empty() ? layout.collection : consumer.collection));
    }
    consumer.ttl = Span::infinite();
  } else if (!consumer.ttl && layout.default_ttl_ms > 0) {
    consumer.ttl = Span::finite(layout.default_ttl_ms);
    consumer.ttl_from_layout = true;
  }
}

// The inbox defaults of dedupctl-audit(1); an inbox_consumer_column of "" declares that there is none.
void apply_inbox_defaults(ConsumerDeclaration& consumer) {
  const InboxSchema defaults;
  if (consumer.inbox_table.empty()) {
    consumer.inbox_table = defaults.table;
  }
  if (consumer.inbox_id_column.empty()) {
    consumer.inbox_id_column = defaults.id_column;
  }
  if (!consumer.fields.count("inbox_consumer_column")) {
    consumer.inbox_consumer_column = defaults.consumer_column;
  }
  if (consumer.inbox_time_column.empty()) {
    consumer.inbox_time_column = defaults.time_column;
  }
}

} // namespace

namespace {

// A chain's tiers as declarations of their own, with the consumer's fields; its placement is theirs.
void add_tiers(const ConsumerDeclaration& consumer, std::vector<ConsumerDeclaration> tiers, Declarations& out) {
  for (const char* field : {"placement", "store", "key_template", "ttl", "inbox_retention", "layout"}) {
    if (consumer.fields.count(field)) {
      out.errors.push_back({consumer.position_of(field),
                            fmt::format("'{}' with [[consumer.tier]]: each tier has its own placement; write it in "
                                        "the tier",
                                        field)});
    }
  }
  for (std::size_t k = 0; k < tiers.size(); ++k) {
    ConsumerDeclaration tier = std::move(tiers[k]);
    tier.chain = consumer.name;
    tier.tier = static_cast<int>(k + 1);
    tier.tiers = static_cast<int>(tiers.size());
    tier.name = fmt::format("{} (tier {})", consumer.name, k + 1);
    tier.topic = consumer.topic;
    tier.group = consumer.group;
    tier.retention = consumer.retention;
    tier.max_lag_ms = consumer.max_lag_ms;
    tier.side_effects = consumer.side_effects;
    for (const char* field : {"name", "topic", "group", "retention", "max_lag", "side_effects"}) {
      if (consumer.fields.count(field)) {
        tier.fields.emplace(field, consumer.position_of(field));
      }
    }
    apply_layout(tier, out.errors);
    if (!tier.layout.inbox()) {
      apply_inbox_defaults(tier);
    }
    out.consumers.push_back(std::move(tier));
  }
}

} // namespace

Declarations parse_declarations(std::string_view text, std::string_view path) {
  Declarations out;
  toml::table root;
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    out.errors.push_back({position(e.source()), std::string(e.description())});
    return out;
  }
  for (auto&& [key, node] : root) {
    if (key.str() != "consumer") {
      out.errors.push_back(
          {position(key.source()),
           fmt::format("unknown top-level key '{}'; declare consumers as [[consumer]] tables", key.str())});
    }
  }
  const toml::node* consumers = root.get("consumer");
  if (!consumers) {
    out.errors.push_back({SourcePosition{1, 1}, "no [[consumer]] declared"});
    return out;
  }
  const toml::array* array = consumers->as_array();
  if (!array) {
    out.errors.push_back({position(consumers->source()), "'consumer' must be an array of tables: write [[consumer]]"});
    return out;
  }
  std::set<std::string> names;
  ConsumerReader reader(out.errors);
  for (const toml::node& element : *array) {
    const toml::table* table = element.as_table();
    if (!table) {
      out.errors.push_back({position(element.source()), "each consumer must be a table: write [[consumer]]"});
      continue;
    }
    ConsumerDeclaration consumer = reader.read(*table);
    reader.check_required(consumer, names);
    std::vector<ConsumerDeclaration> tiers = reader.take_tiers();
    if (!tiers.empty()) {
      add_tiers(consumer, std::move(tiers), out);
      continue;
    }
    apply_layout(consumer, out.errors);
    if (!consumer.layout.inbox()) {
      apply_inbox_defaults(consumer);
    }
    out.consumers.push_back(std::move(consumer));
  }
  std::stable_sort(out.errors.begin(), out.errors.end(), [](const DeclarationError& a, const DeclarationError& b) {
    return a.at.line != b.at.line ? a.at.line < b.at.line : a.at.column < b.at.column;
  });
  return out;
}

} // namespace dedupctl::core
