#include "core/identity/identify.hpp"

#include "core/identity/payload_decoder.hpp"
#include "core/util/encoding.hpp"
#include "core/util/fingerprint.hpp"

#include <fmt/format.h>
#include <simdjson.h>
#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

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

  Outcome value(const Event& event, std::optional<std::string_view> text, const std::string& pointer, Arena& arena,
                std::string_view& out) {
    if (!ensure_parsed(event, text)) {
      return Outcome::NotJson;
    }
    auto value = document.at_pointer(pointer);
    if (value.error()) {
      // simdjson may abandon the document after an error (its parser pointer is cleared), so the
      // next json: spec must parse the payload again rather than rewind this document.
      parsed_for = nullptr;
      auto error = value.error();
      bool missing = error == simdjson::NO_SUCH_FIELD || error == simdjson::INDEX_OUT_OF_BOUNDS ||
                     error == simdjson::INCORRECT_TYPE;
      return missing ? Outcome::Missing : Outcome::NotJson;
    }
    simdjson::ondemand::json_type type;
    if (value.type().get(type)) {
      parsed_for = nullptr;
      return Outcome::NotJson;
    }
    if (type == simdjson::ondemand::json_type::string) {
      std::string_view string;
      if (value.get_string().get(string)) {
        parsed_for = nullptr;
        return Outcome::NotJson;
      }
      out = arena.copy(string);
      return Outcome::Found;
    }
    if (type == simdjson::ondemand::json_type::number) {
      std::string_view token = value.raw_json_token();
      while (!token.empty() &&
             (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' || token.back() == '\t')) {
        token.remove_suffix(1);
      }
      out = arena.copy(token);
      return Outcome::Found;
    }
    if (type == simdjson::ondemand::json_type::null) {
      return Outcome::Missing;
    }
    return Outcome::NotScalar;
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
      Outcome outcome = document.value(event, text.text(), spec.name, arena, out);
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
