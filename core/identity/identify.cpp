#include "core/identity/identify.hpp"

#include "core/identity/payload_decoder.hpp"
#include "core/util/encoding.hpp"
#include "core/util/fingerprint.hpp"

#include <fmt/format.h>
#include <simdjson.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <charconv>
#include <cstring>

namespace dedupctl::core {

IdentifyOptions default_identify_options() {
  IdentifyOptions options;
  options.id = parse_field_specs("header:event_id,json:/event_id", "--id");
  options.type = parse_field_specs("header:type,json:/type", "--type");
  return options;
}

namespace {

constexpr std::uint64_t k_seed_id = 0x1d;
constexpr std::uint64_t k_seed_semantic = 0x5e;

enum class Outcome { Found, Missing, NotJson, NotScalar };

// A payload no JSON reader could take: invalid UTF-8 or control bytes (Avro and Protobuf
// encodings nearly always have both).
bool looks_binary(std::string_view payload) {
  for (char c : payload) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') {
      return true;
    }
  }
  return !simdjson::validate_utf8(payload.data(), payload.size());
}

} // namespace

// One JSON document parsed on demand: a payload's or a key's, at most once per event.
struct JsonDocument {
  simdjson::ondemand::parser parser;
  std::vector<char> padded;
  simdjson::ondemand::document document;
  const Event* parsed_for = nullptr; // the event `document` belongs to
  bool parse_failed = false;

  bool ensure_parsed(const Event& event, std::optional<std::string_view> text) {
    if (parsed_for == &event) {
      return !parse_failed;
    }
    parsed_for = &event;
    parse_failed = true;
    if (!text || text->empty()) {
      return false;
    }
    // simdjson reads up to SIMDJSON_PADDING bytes past the end: copy into a padded buffer
    // (events are views into the client's buffers, which are not padded).
    if (padded.size() < text->size() + simdjson::SIMDJSON_PADDING) {
      padded.resize(text->size() + simdjson::SIMDJSON_PADDING);
    }
    std::memcpy(padded.data(), text->data(), text->size());
    std::memset(padded.data() + text->size(), 0, simdjson::SIMDJSON_PADDING);
    auto result = parser.iterate(padded.data(), text->size(), padded.size());
    if (result.error()) {
      return false;
    }
    document = std::move(result).value_unsafe();
    parse_failed = false;
    return true;
  }

  // The value `tokens` (a JSON pointer's, unescaped) points to, read as the JSON libraries read it: of a
  // key written twice the last one (Python's json, Jackson, JSON.parse and Go's encoding/json all keep
  // the last), at every level; keys compared unescaped, as those libraries decode them.
  Outcome value(const Event& event, std::optional<std::string_view> text, const std::vector<std::string>& tokens,
                Arena& arena, std::string_view& out) {
    if (!ensure_parsed(event, text)) {
      return Outcome::NotJson;
    }
    Outcome outcome = Outcome::Missing;
    simdjson::error_code error = find(tokens, arena, out, outcome);
    if (error) {
      // simdjson may abandon the document after an error (its parser pointer is cleared), so the
      // next json: spec must parse the payload again rather than rewind this document.
      parsed_for = nullptr;
      bool missing = error == simdjson::NO_SUCH_FIELD || error == simdjson::INDEX_OUT_OF_BOUNDS ||
                     error == simdjson::INCORRECT_TYPE;
      return missing ? Outcome::Missing : Outcome::NotJson;
    }
    return outcome;
  }

private:
  using Value = simdjson::ondemand::value;
  std::vector<std::size_t> m_ordinals; // find's: which match of its key each level takes

  // Whether the field's key, decoded, is `token`. Compared as it stands up to its first difference from
  // the token: up to there the raw key has no escape, so a plain difference (or its end) decides; only
  // a key with an escape at or before that point is decoded.
  static simdjson::error_code key_is(simdjson::ondemand::field& field, std::string_view token, bool& is) {
    const char* raw = field.key().raw();
    for (std::size_t i = 0;; ++i) {
      char c = raw[i];
      if (c == '"') {
        is = i == token.size();
        return simdjson::SUCCESS;
      }
      if (c == '\\') {
        std::string_view decoded;
        SIMDJSON_TRY(field.unescaped_key().get(decoded));
        is = decoded == token;
        return simdjson::SUCCESS;
      }
      if (i == token.size() || c != token[i]) {
        is = false;
        return simdjson::SUCCESS;
      }
    }
  }

  // An array index as RFC 6901 writes it: 0, or digits without a leading zero.
  static bool array_index(std::string_view token, std::size_t& index) {
    if (token.empty() || (token.size() > 1 && token[0] == '0')) {
      return false;
    }
    auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
    return ec == std::errc() && end == token.data() + token.size();
  }

  // From `v` to its child: the `ordinal`-th field (from 1) named `token` of an object, or the element
  // at index `token` of an array.
  static simdjson::error_code step(Value& v, std::string_view token, std::size_t ordinal) {
    simdjson::ondemand::json_type type;
    SIMDJSON_TRY(v.type().get(type));
    if (type == simdjson::ondemand::json_type::object) {
      simdjson::ondemand::object object;
      SIMDJSON_TRY(v.get_object().get(object));
      std::size_t seen = 0;
      for (auto result : object) {
        simdjson::ondemand::field field;
        SIMDJSON_TRY(std::move(result).get(field));
        bool is = false;
        SIMDJSON_TRY(key_is(field, token, is));
        if (is && ++seen == ordinal) {
          v = field.value();
          return simdjson::SUCCESS;
        }
      }
      return simdjson::NO_SUCH_FIELD;
    }
    if (type != simdjson::ondemand::json_type::array) {
      return simdjson::INCORRECT_TYPE;
    }
    std::size_t index = 0;
    if (!array_index(token, index)) {
      return simdjson::NO_SUCH_FIELD;
    }
    simdjson::ondemand::array array;
    SIMDJSON_TRY(v.get_array().get(array));
    std::size_t at = 0;
    for (auto element : array) {
      if (at++ == index) {
        return std::move(element).get(v);
      }
    }
    return simdjson::INDEX_OUT_OF_BOUNDS;
  }

  // How many fields of the object `v` are named `token` (its last is the one a library keeps); 1 for an
  // array, whose child is found by index.
  static simdjson::error_code count(Value& v, std::string_view token, std::size_t& matches) {
    simdjson::ondemand::json_type type;
    SIMDJSON_TRY(v.type().get(type));
    matches = 1;
    if (type == simdjson::ondemand::json_type::array) {
      return simdjson::SUCCESS;
    }
    if (type != simdjson::ondemand::json_type::object) {
      return simdjson::INCORRECT_TYPE;
    }
    simdjson::ondemand::object object;
    SIMDJSON_TRY(v.get_object().get(object));
    matches = 0;
    for (auto result : object) {
      simdjson::ondemand::field field;
      SIMDJSON_TRY(std::move(result).get(field));
      bool is = false;
      SIMDJSON_TRY(key_is(field, token, is));
      matches += is ? 1 : 0;
    }
    return matches == 0 ? simdjson::NO_SUCH_FIELD : simdjson::SUCCESS;
  }

  // A scalar as a json: spec yields it: a string's text, a number's token; null is no value.
  static simdjson::error_code scalar(Value& v, Outcome& outcome, std::string_view& text) {
    simdjson::ondemand::json_type type;
    SIMDJSON_TRY(v.type().get(type));
    if (type == simdjson::ondemand::json_type::string) {
      SIMDJSON_TRY(v.get_string().get(text));
      outcome = Outcome::Found;
    } else if (type == simdjson::ondemand::json_type::number) {
      text = v.raw_json_token();
      while (!text.empty() &&
             (text.back() == ' ' || text.back() == '\n' || text.back() == '\r' || text.back() == '\t')) {
        text.remove_suffix(1);
      }
      outcome = Outcome::Found;
    } else {
      outcome = type == simdjson::ondemand::json_type::null ? Outcome::Missing : Outcome::NotScalar;
    }
    return simdjson::SUCCESS;
  }

  // The last level in one pass: every field named `token` read, the last one's scalar kept (a string's
  // text stays in the parser's buffer until the next rewind).
  static simdjson::error_code last_scalar(Value& v, std::string_view token, Outcome& outcome, std::string_view& text) {
    simdjson::ondemand::json_type type;
    SIMDJSON_TRY(v.type().get(type));
    if (type != simdjson::ondemand::json_type::object) {
      SIMDJSON_TRY(step(v, token, 1));
      return scalar(v, outcome, text);
    }
    simdjson::ondemand::object object;
    SIMDJSON_TRY(v.get_object().get(object));
    bool found = false;
    for (auto result : object) {
      simdjson::ondemand::field field;
      SIMDJSON_TRY(std::move(result).get(field));
      bool is = false;
      SIMDJSON_TRY(key_is(field, token, is));
      if (is) {
        found = true;
        SIMDJSON_TRY(scalar(field.value(), outcome, text));
      }
    }
    return found ? simdjson::SUCCESS : simdjson::NO_SUCH_FIELD;
  }

  simdjson::error_code find(const std::vector<std::string>& tokens, Arena& arena, std::string_view& out,
                            Outcome& outcome) {
    m_ordinals.assign(tokens.size(), 0);
    for (std::size_t level = 0; level < tokens.size(); ++level) {
      // From the top each time (ondemand reads forward only): to this level through the last match of
      // every level above.
      document.rewind();
      Value v;
      SIMDJSON_TRY(document.get_value().get(v));
      for (std::size_t k = 0; k < level; ++k) {
        SIMDJSON_TRY(step(v, tokens[k], m_ordinals[k]));
      }
      if (level + 1 == tokens.size()) {
        std::string_view text;
        SIMDJSON_TRY(last_scalar(v, tokens[level], outcome, text));
        if (outcome == Outcome::Found) {
          out = arena.copy(text);
        }
        return simdjson::SUCCESS;
      }
      SIMDJSON_TRY(count(v, tokens[level], m_ordinals[level]));
    }
    return simdjson::NO_SUCH_FIELD; // a pointer without a token: not one the spec parser makes
  }
};

// A payload or key as the json: specs read it: the bytes themselves, or the JSON of the record a
// schema registry's frame holds (decoded once per event, and only with a decoder).
struct DecodedText {
  const Event* decoded_for = nullptr;
  std::optional<std::string_view> raw;
  std::string json;
  std::string error; // why a framed value could not be decoded; "" when decoded or not framed
  bool decoded = false;

  void prepare(const Event& event, std::optional<std::string_view> bytes, const PayloadDecoder* decoder) {
    if (decoded_for == &event) {
      return;
    }
    decoded_for = &event;
    raw = bytes;
    decoded = false;
    error.clear();
    if (!decoder || !bytes) {
      return;
    }
    auto frame = parse_wire_frame(*bytes);
    if (!frame) {
      return;
    }
    error = decoder->decode(*frame, json);
    decoded = error.empty();
  }

  std::optional<std::string_view> text() const {
    if (decoded) {
      return std::string_view(json);
    }
    return raw;
  }

  // Why a json: spec found no JSON here.
  std::string why_not_json(bool has_decoder, bool& binary) const {
    if (!raw) {
      return "null";
    }
    if (!error.empty()) {
      binary = true;
      return error;
    }
    if (looks_binary(*raw)) {
      binary = true;
      return has_decoder ? unframed_reason(*raw) : "binary, not JSON (Avro or Protobuf? see --registry)";
    }
    return "not JSON";
  }
};

struct Identifier::Impl {
  IdentifyOptions options;
  Arena arena;
  JsonDocument payload_document;
  JsonDocument key_document;
  DecodedText payload;
  DecodedText key;
  std::string reason;
  bool binary_seen = false;           // a json: spec of this event met a binary payload
  bool payload_not_json_said = false; // why the payload is not JSON is in `reason` already
  bool key_not_json_said = false;
  std::vector<std::string_view> extra_values; // reserved per batch: identities point into it

  explicit Impl(IdentifyOptions opts) : options(std::move(opts)) {}

  void begin_event(const Event& event) {
    payload_document.parsed_for = nullptr;
    key_document.parsed_for = nullptr;
    payload.decoded_for = nullptr;
    key.decoded_for = nullptr;
    payload.prepare(event, event.payload, options.decoder.get());
  }

  // Evaluates one spec; on failure appends why to `reason` (when asked to).
  bool evaluate(const Event& event, const FieldSpec& spec, std::string_view& out, bool explain) {
    switch (spec.kind) {
    case FieldKind::Header:
      // The last header of a name wins, as Kafka's Headers.lastHeader().
      for (auto it = event.headers.rbegin(); it != event.headers.rend(); ++it) {
        if (it->name == spec.name) {
          if (it->value && !it->value->empty()) {
            out = *it->value;
            return true;
          }
          break;
        }
      }
      if (explain) {
        note(fmt::format("no header {}", spec.name));
      }
      return false;
    case FieldKind::Key:
      if (event.key && !event.key->empty()) {
        out = *event.key;
        return true;
      }
      if (explain) {
        note("no key");
      }
      return false;
    case FieldKind::Offset: {
      auto text = fmt::format("{}-{}-{}", event.topic, event.partition, event.offset);
      out = arena.copy(text);
      return true;
    }
    case FieldKind::Json:
    case FieldKind::KeyJson: {
      bool of_key = spec.kind == FieldKind::KeyJson;
      DecodedText& text = of_key ? key : payload;
      if (of_key) {
        key.prepare(event, event.key, options.decoder.get());
      }
      JsonDocument& document = of_key ? key_document : payload_document;
      Outcome outcome = document.value(event, text.text(), spec.pointer, arena, out);
      if (outcome == Outcome::Found && !out.empty()) {
        return true;
      }
      if (explain) {
        std::string_view what = of_key ? "key" : "payload";
        switch (outcome) {
        case Outcome::NotJson: {
          // Said once an event, however many json: specs met it.
          bool& said = of_key ? key_not_json_said : payload_not_json_said;
          if (!said) {
            said = true;
            bool binary = false;
            note(fmt::format("{} is {}", what, text.why_not_json(options.decoder != nullptr, binary)));
            binary_seen = binary_seen || (binary && !of_key);
          }
          break;
        }
        case Outcome::NotScalar:
          note(fmt::format("{} is not a string or number", spec.name));
          break;
        default:
          note(fmt::format("{} has no {}", what, spec.name));
          break;
        }
      }
      return false;
    }
    }
    return false;
  }

  void note(std::string_view why) {
    if (!reason.empty()) {
      reason += ", ";
    }
    reason += why;
  }

  bool first_of(const Event& event, const std::vector<FieldSpec>& specs, std::string_view& out, bool explain) {
    for (const auto& spec : specs) {
      if (evaluate(event, spec, out, explain)) {
        return true;
      }
    }
    return false;
  }

  Identity identify(const Event& event) {
    begin_event(event);
    Identity identity;
    reason.clear();
    binary_seen = false;
    payload_not_json_said = false;
    key_not_json_said = false;
    // A decoded record is fingerprinted by its content, so that the same event written under two
    // schema versions has one fingerprint; anything else by its bytes.
    std::string_view content = payload.text().value_or(std::string_view{});
    identity.payload_fingerprint = event.payload ? hash64(content) : 0;
    if (payload.decoded) {
      identity.payload_decoded = true;
      identity.decoded_payload = arena.copy(payload.json);
    }
    identity.has_id = first_of(event, options.id, identity.id, true);
    if (identity.has_id) {
      identity.id_hash = hash64(identity.id, k_seed_id);
    } else {
      identity.no_id_reason = arena.copy(reason);
      identity.binary_payload = binary_seen;
    }
    first_of(event, options.type, identity.type, false);
    identity.has_entity = first_of(event, options.entity, identity.entity, false);
    identity.has_version = first_of(event, options.version, identity.version, false);
    identity.semantic_hash = semantic(event, identity, content);
    if (!options.extra.empty()) {
      std::size_t first = extra_values.size();
      for (const auto& spec : options.extra) {
        std::string_view value;
        extra_values.push_back(evaluate(event, spec, value, false) ? value : std::string_view{});
      }
      identity.extra = extra_values.data() + first;
    }
    return identity;
  }

  std::uint64_t semantic(const Event& event, const Identity& identity, std::string_view content) {
    XXH3_state_t state;
    XXH3_64bits_reset_withSeed(&state, k_seed_semantic);
    auto add = [&](std::string_view bytes) {
      // Length-prefixed so that ("ab","c") and ("a","bc") differ.
      auto size = static_cast<std::uint64_t>(bytes.size());
      XXH3_64bits_update(&state, &size, sizeof size);
      XXH3_64bits_update(&state, bytes.data(), bytes.size());
    };
    if (!options.semantic.empty()) {
      for (const auto& spec : options.semantic) {
        std::string_view value;
        add(evaluate(event, spec, value, false) ? value : std::string_view{});
      }
      return XXH3_64bits_digest(&state);
    }
    add(identity.type);
    add(identity.entity);
    // The payload without the event id's first occurrence: a producer that retried with a new id
    // sent the same bytes but for the id.
    std::size_t at = identity.has_id && !identity.id.empty() ? content.find(identity.id) : std::string_view::npos;
    if (at == std::string_view::npos) {
      add(content);
    } else {
      XXH3_64bits_update(&state, content.data(), at);
      XXH3_64bits_update(&state, content.data() + at + identity.id.size(), content.size() - at - identity.id.size());
    }
    return XXH3_64bits_digest(&state);
  }
};

void render_batch_keys(const KeyTemplate& tmpl, const EventBatch& batch, const std::vector<Identity>& identities,
                       std::string_view consumer, std::vector<std::string>& keys, std::vector<std::size_t>& key_of) {
  std::size_t n = 0;
  key_of.assign(batch.events.size(), SIZE_MAX);
  for (std::size_t i = 0; i < batch.events.size(); ++i) {
    if (!identities[i].has_id) {
      continue;
    }
    if (n == keys.size()) {
      keys.emplace_back();
    }
    render_event_key(tmpl, batch.events[i], identities[i], consumer, keys[n]);
    key_of[i] = n++;
  }
  keys.resize(n);
}

std::uint64_t dedup_key_hash(std::string_view dedup_key) { return hash64(dedup_key, 0x6b); }

bool KeyOwners::collides(std::string_view dedup_key, std::uint64_t id_hash) {
  bool inserted = false;
  std::uint64_t& owner = m_owner.find_or_insert(dedup_key_hash(dedup_key), inserted);
  if (inserted) {
    owner = id_hash;
    return false;
  }
  return owner != id_hash;
}

void render_event_key(const KeyTemplate& tmpl, const Event& event, const Identity& identity, std::string_view consumer,
                      std::string& out) {
  KeyValues values{identity.id,
                   identity.type,
                   identity.entity,
                   event.topic,
                   event.partition,
                   event.offset,
                   event.key.value_or(std::string_view{}),
                   consumer,
                   identity.extra};
  render_key(tmpl, values, out);
}

Example example_of(const Event& event, const Identity& identity, std::string_view dedup_key, std::string note) {
  Example ex;
  ex.event_id = std::string(identity.id);
  ex.topic = std::string(event.topic);
  ex.partition = event.partition;
  ex.offset = event.offset;
  ex.timestamp_ms = event.timestamp_ms;
  ex.dedup_key = escape_non_utf8(dedup_key); // a key may be bytes (Java-serialized)
  ex.note = std::move(note);
  ex.seq = event.seq;
  return ex;
}

Identifier::Identifier(IdentifyOptions options) : m_impl(std::make_unique<Impl>(std::move(options))) {}
Identifier::~Identifier() = default;

void Identifier::identify(const EventBatch& batch, std::vector<Identity>& out) {
  m_impl->arena.reset();
  m_impl->extra_values.clear();
  m_impl->extra_values.reserve(batch.events.size() * m_impl->options.extra.size());
  out.clear();
  out.reserve(batch.events.size());
  for (const auto& event : batch.events) {
    out.push_back(m_impl->identify(event));
  }
}

Identity Identifier::identify_one(const Event& event) {
  m_impl->arena.reset();
  m_impl->extra_values.clear();
  m_impl->extra_values.reserve(m_impl->options.extra.size());
  return m_impl->identify(event);
}

} // namespace dedupctl::core
