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
  layout.home = LayoutHome::Redis;
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
  layout.json.unknown_status_fails = false; // a status in neither list is taken over, as --layout-option says
  layout.not_a_record_suffix.clear();
  layout.default_ttl_ms = 0;
  layout.default_ttl_source.clear();
  return layout;
}

RecordLayout one_key(std::string name, RecordShape shape, RecordValue value, std::string collection,
                     std::string library) {
  RecordLayout layout;
  layout.name = std::move(name);
  layout.home = LayoutHome::Redis;
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
  layout.home = LayoutHome::Inbox;
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
  typescript.json.reader = JsonReader::JavaScript; // Date.now() / 1000 > expiration; a claim without a lease is
                                                   // an orphan
  layouts.push_back(typescript);
  // Java's generateHash digests a text node's text, not its JSON: no quotes.
  RecordLayout java = powertools("powertools-java", "{prefix}#{event_id|md5}",
                                 "Powertools for AWS Lambda (Java), DynamoDBPersistenceStore");
  java.home = LayoutHome::Dynamodb;
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
  camel_string.home = LayoutHome::Redis;
  camel_string.library =
      "Camel's SpringRedisStringIdempotentRepository (<repository>:<id>, Java-serialized as a RedisTemplate writes it)";
  camel_string.java_key = true;
  camel_string.key_template = "{prefix}:{event_id}";
  camel_string.needs_prefix = true;
  layouts.push_back(camel_string);
  layouts.push_back(one_key("zset", RecordShape::ScoredMember, RecordValue::ExpirySeconds, "",
                            "one sorted set, the score the expiry in epoch seconds"));
  layouts.push_back(one_key("redis-bloom", RecordShape::BloomMember, RecordValue::Membership, "",
                            "a Bloom filter in Redis (RedisBloom, Redis 8's BF.*, valkey-bloom), BF.MEXISTS: absent "
                            "is exact, \"maybe\" is taken as seen"));
  layouts.back().never_expires = true;
  layouts.push_back(one_key("bloom", RecordShape::BloomMember, RecordValue::Membership, "",
                            "a Bloom filter the consumer wrote to a file itself (bits-and-blooms WriteTo, Guava "
                            "writeTo; --layout-option bloom-impl=…), read with the library's hashing"));
  layouts.back().home = LayoutHome::Dump;
  layouts.back().never_expires = true;
  for (auto& layout : inbox_layouts()) {
    layouts.push_back(std::move(layout));
  }
  for (auto& layout : window_layouts()) {
    layouts.push_back(std::move(layout));
  }
  for (auto& layout : changelog_layouts()) {
    layouts.push_back(std::move(layout));
  }
  RecordLayout guard;
  guard.name = "version-guard";
  guard.home = LayoutHome::Projection;
  guard.library = "no dedup record: the handler's guard UPDATE … WHERE version < $v against its projection (a "
                  "PostgreSQL row or a Redis key per entity; --layout-option entity-column, version-column, "
                  "version-field)";
  guard.key_template = "{entity}";
  guard.never_expires = true;
  layouts.push_back(guard);
  guard.name = "state-guard";
  guard.library = "no dedup record: the handler's guard UPDATE … WHERE status = ANY(from) against its "
                  "projection (a PostgreSQL row or a Redis key per entity; --layout-option transitions=FILE, "
                  "entity-column, state-column, state-field)";
  guard.projection.states = true;
  guard.projection.version_column = "status";
  layouts.push_back(guard);
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

// `text` as a double, whole, as Python's float and JavaScript's Number read a decimal: past a
// double's range +-infinity, below it 0; nullopt when from_chars does not read all of it.
std::optional<double> saturated_double(std::string_view text) {
  double out = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (end != text.data() + text.size() || (error != std::errc() && error != std::errc::result_out_of_range)) {
    return std::nullopt;
  }
  if (error == std::errc::result_out_of_range) {
    auto e = text.find_first_of("eE");
    bool tiny = e != std::string_view::npos && e + 1 < text.size() && text[e + 1] == '-';
    return tiny ? 0.0 : (text.front() == '-' ? -HUGE_VAL : HUGE_VAL);
  }
  return out;
}

// A JSON number token as a double, as json.loads and JSON.parse read it: the token must follow
// JSON's grammar (so an integer of any length is one, as both languages take it).
std::optional<double> json_number(std::string_view token) {
  while (!token.empty() &&
         (token.back() == ' ' || token.back() == '\t' || token.back() == '\n' || token.back() == '\r')) {
    token.remove_suffix(1);
  }
  return valid_json_number(token) ? saturated_double(token) : std::nullopt;
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
    return json_number(value.raw_json_token()).has_value();
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

// A deciding field's value, as much of it as the libraries' comparisons look at.
struct JsonScalar {
  enum class Kind { Missing, Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Missing;
  double number = 0;       // a number, a boolean (1 or 0), an array of one number
  std::string text;        // a string
  bool empty = true;       // an array or object without elements
  bool one_number = false; // an array of exactly one number (JavaScript's Number([5]) is 5)
};

bool read_scalar(simdjson::ondemand::value value, JsonScalar& out) {
  simdjson::ondemand::json_type type{};
  if (value.type().get(type)) {
    return false;
  }
  switch (type) {
  case simdjson::ondemand::json_type::null:
    out.kind = JsonScalar::Kind::Null;
    return well_formed(value);
  case simdjson::ondemand::json_type::boolean: {
    bool b = false;
    out.kind = JsonScalar::Kind::Bool;
    if (value.get_bool().get(b)) {
      return false;
    }
    out.number = b ? 1 : 0;
    return true;
  }
  case simdjson::ondemand::json_type::number: {
    out.kind = JsonScalar::Kind::Number;
    auto n = json_number(value.raw_json_token());
    out.number = n.value_or(0);
    return n.has_value();
  }
  case simdjson::ondemand::json_type::string: {
    std::string_view text;
    out.kind = JsonScalar::Kind::String;
    if (value.get_string().get(text)) {
      return false;
    }
    out.text = std::string(text);
    return true;
  }
  case simdjson::ondemand::json_type::array: {
    simdjson::ondemand::array array;
    out.kind = JsonScalar::Kind::Array;
    if (value.get_array().get(array)) {
      return false;
    }
    int count = 0;
    for (auto element : array) {
      simdjson::ondemand::value item;
      if (element.get(item)) {
        return false;
      }
      JsonScalar inner;
      if (!read_scalar(item, inner)) {
        return false;
      }
      ++count;
      out.one_number = count == 1 && inner.kind == JsonScalar::Kind::Number;
      out.number = inner.number;
    }
    out.empty = count == 0;
    return true;
  }
  case simdjson::ondemand::json_type::object: {
    simdjson::ondemand::object object;
    out.kind = JsonScalar::Kind::Object;
    if (value.get_object().get(object)) {
      return false;
    }
    for (auto field : object) {
      simdjson::ondemand::value item;
      if (field.error() || field.value().get(item) || !well_formed(item, 1)) {
        return false;
      }
      out.empty = false;
    }
    return true;
  }
  }
  return false;
}

// The fields a JSON record's state is read from, as the library reads them (a repeated name: its
// last value, as json.loads and JSON.parse keep). On-Demand: the other fields (Powertools' `data`,
// a kilobyte of the handler's response) are skipped, not unescaped. Parsed: false when the value is
// not JSON at all (either library's parser refuses it).
struct JsonState {
  bool object = false; // the value is a JSON object (else: null, an array, a string or a number)
  bool null = false;   // the value is JSON's null
  JsonScalar status;
  JsonScalar expiration;
  JsonScalar in_progress_expiration;
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
  if (parser.iterate(text.data(), text.size(), text.size() + spare).get(doc)) {
    return false;
  }
  simdjson::ondemand::json_type type{};
  if (doc.type().get(type)) {
    return false;
  }
  if (type != simdjson::ondemand::json_type::object) { // whole JSON all the same, or not JSON at all
    out.null = type == simdjson::ondemand::json_type::null;
    JsonScalar ignored;
    simdjson::ondemand::value top;
    std::string_view token;
    bool read = false;
    switch (type) {
    case simdjson::ondemand::json_type::array:
      read = !doc.get_value().get(top) && read_scalar(top, ignored);
      break;
    case simdjson::ondemand::json_type::string:
      read = !doc.get_string().get(token);
      break;
    case simdjson::ondemand::json_type::number:
      read = !doc.raw_json_token().get(token) && json_number(token).has_value();
      break;
    case simdjson::ondemand::json_type::boolean: {
      bool b = false;
      read = !doc.get_bool().get(b);
      break;
    }
    case simdjson::ondemand::json_type::null: {
      bool is_null = false;
      read = !doc.is_null().get(is_null) && is_null;
      break;
    }
    case simdjson::ondemand::json_type::object:
      break;
    }
    const char* after = nullptr;
    return read &&
           (type != simdjson::ondemand::json_type::array || doc.current_location().get(after) != simdjson::SUCCESS);
  }
  simdjson::ondemand::object object;
  if (doc.get_object().get(object)) {
    return false;
  }
  out.object = true;
  for (auto field : object) {
    std::string_view key;
    simdjson::ondemand::value item;
    if (field.unescaped_key().get(key) || field.value().get(item)) {
      return false;
    }
    JsonScalar* deciding = key == fields.status                                     ? &out.status
                           : !fields.expiration.empty() && key == fields.expiration ? &out.expiration
                           : !fields.in_progress_expiration.empty() && key == fields.in_progress_expiration
                               ? &out.in_progress_expiration
                               : nullptr;
    if (deciding) {
      *deciding = JsonScalar{};
      if (!read_scalar(item, *deciding)) {
        return false;
      }
    } else if (!well_formed(item)) {
      return false;
    }
  }
  const char* after = nullptr;
  return doc.current_location().get(after) != simdjson::SUCCESS; // a location past the object: more than one value
}

// JavaScript's Number(x) of a field (NaN for what does not convert).
double js_number(const JsonScalar& x) {
  using Kind = JsonScalar::Kind;
  switch (x.kind) {
  case Kind::Missing:
    return NAN;
  case Kind::Null:
    return 0;
  case Kind::Bool:
  case Kind::Number:
    return x.number;
  case Kind::String: {
    std::string_view t = trim(x.text);
    if (t.empty()) {
      return 0;
    }
    if (t == "Infinity" || t == "+Infinity") {
      return HUGE_VAL;
    }
    if (t == "-Infinity") {
      return -HUGE_VAL;
    }
    if (t.front() == '+') {
      t.remove_prefix(1);
    }
    if (t.find_first_of("nNiI") != std::string_view::npos) {
      return NAN; // from_chars reads "nan" and "inf"; Number() does not
    }
    return saturated_double(t).value_or(NAN);
  }
  case Kind::Array:
    return x.empty ? 0 : (x.one_number ? x.number : NAN);
  case Kind::Object:
    return NAN;
  }
  return NAN;
}

// JavaScript's truthiness of a field.
bool js_truthy(const JsonScalar& x) {
  using Kind = JsonScalar::Kind;
  switch (x.kind) {
  case Kind::Missing:
  case Kind::Null:
    return false;
  case Kind::Bool:
  case Kind::Number:
    return x.number != 0 && !std::isnan(x.number);
  case Kind::String:
    return !x.text.empty();
  case Kind::Array:
  case Kind::Object:
    return true;
  }
  return false;
}

// The first millisecond at which `now_ms > limit_ms` holds, for a limit in milliseconds (any real):
// floor(limit) + 1, saturated (nullopt: never, within an int64 of milliseconds).
std::optional<std::int64_t> first_ms_past(double limit_ms) {
  if (std::isnan(limit_ms) || limit_ms >= 9.0e18) {
    return std::nullopt;
  }
  if (limit_ms <= -9.0e18) {
    return INT64_MIN;
  }
  return static_cast<std::int64_t>(std::floor(limit_ms)) + 1;
}

// The first millisecond at which `lease_ms > now_ms` no longer holds: ceil(lease), saturated.
std::optional<std::int64_t> lease_end_ms(double lease_ms) {
  if (std::isnan(lease_ms) || lease_ms <= -9.0e18) {
    return INT64_MIN;
  }
  if (lease_ms >= 9.0e18) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(std::ceil(lease_ms));
}

// When a record expires, as `reader` compares `expiration` (in `in_ms` or seconds) with now; fails
// set when the comparison raises in every case (Python's int > str).
std::optional<std::int64_t> json_expiry(const JsonRecordFields& fields, const JsonScalar& expiration, bool& fails) {
  using Kind = JsonScalar::Kind;
  double scale = fields.expiration_ms ? 1.0 : 1000.0;
  if (fields.reader == JsonReader::JavaScript) { // now / 1000 > Number(expiration); undefined never
    if (expiration.kind == Kind::Missing) {
      return std::nullopt;
    }
    return first_ms_past(js_number(expiration) * scale);
  }
  // Python: bool(expiration and int(now) > expiration); int(now) whole seconds (or ms).
  switch (expiration.kind) {
  case Kind::Missing:
  case Kind::Null:
    return std::nullopt;
  case Kind::Bool:
  case Kind::Number: {
    if (expiration.number == 0) {
      return std::nullopt; // falsy: never expired
    }
    // int(now) > x  <=>  int(now) >= floor(x) + 1, in the unit's whole steps
    double first = std::floor(expiration.number) + 1;
    return first >= 9.0e18 / scale    ? std::nullopt
           : first <= -9.0e18 / scale ? std::optional<std::int64_t>(INT64_MIN)
                                      : std::optional(static_cast<std::int64_t>(first * scale));
  }
  case Kind::String:
  case Kind::Array:
  case Kind::Object:
    if (!(expiration.kind == Kind::String ? expiration.text.empty() : expiration.empty)) {
      fails = true; // int > str: a TypeError at every delivery
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// A DynamoDB item as Powertools reads it (JsonRecordFields::conditional_put): its conditional PutItem
// takes the item over once a number `expiration` (any, 0 included) or an INPROGRESS claim's number
// lease is past; otherwise the item it gets back decides: COMPLETED is skipped, INPROGRESS is in
// progress, and anything else fails (EXPIRED or an unknown status: an inconsistent state raised
// after the retries; no status, or for Python no expiration: a KeyError, TypeScript's invalid status;
// an expiration of another type Python cannot compare).
void read_item(const JsonRecordFields& fields, const JsonState& json, RecordState& state) {
  using Kind = JsonScalar::Kind;
  bool python = fields.reader == JsonReader::Python;
  auto past = [&](const JsonScalar& limit, bool in_ms, bool whole_seconds) -> std::optional<std::int64_t> {
    if (limit.kind != Kind::Number) {
      return std::nullopt;
    }
    double ms =
        in_ms ? limit.number : (whole_seconds ? (std::floor(limit.number) + 1) * 1000 - 1 : limit.number * 1000);
    return first_ms_past(ms); // int(now) > e in whole seconds (Python), now / 1000 > e (TypeScript)
  };
  state.expires_at_ms = past(json.expiration, fields.expiration_ms, python);
  const JsonScalar& e = json.expiration;
  // Python: item["expiration"] (a KeyError without one) compared with int(now) (a TypeError for text,
  // and true is 1, long past); TypeScript: Number(null) is 0, long past, so the item reads EXPIRED. Text
  // against the put's number is refused by the condition itself (both libraries fail).
  bool uncomparable = e.kind == Kind::Missing  ? python
                      : e.kind == Kind::Null   ? !python
                      : e.kind == Kind::Bool   ? (!python || e.number != 0)
                      : e.kind == Kind::String ? true
                                               : (e.kind == Kind::Array || e.kind == Kind::Object) && !e.empty;
  const std::string* status = json.status.kind == Kind::String ? &json.status.text : nullptr;
  if (uncomparable || !status) {
    state.fails = true;
    return;
  }
  if (one_of(*status, fields.completed)) {
    state.unreadable = false;
    return;
  }
  if (one_of(*status, fields.in_progress)) {
    state.unreadable = false;
    state.claim = true; // without a number lease the put's condition never takes it over
    if (json.in_progress_expiration.kind == Kind::Number) {
      state.claim_until_ms = past(json.in_progress_expiration, fields.in_progress_expiration_ms, false);
    } else if (json.in_progress_expiration.kind != Kind::Missing && json.in_progress_expiration.kind != Kind::Null) {
      state.claim = false;
      state.unreadable = true;
      state.fails = true; // a lease of text against the put's number: refused
    }
    return;
  }
  state.fails = true; // EXPIRED or unknown: not the put's to take over, and an error when read
}

void read_json(const JsonRecordFields& fields, std::string_view value, std::size_t spare, RecordState& state) {
  using Kind = JsonScalar::Kind;
  JsonState json;
  state.unreadable = true; // until read as the layout's record
  bool python = fields.reader == JsonReader::Python;
  if (python && value.empty()) {
    state.fails = true; // an empty value is "no record", raised mid-put
    return;
  }
  constexpr std::string_view bom = "\xEF\xBB\xBF";
  if (python && value.starts_with(bom)) { // json.loads of bytes decodes them as utf-8-sig
    value.remove_prefix(bom.size());
    spare = 0;
  }
  if (!read_json_state(fields, value, spare, json) || (!python && json.null)) {
    state.taken_over = true; // json.loads / JSON.parse raised, or null[field] did: the library's consistency path
    return;
  }
  if (python && !json.object) {
    state.fails = true; // a value that is not a dict has no .get
    return;
  }
  if (fields.conditional_put) {
    read_item(fields, json, state);
    return;
  }
  bool fails = false;
  if (python && json.status.kind == Kind::Missing) {
    state.fails = true; // item["status"]: a KeyError before any expiry is looked at
    return;
  }
  state.expires_at_ms = json_expiry(fields, json.expiration, fails);
  if (fails) {
    state.expires_at_ms.reset();
    state.fails = true;
    return;
  }
  // From here the record's own expiry, when it passes, comes first (the library's status reads
  // EXPIRED then): what follows holds until then.
  const std::string* status = json.status.kind == Kind::String ? &json.status.text : nullptr;
  if (status && one_of(*status, fields.completed)) {
    state.unreadable = false;
    return;
  }
  if (status && one_of(*status, fields.in_progress)) {
    state.unreadable = false;
    state.claim = true;
    const JsonScalar& lease = json.in_progress_expiration;
    double scale = fields.in_progress_expiration_ms ? 1.0 : 1000.0;
    if (python) { // lease is None or lease > now_ms
      if (lease.kind == Kind::Missing || lease.kind == Kind::Null) {
        return; // no lease: blocks every delivery while the key lives
      }
      if (lease.kind != Kind::Number && lease.kind != Kind::Bool) {
        state.claim = false;
        state.unreadable = true;
        state.fails = true; // str > int: a TypeError
        return;
      }
      state.claim_until_ms = lease_end_ms(lease.number * scale);
    } else { // lease && lease > Date.now()
      state.claim_until_ms = js_truthy(lease) ? lease_end_ms(js_number(lease) * scale) : INT64_MIN;
    }
    return;
  }
  if (status && (one_of(*status, fields.taken_over) || !fields.unknown_status_fails)) {
    state.taken_over = true; // status EXPIRED, or a generic layout's unknown status: the consistency path
    return;
  }
  state.fails = true; // IdempotencyInvalidStatusError, unless the record expired first
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
  if (layout.home == LayoutHome::Window) {
    apply_window_option(layout.window, option);
    return;
  }
  if (layout.home == LayoutHome::Changelog) {
    apply_changelog_option(layout, option);
    return;
  }
  if (layout.home == LayoutHome::Projection) {
    auto& p = layout.projection;
    std::string_view what = p.states ? "state" : "version";
    if (name == "entity-column" && !value.empty()) {
      p.entity_column = value;
    } else if (name == fmt::format("{}-column", what) && !value.empty()) {
      p.version_column = value;
    } else if (name == fmt::format("{}-field", what) && !value.empty()) {
      p.version_field = value;
    } else if (p.states && name == "transitions" && !value.empty()) {
      p.transitions = value;
    } else {
      throw UsageError(fmt::format("--layout-option {}: --layout {} takes {}entity-column=NAME and {}-column=NAME "
                                   "(a PostgreSQL projection), or {}-field=NAME (a Redis hash per entity)",
                                   option, layout.name, p.states ? "transitions=FILE, " : "", what, what));
    }
    return;
  }
  if (layout.home == LayoutHome::Dump) {
    if (name != "bloom-impl" || (value != "bits-and-blooms" && value != "guava")) {
      throw UsageError(fmt::format("--layout-option {}: --layout {} takes bloom-impl=bits-and-blooms|guava (the "
                                   "library that wrote the dump)",
                                   option, layout.name));
    }
    layout.window.bloom_impl = value == "guava" ? BloomImpl::Guava : BloomImpl::BitsAndBlooms;
    layout.window.bloom_impl_named = true;
    return;
  }
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
