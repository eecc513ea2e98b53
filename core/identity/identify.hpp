#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/field_spec.hpp"
#include "core/identity/key_template.hpp"
#include "core/identity/payload_decoder.hpp"
#include "core/util/flat_map.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace dedupctl::core {

struct IdentifyOptions {
  std::vector<FieldSpec> id;      // first spec that yields a value wins
  std::vector<FieldSpec> type;    // first spec that yields a value wins
  std::vector<FieldSpec> entity;  // first spec that yields a value wins; may be empty
  std::vector<FieldSpec> version; // --version (issue 63): first spec that yields a value wins; may be empty
  // Every spec contributes (a missing value counts as empty). Empty: type + entity + the payload
  // with the event id's bytes taken out, so that a retry with a new id matches its original.
  std::vector<FieldSpec> semantic;
  // Further values taken per event (a key template's {header:…} and {json:…}); empty when absent.
  std::vector<FieldSpec> extra;
  // Decodes payloads and keys in a schema registry's wire format for the json: and key-json: specs
  // and the fingerprints; none: they are read as they are.
  std::shared_ptr<const PayloadDecoder> decoder;
};

IdentifyOptions default_identify_options();

// What the identify stage learned about one event. Views are valid until the next identify().
struct Identity {
  bool has_id = false;
  std::string_view id;
  std::string_view type;
  std::string_view entity;
  std::string_view version; // --version's value, as text
  bool has_entity = false;  // a spec of --entity yielded a value
  bool has_version = false;
  std::string_view no_id_reason; // why no id could be taken, when has_id is false
  bool binary_payload = false;   // no id, and a json: spec met a binary payload (Avro, Protobuf, …)
  std::uint64_t id_hash = 0;
  std::uint64_t payload_fingerprint = 0;
  bool payload_decoded = false; // a framed payload was decoded: decoded_payload is its JSON
  std::string_view decoded_payload;
  std::uint64_t semantic_hash = 0;
  const std::string_view* extra = nullptr; // one value per IdentifyOptions::extra
};

// The event's dedup key as the template renders it (the identity's id, type, entity and template
// fields, the event's coordinates and key, and the consumer), into `out`.
void render_event_key(const KeyTemplate& tmpl, const Event& event, const Identity& identity, std::string_view consumer,
                      std::string& out);

// The dedup keys of a batch's events that have an id, rendered over the strings `keys` holds
// already (no allocation a key): keys[key_of[i]] is event i's, key_of[i] is SIZE_MAX without an id.
void render_batch_keys(const KeyTemplate& tmpl, const EventBatch& batch, const std::vector<Identity>& identities,
                       std::string_view consumer, std::vector<std::string>& keys, std::vector<std::size_t>& key_of);

// A dedup key's 64-bit hash, as the key-collision rule and the shards' digests keep it.
std::uint64_t dedup_key_hash(std::string_view dedup_key);

// The key-collision rule: the first event id rendered to a dedup key owns it; another id rendered
// to it later collides. 16 bytes a key.
class KeyOwners {
public:
  explicit KeyOwners(std::size_t expected = 16) : m_owner(expected) {}
  // Whether `dedup_key` already belongs to another id (it is taken by this one when new).
  bool collides(std::string_view dedup_key, std::uint64_t id_hash);

private:
  FlatHashMap<std::uint64_t> m_owner;
};

// A finding's example for one event: its id, topic, partition, offset and timestamp.
Example example_of(const Event& event, const Identity& identity, std::string_view dedup_key = {},
                   std::string note = {});

// Takes ids, types, entities and fingerprints of a batch. JSON is parsed at most once per event,
// and only when a json: spec is reached.
class Identifier {
public:
  explicit Identifier(IdentifyOptions options);
  ~Identifier();
  Identifier(const Identifier&) = delete;
  Identifier& operator=(const Identifier&) = delete;

  void identify(const EventBatch& batch, std::vector<Identity>& out);
  // One event; the views live until the next call of either function.
  Identity identify_one(const Event& event);

private:
  struct Impl;
  std::unique_ptr<Impl> m_impl;
};

} // namespace dedupctl::core
