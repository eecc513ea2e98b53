#include "core/store/layout.hpp"

#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"
#include "core/util/json_text.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <optional>

namespace dedupctl::core {

namespace {

RecordLayout plain() { return RecordLayout{}; }

// Powertools for AWS Lambda's Redis persistence layer: SET key <json> EX ttl NX, the JSON holding
// status, expiration (epoch s) and, inside Lambda, in_progress_expiration (epoch ms); a record past
// its expiration or a claim past its lease is taken over (after SET KEY:lock NX) and applied again.
RecordLayout powertools(std::string name, std::string key_template, std::string library) {
  RecordLayout layout;
  layout.name = std::move(name);
  layout.library = std::move(library);
  layout.value = RecordValue::Json;
  layout.key_template = std::move(key_template);
  layout.needs_prefix = true;
  layout.not_a_record_suffix = ":lock";
  layout.orphans_reapplied = true;
  layout.default_ttl_ms = 3'600'000; // expires_after_seconds=60 * 60, in both
  layout.default_ttl_source = "Powertools' default expires_after_seconds";
  return layout;
}

RecordLayout generic_json() {
  RecordLayout layout = powertools("json", "{event_id}", "any library that keeps a JSON status (--layout-option)");
  layout.needs_prefix = false;
  layout.not_a_record_suffix.clear();
  layout.default_ttl_ms = 0;
  layout.default_ttl_source.clear();
  return layout;
}

RecordLayout one_key(std::string name, RecordShape shape, RecordValue value, std::string collection,
                     std::string library) {
  RecordLayout layout;
  layout.name = std::move(name);
  layout.library = std::move(library);
  layout.shape = shape;
  layout.value = value;
  layout.collection = std::move(collection);
  return layout;
}

RecordLayout inbox(std::string name, std::string library, InboxSchema schema) {
  RecordLayout layout;
  layout.name = std::move(name);
  layout.library = std::move(library);
  layout.inbox = true;
  layout.inbox_schema = std::move(schema);
  return layout;
}

InboxSchema table(std::string name, std::string id, std::string consumer, std::string time, std::string status,
                  InboxSchema::Time kind = InboxSchema::Time::Timestamp) {
  InboxSchema schema;
  schema.table = std::move(name);
  schema.id_column = std::move(id);
  schema.consumer_column = std::move(consumer);
  schema.time_column = std::move(time);
  schema.status_column = std::move(status);
  schema.time = kind;
  return schema;
}

// The inbox tables of the libraries, from their published DDL (PostgreSQL folds unquoted names to
// lower case; the .NET libraries quote theirs).
std::vector<RecordLayout> inbox_layouts() {
  using Time = InboxSchema::Time;
  std::vector<RecordLayout> out;
  // Eventuate Tram creates its tables in the schema `eventuate` (EventuateSchema's default): not on
  // the search path, so the layout names it; --inbox-table names another (eventuate.database.schema).
  out.push_back(
      inbox("eventuate", "Eventuate Tram's eventuate.received_messages (creation_time in epoch ms)",
            table("eventuate.received_messages", "message_id", "consumer_id", "creation_time", "", Time::EpochMs)));
  out.push_back(inbox("camel-jdbc", "Camel's JdbcMessageIdRepository (CAMEL_MESSAGEPROCESSED)",
                      table("camel_messageprocessed", "messageid", "processorname", "createdat", "")));
  RecordLayout spring =
      inbox("spring-jdbc", "Spring Integration's JdbcMetadataStore (INT_METADATA_STORE, the time in ms as text)",
            table("int_metadata_store", "metadata_key", "region", "metadata_value", "", Time::TextMs));
  spring.default_consumer = "DEFAULT";
  out.push_back(spring);
  InboxSchema masstransit = table("\"InboxState\"", "MessageId", "ConsumerId", "Received", "");
  masstransit.in_progress_column = "Consumed";
  out.push_back(inbox("masstransit",
                      "MassTransit's transactional inbox (InboxState: Consumed is NULL while in progress)",
                      masstransit));
  RecordLayout wolverine = inbox(
      "wolverine", "Wolverine's durable inbox (wolverine_incoming_envelopes: Incoming, then Handled until keep_until)",
      table("wolverine_incoming_envelopes", "id", "", "keep_until", "status", Time::Expiry));
  wolverine.in_progress_statuses = {"Incoming"};
  out.push_back(wolverine);
  InboxSchema nservicebus = table("", "MessageId", "", "DispatchedAt", "");
  nservicebus.in_progress_column = "Dispatched";
  nservicebus.in_progress_when = InboxSchema::InProgressWhen::False;
  out.push_back(inbox("nservicebus",
                      "NServiceBus's SQL outbox (<endpoint>_OutboxData: Dispatched false while in progress; give "
                      "--inbox-table)",
                      nservicebus));
  return out;
}

std::vector<RecordLayout> all_layouts() {
  std::vector<RecordLayout> layouts;
  layouts.push_back(plain());
  layouts.back().library = "a string key per id, any value; claim markers while in progress";
  layouts.push_back(powertools("powertools-python", "{prefix}#{event_id|json-ascii|md5}",
                               "Powertools for AWS Lambda (Python), RedisCachePersistenceLayer"));
  RecordLayout typescript = powertools("powertools-typescript", "{prefix}#{event_id|json|md5|base64}",
                                       "Powertools for AWS Lambda (TypeScript), CachePersistenceLayer");
  typescript.json.whole_seconds = false;      // Date.now() / 1000 > expiration
  typescript.json.no_lease_taken_over = true; // an INPROGRESS record without one is an orphan
  layouts.push_back(typescript);
  // Java's generateHash digests a text node's text, not its JSON: no quotes.
  RecordLayout java = powertools("powertools-java", "{prefix}#{event_id|md5}",
                                 "Powertools for AWS Lambda (Java), DynamoDBPersistenceStore");
  java.dynamodb_only = true;
  java.not_a_record_suffix.clear();
  layouts.push_back(java);
  layouts.push_back(generic_json());
  layouts.push_back(one_key("spring-hash", RecordShape::HashField, RecordValue::TimeMs, "MetaData",
                            "Spring Integration's RedisMetadataStore (HSETNX, the time in ms)"));
  layouts.back().never_expires = true;
  RecordLayout camel_set = one_key("camel-set", RecordShape::SetMember, RecordValue::Membership, "",
                                   "Camel's SpringRedisIdempotentRepository (SADD, Java-serialized)");
  camel_set.key_template = "{event_id|java}";
  camel_set.java_collection = true;
  camel_set.never_expires = true;
  layouts.push_back(camel_set);
  RecordLayout camel_string;
  camel_string.name = "camel-string";
  camel_string.library =
      "Camel's SpringRedisStringIdempotentRepository (<repository>:<id>, Java-serialized as a RedisTemplate writes it)";
  camel_string.java_key = true;
  camel_string.key_template = "{prefix}:{event_id}";
  camel_string.needs_prefix = true;
  layouts.push_back(camel_string);
  layouts.push_back(one_key("zset", RecordShape::ScoredMember, RecordValue::ExpirySeconds, "",
                            "one sorted set, the score the expiry in epoch seconds"));
  for (auto& layout : inbox_layouts()) {
    layouts.push_back(std::move(layout));
  }
  return layouts;
}

} // namespace

std::string layout_names_text() {
  std::string out;
  for (auto name : layout_names()) {
    out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

namespace {

bool one_of(std::string_view value, const std::vector<std::string>& values) {
  return std::find(values.begin(), values.end(), value) != values.end();
}

simdjson::dom::parser& json_parser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

// The value's top-level object, or nullopt when it is not one.
std::optional<simdjson::dom::object> json_object(std::string_view value) {
  auto parsed = json_parser().parse(value.data(), value.size(), true);
  if (parsed.error()) {
    return std::nullopt;
  }
  auto object = parsed.value_unsafe().get_object();
  if (object.error()) {
    return std::nullopt;
  }
  return object.value_unsafe();
}

// A number field's whole value (a number, or one written as text); nullopt for null or another type.
std::optional<std::int64_t> whole_number(simdjson::ondemand::value value) {
  simdjson::ondemand::json_type type{};
  if (value.type().get(type)) {
    return std::nullopt;
  }
  if (type == simdjson::ondemand::json_type::string) {
    std::string_view text;
    std::int64_t n = 0;
    return !value.get_string().get(text) && parse_whole(text, n) ? std::optional(n) : std::nullopt;
  }
  simdjson::ondemand::number number;
  if (type != simdjson::ondemand::json_type::number || value.get_number().get(number)) {
    return std::nullopt;
  }
  if (number.is_int64()) {
    return number.get_int64();
  }
  if (number.is_uint64()) {
    return static_cast<std::int64_t>(std::min<std::uint64_t>(number.get_uint64(), INT64_MAX));
  }
  double d = number.get_double();
  return std::isfinite(d) ? std::optional(static_cast<std::int64_t>(std::floor(d))) : std::nullopt;
}

// Whether a value the record's state does not read is well-formed JSON all the same, as the
// library's parser requires: its atoms checked, its strings skipped unread (simdjson's first
// stage checked their quotes and UTF-8; an escape inside one is not looked at).
bool well_formed(simdjson::ondemand::value value, int depth = 0) {
  simdjson::ondemand::json_type type{};
  if (value.type().get(type) || depth > 64) {
    return false;
  }
  switch (type) {
  case simdjson::ondemand::json_type::object: {
    simdjson::ondemand::object object;
    if (value.get_object().get(object)) {
      return false;
    }
    for (auto field : object) {
      simdjson::ondemand::value item;
      if (field.error() || field.value().get(item) || !well_formed(item, depth + 1)) {
        return false;
      }
    }
    return true;
  }
  case simdjson::ondemand::json_type::array: {
    simdjson::ondemand::array array;
    if (value.get_array().get(array)) {
      return false;
    }
    for (auto element : array) {
      simdjson::ondemand::value item;
      if (element.get(item) || !well_formed(item, depth + 1)) {
        return false;
      }
    }
    return true;
  }
  case simdjson::ondemand::json_type::string: {
    simdjson::ondemand::raw_json_string raw;
    return !value.get_raw_json_string().get(raw);
  }
  case simdjson::ondemand::json_type::number: {
    simdjson::ondemand::number number;
    return !value.get_number().get(number);
  }
  case simdjson::ondemand::json_type::boolean: {
    bool b = false;
    return !value.get_bool().get(b);
  }
  case simdjson::ondemand::json_type::null: {
    bool null = false;
    return !value.is_null().get(null) && null;
  }
  }
  return false;
}

// The fields a JSON record's state is read from, as the library reads them (a repeated name: its
// last value, as json.loads and JSON.parse keep). On-Demand: the other fields (Powertools' `data`,
// a kilobyte of the handler's response) are skipped, not unescaped. False when the value is not
// one JSON object or its status is not a string.
struct JsonState {
  std::optional<std::string> status;
  std::optional<std::int64_t> expiration;
  std::optional<std::int64_t> in_progress_expiration;
};

static_assert(k_record_padding >= simdjson::SIMDJSON_PADDING);

bool read_json_state(const JsonRecordFields& fields, std::string_view value, std::size_t spare, JsonState& out) {
  thread_local simdjson::ondemand::parser parser;
  thread_local std::string padded;
  std::string_view text = value;
  if (spare < simdjson::SIMDJSON_PADDING) {
    padded.reserve(value.size() + simdjson::SIMDJSON_PADDING);
    padded.assign(value);
    text = padded;
    spare = padded.capacity() - padded.size();
  }
  simdjson::ondemand::document doc;
  simdjson::ondemand::object object;
  if (parser.iterate(text.data(), text.size(), text.size() + spare).get(doc) || doc.get_object().get(object)) {
    return false;
  }
  for (auto field : object) {
    std::string_view key;
    simdjson::ondemand::value item;
    if (field.unescaped_key().get(key) || field.value().get(item)) {
      return false;
    }
    if (key == fields.status) {
      std::string_view status;
      if (item.get_string().get(status)) {
        return false;
      }
      out.status = std::string(status);
    } else if (!fields.expiration.empty() && key == fields.expiration) {
      out.expiration = whole_number(item);
    } else if (!fields.in_progress_expiration.empty() && key == fields.in_progress_expiration) {
      out.in_progress_expiration = whole_number(item);
    } else if (!well_formed(item)) {
      return false;
    }
  }
  const char* after = nullptr;
  bool trailing = !doc.current_location().get(after); // a location past the object: more than one value
  return !trailing && out.status.has_value();
}

void read_json(const JsonRecordFields& fields, std::string_view value, std::size_t spare, RecordState& state) {
  JsonState json;
  if (!read_json_state(fields, value, spare, json)) {
    state.unreadable = true;
    return;
  }
  auto ms = [](std::optional<std::int64_t> n, bool in_ms) { return n && !in_ms ? std::optional(*n * 1000) : n; };
  state.claim = one_of(*json.status, fields.in_progress);
  if (auto expiration = ms(json.expiration, fields.expiration_ms)) {
    // Expired when now > expiration: in whole seconds from the second after it on, in milliseconds
    // from the millisecond after.
    state.expires_at_ms = *expiration + (fields.whole_seconds && !fields.expiration_ms ? 1000 : 1);
  }
  if (state.claim) {
    state.claim_until_ms = ms(json.in_progress_expiration, fields.in_progress_expiration_ms);
    if (!state.claim_until_ms && fields.no_lease_taken_over) {
      state.claim_until_ms = INT64_MIN; // lapsed already
    }
  } else if (!one_of(*json.status, fields.completed)) {
    state.unreadable = true; // neither in progress nor completed: the library takes it over
  }
}

std::string scalar_text(simdjson::dom::element element) {
  if (auto s = element.get_string(); !s.error()) {
    return std::string(s.value_unsafe());
  }
  return simdjson::minify(element);
}

bool parse_unit(std::string_view text, std::string_view option, bool& in_ms) {
  if (text == "s" || text == "ms") {
    in_ms = text == "ms";
    return true;
  }
  throw UsageError(fmt::format("--layout-option {}: the unit is s or ms, not '{}'", option, text));
}

} // namespace

std::vector<std::string_view> layout_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& layout : all_layouts()) {
      out.push_back(layout.name);
    }
    return out;
  }();
  return {names.begin(), names.end()};
}

RecordLayout find_layout(std::string_view name) {
  for (auto& layout : all_layouts()) {
    if (layout.name == name) {
      return layout;
    }
  }
  throw UsageError(fmt::format("--layout {}: unknown layout; the layouts are {}", name, layout_names_text()));
}

void apply_layout_option(RecordLayout& layout, std::string_view option) {
  auto eq = option.find('=');
  std::string_view name = option.substr(0, eq);
  std::string_view value = eq == std::string_view::npos ? std::string_view() : option.substr(eq + 1);
  if (layout.value != RecordValue::Json) {
    throw UsageError(fmt::format("--layout-option {}: only the json layouts take options (--layout {} has none)",
                                 option, layout.name));
  }
  auto& json = layout.json;
  auto list = [&] {
    std::vector<std::string> out;
    for (auto part : split(value, ',')) {
      out.emplace_back(trim(part));
    }
    return out;
  };
  if (eq == std::string_view::npos) {
    name = "";
  }
  if (name == "status-field" && !value.empty()) {
    json.status = value;
  } else if (name == "expiration-field") {
    json.expiration = value;
  } else if (name == "expiration-unit") {
    parse_unit(value, option, json.expiration_ms);
  } else if (name == "in-progress-expiration-field") {
    json.in_progress_expiration = value;
  } else if (name == "in-progress-expiration-unit") {
    parse_unit(value, option, json.in_progress_expiration_ms);
  } else if (name == "in-progress" && !value.empty()) {
    json.in_progress = list();
  } else if (name == "completed" && !value.empty()) {
    json.completed = list();
  } else if (name == "orphans" && (value == "reapplied" || value == "skipped")) {
    layout.orphans_reapplied = value == "reapplied";
  } else if (name == "partition-key" && !value.empty()) {
    layout.dynamodb.partition = value;
  } else if (name == "sort-key") {
    layout.dynamodb.sort = value;
  } else if (name == "static-partition-key" && !value.empty()) {
    layout.dynamodb.static_partition = value;
  } else {
    throw UsageError(fmt::format(
        "--layout-option {}: expected NAME=VALUE with NAME one of status-field, expiration-field, expiration-unit "
        "(s|ms), "
        "in-progress-expiration-field, in-progress-expiration-unit (s|ms), in-progress (a,b), completed (a,b), "
        "orphans (reapplied|skipped); for dynamodb:// partition-key, sort-key, static-partition-key",
        option));
  }
}

std::string layout_key_template(const RecordLayout& layout, std::string_view prefix,
                                std::string_view explicit_template) {
  if (!explicit_template.empty()) {
    return std::string(explicit_template);
  }
  auto at = layout.key_template.find("{prefix}");
  if (at == std::string::npos) {
    return layout.key_template;
  }
  if (prefix.empty()) {
    throw UsageError(fmt::format("--layout {} derives its keys as {}: give --key-prefix PREFIX (or a whole "
                                 "--key-template)",
                                 layout.name, layout.key_template));
  }
  return layout.key_template.substr(0, at) + double_braces(prefix) + layout.key_template.substr(at + 8);
}

bool one_key(const RecordLayout& layout) { return layout.shape != RecordShape::Key; }

std::string collection_key(const RecordLayout& layout, std::string_view collection) {
  std::string name(collection.empty() ? std::string_view(layout.collection) : collection);
  if (name.empty()) {
    throw UsageError(
        fmt::format("--layout {} keeps every record under one key: name it with --collection NAME", layout.name));
  }
  if (!layout.java_collection) {
    return name;
  }
  std::string out;
  append_java_string(name, out);
  return out;
}

bool reads_value(const RecordLayout& layout) {
  return layout.value != RecordValue::Marker && layout.value != RecordValue::Membership;
}

void read_record_value(const RecordLayout& layout, std::string_view value, RecordState& state, std::size_t spare) {
  switch (layout.value) {
  case RecordValue::Json:
    read_json(layout.json, value, spare, state);
    break;
  case RecordValue::ExpirySeconds: {
    double score = 0;
    auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), score);
    if (error != std::errc() || !std::isfinite(score)) {
      state.unreadable = error != std::errc() && value != "inf" && value != "+inf";
      break; // +inf: never expires
    }
    state.expires_at_ms = static_cast<std::int64_t>(std::floor(score * 1000.0));
    break;
  }
  case RecordValue::TimeMs: {
    std::int64_t ms = 0;
    state.unreadable = !parse_whole(value, ms);
    break;
  }
  case RecordValue::Marker:
  case RecordValue::Membership:
    break;
  }
  state.layout_read = reads_value(layout) && !state.unreadable;
}

std::vector<std::pair<std::string, std::string>> json_scalar_fields(std::string_view json, std::string_view skip) {
  std::vector<std::pair<std::string, std::string>> out;
  if (auto object = json_object(json)) {
    for (auto [key, element] : *object) {
      if (key != skip && !element.is_object() && !element.is_array()) {
        out.emplace_back(std::string(key), scalar_text(element));
      }
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> record_fields(const RecordLayout& layout, std::string_view value) {
  std::vector<std::pair<std::string, std::string>> out;
  switch (layout.value) {
  case RecordValue::Json:
    return json_scalar_fields(value, "data"); // the handler's response: what the library keeps, not what decides
  case RecordValue::TimeMs:
    out.emplace_back("time_ms", std::string(value));
    break;
  case RecordValue::ExpirySeconds:
    out.emplace_back("expiration", std::string(value));
    break;
  case RecordValue::Marker:
  case RecordValue::Membership:
    break;
  }
  return out;
}

std::string snapshot_value(const RecordLayout& layout, std::string_view value) {
  if (layout.value != RecordValue::Json) {
    return std::string(value);
  }
  auto object = json_object(value);
  if (!object) {
    return std::string(value.substr(0, 64)); // unreadable either way: keep what shows it
  }
  std::string out = "{";
  for (const std::string* name : {&layout.json.status, &layout.json.expiration, &layout.json.in_progress_expiration}) {
    auto field = name->empty() ? simdjson::simdjson_result<simdjson::dom::element>(simdjson::NO_SUCH_FIELD)
                               : object->at_key(*name);
    if (field.error()) {
      continue;
    }
    if (out.size() > 1) {
      out += ',';
    }
    append_json_string(out, *name);
    out += ':';
    out += simdjson::minify(field.value_unsafe());
  }
  return out + "}";
}

namespace {

std::int64_t floor_seconds(std::int64_t ms) { return ms / 1000 - (ms % 1000 < 0 ? 1 : 0); }

// {"status":…,"expiration":…: the fields json_claim_record and json_completed_record share.
std::string json_record_start(const JsonRecordFields& fields, std::string_view status, std::int64_t expires_at_ms) {
  std::string out = "{";
  append_json_string(out, fields.status);
  out += ':';
  append_json_string(out, status);
  if (!fields.expiration.empty()) {
    out += ',';
    append_json_string(out, fields.expiration);
    out += fmt::format(":{}", fields.expiration_ms ? expires_at_ms : floor_seconds(expires_at_ms));
  }
  return out;
}

std::string own_claim_field(std::string_view run_id) {
  std::string out = ",\"dedupctl_run\":";
  append_json_string(out, run_id);
  return out + "}";
}

} // namespace

std::string json_claim_record(const RecordLayout& layout, std::int64_t expires_at_ms, std::int64_t lease_until_ms,
                              std::string_view run_id) {
  const JsonRecordFields& fields = layout.json;
  std::string out = json_record_start(fields, fields.in_progress.front(), expires_at_ms);
  if (!fields.in_progress_expiration.empty()) {
    out += ',';
    append_json_string(out, fields.in_progress_expiration);
    out += fmt::format(":{}", fields.in_progress_expiration_ms ? lease_until_ms : floor_seconds(lease_until_ms));
  }
  return out + own_claim_field(run_id);
}

std::string json_completed_record(const RecordLayout& layout, std::int64_t expires_at_ms) {
  return json_record_start(layout.json, layout.json.completed.front(), expires_at_ms) + "}";
}

bool is_own_json_claim(std::string_view value, std::string_view run_id) {
  return value.ends_with(own_claim_field(run_id));
}

} // namespace dedupctl::core
