#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/field_spec.hpp"
#include "core/identity/key_template.hpp"

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace dedupctl::core {

struct IdentifyOptions {
  std::vector<FieldSpec> id;     // first spec that yields a value wins
  std::vector<FieldSpec> type;   // first spec that yields a value wins
  std::vector<FieldSpec> entity; // first spec that yields a value wins; may be empty
  // Every spec contributes (a missing value counts as empty). Empty: type + entity + the payload
  // with the event id's bytes taken out, so that a retry with a new id matches its original.
  std::vector<FieldSpec> semantic;
  // Further values taken per event (a key template's {header:…} and {json:…}); empty when absent.
  std::vector<FieldSpec> extra;
};

IdentifyOptions default_identify_options();

// What the identify stage learned about one event. Views are valid until the next identify().
struct Identity {
  bool has_id = false;
  std::string_view id;
  std::string_view type;
  std::string_view entity;
  std::string_view no_id_reason; // why no id could be taken, when has_id is false
  bool binary_payload = false;   // no id, and a json: spec met a binary payload (Avro, Protobuf, …)
  std::uint64_t id_hash = 0;
  std::uint64_t payload_fingerprint = 0;
  std::uint64_t semantic_hash = 0;
  const std::string_view* extra = nullptr; // one value per IdentifyOptions::extra
};

// The event's dedup key as the template renders it (the identity's id, type, entity and template
// fields, the event's coordinates and key, and the consumer), into `out`.
void render_event_key(const KeyTemplate& tmpl, const Event& event, const Identity& identity, std::string_view consumer,
                      std::string& out);

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
