#pragma once

#include "core/identity/field_spec.hpp"
#include "core/identity/template_filter.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dedupctl::core {

// A dedup key template, fmt-style: "dedup:billing:{event_id}". Placeholders: {event_id},
// {type}, {entity}, {topic}, {partition}, {offset}, {key}, {consumer}, {header:NAME},
// {json:/pointer}; "{{" and "}}" are literal braces (Redis Cluster hash tags: "{{billing}}:{event_id}").
// A placeholder takes filters after '|', applied in order: "{event_id|json-ascii|md5}" (template_filter).
class KeyTemplate {
public:
  enum class Part { Literal, EventId, Type, Entity, Topic, Partition, Offset, Key, Consumer, Field };
  struct Segment {
    Part part = Part::Literal;
    std::string text;                    // the literal, or the placeholder as written
    std::size_t field = 0;               // index into fields() for Part::Field
    std::vector<TemplateFilter> filters; // applied in order to the placeholder's value
  };

  // Throws UsageError naming the flag, the template and the bad placeholder.
  static KeyTemplate parse(std::string_view text, std::string_view flag = "--key-template");

  const std::string& text() const { return m_text; }
  const std::vector<Segment>& segments() const { return m_segments; }
  // header: and json: placeholders, evaluated per event by the identify stage.
  const std::vector<FieldSpec>& fields() const { return m_fields; }
  bool uses(Part part) const;
  // Whether two distinct event ids always render two keys: Injective when a segment holds the id
  // whole or through byte-exact filters (digests, hex, base64); ValidUtf8 when the best one passes it
  // through json, json-ascii or java first, which turn bytes that are not UTF-8 into U+FFFD; No for
  // lower or upper, or without {event_id}. A key that is not injective is checked for collisions.
  enum class Injectivity { Injective, ValidUtf8, No };
  Injectivity event_id_injectivity() const;
  // The whole rendered key Java-serialized (a String through Java's ObjectOutputStream), as Spring's
  // default RedisTemplate writes Camel's string keys: a property of the layout, not of the text.
  void serialize_as_java() { m_java = true; }
  bool java_serialized() const { return m_java; }

private:
  friend KeyTemplate after_fields_of(const KeyTemplate& first, const KeyTemplate& second);
  bool m_java = false;
  std::string m_text;
  std::vector<Segment> m_segments;
  std::vector<FieldSpec> m_fields;
};

// Whether `event_id`'s key may be another id's too, by the template's injectivity: always when it is
// not injective, for a ValidUtf8 one only when the id is not UTF-8 or holds U+FFFD.
bool key_may_collide(KeyTemplate::Injectivity injectivity, std::string_view event_id);
inline bool key_may_collide(const KeyTemplate& tmpl, std::string_view event_id) {
  return key_may_collide(tmpl.event_id_injectivity(), event_id);
}

// Two templates rendered from one Identity (a dedup key and an effect's key): the identify stage
// evaluates `first`'s fields, then `second`'s, into its extra values; after_fields_of gives `second`
// with its field placeholders indexed after `first`'s, to render from them.
std::vector<FieldSpec> joint_fields(const KeyTemplate& first, const KeyTemplate& second);
KeyTemplate after_fields_of(const KeyTemplate& first, const KeyTemplate& second);

// The values a template is rendered from, for one event.
struct KeyValues {
  std::string_view event_id;
  std::string_view type;
  std::string_view entity;
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::string_view key;
  std::string_view consumer;
  const std::string_view* fields = nullptr; // one per template field, in order
};

// Appends the rendered key to `out` (cleared first).
void render_key(const KeyTemplate& tmpl, const KeyValues& values, std::string& out);

} // namespace dedupctl::core
