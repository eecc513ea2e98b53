#include "connectors/schema/decoder.hpp"

#include "connectors/schema/formats.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

namespace dedupctl::connectors::schema {

SchemaDecoder::SchemaDecoder(std::unique_ptr<SchemaSource> source) : m_source(std::move(source)) {}
SchemaDecoder::~SchemaDecoder() = default;

RegisteredSchema SchemaDecoder::resolve(const Reference& reference) const {
  // Fetched once a run, however many schemas name it.
  if (auto known = m_reference_ids.find({reference.subject, reference.version}); known != m_reference_ids.end()) {
    return m_fetched.at(known->second);
  }
  auto schema = m_source->by_reference(reference);
  if (!schema) {
    throw std::runtime_error(fmt::format("its reference {} (subject {} version {}) is unknown to {}", reference.name,
                                         reference.subject, reference.version, m_source->describe()));
  }
  m_fetched[schema->id] = *schema;
  m_reference_ids[{reference.subject, reference.version}] = schema->id;
  return *schema;
}

SchemaDecoder::Entry& SchemaDecoder::entry(std::uint32_t id) const {
  auto found = m_entries.find(id);
  if (found != m_entries.end()) {
    return found->second;
  }
  Entry fresh;
  // UnreachableError and UsageError go up: the run cannot see what it was asked to.
  auto schema = m_source->by_id(id);
  if (!schema) {
    fresh.error = fmt::format("framed with schema id {}, which {} does not know", id, m_source->describe());
  } else {
    m_fetched[id] = *schema;
    fresh.type = std::string(type_name(schema->type));
    ResolveReference resolver = [this](const Reference& reference) { return resolve(reference); };
    try {
      switch (schema->type) {
      case SchemaType::Avro:
        fresh.compiled = compile_avro(*schema, resolver);
        break;
      case SchemaType::Protobuf:
        fresh.compiled = compile_protobuf(*schema, resolver);
        break;
      case SchemaType::Json:
        fresh.compiled = compile_json_schema(*schema);
        break;
      }
    } catch (const UnreachableError&) {
      throw;
    } catch (const UsageError&) {
      throw;
    } catch (const std::exception& e) {
      fresh.error = fmt::format("framed with schema id {} ({}), which cannot be used: {}", id, fresh.type, e.what());
    }
  }
  return m_entries.emplace(id, std::move(fresh)).first->second;
}

std::string SchemaDecoder::decode(const core::WireFrame& frame, std::string& json) const {
  std::lock_guard lock(m_mutex);
  Entry& e = entry(frame.schema_id);
  if (!e.compiled) {
    return e.error;
  }
  std::string why = e.compiled->decode(frame.body, json);
  if (!why.empty()) {
    return fmt::format("framed with schema id {} ({}) but {}", frame.schema_id, e.type, why);
  }
  return "";
}

std::string SchemaDecoder::prepare(std::uint32_t id) const {
  std::lock_guard lock(m_mutex);
  return entry(id).error;
}

std::string SchemaDecoder::describe() const {
  return fmt::format("schema registry wire format, schemas from {}; a decoded record is fingerprinted by its "
                     "content (canonical JSON: members sorted by name, null members left out), not its bytes",
                     m_source->describe());
}

std::vector<RegisteredSchema> SchemaDecoder::fetched() const {
  std::lock_guard lock(m_mutex);
  std::vector<RegisteredSchema> out;
  for (const auto& [id, schema] : m_fetched) {
    out.push_back(schema);
    for (auto& reference : out.back().references) {
      auto known = m_reference_ids.find({reference.subject, reference.version});
      if (known != m_reference_ids.end()) {
        reference.id = known->second;
      }
    }
  }
  return out;
}

} // namespace dedupctl::connectors::schema
