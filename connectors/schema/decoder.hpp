#pragma once

#include "connectors/schema/source.hpp"
#include "core/identity/payload_decoder.hpp"

#include <map>
#include <memory>
#include <mutex>

namespace dedupctl::connectors::schema {

class Compiled;

// The decoder the identify stage is handed: fetches each schema id once (with its references) from
// its source, compiles it, and decodes framed records by it. One lock around it all: decoding is
// in the identify stage's one thread in every command.
class SchemaDecoder : public core::PayloadDecoder {
public:
  explicit SchemaDecoder(std::unique_ptr<SchemaSource> source);
  ~SchemaDecoder() override;

  std::string decode(const core::WireFrame& frame, std::string& json) const override;
  std::string describe() const override;

  // The schemas fetched so far (with their references, each reference with its id), for `schemas
  // export`.
  std::vector<RegisteredSchema> fetched() const;
  // Fetches and compiles `id` now; "" or why it cannot be used (unknown, or not a usable schema).
  std::string prepare(std::uint32_t id) const;

private:
  struct Entry {
    std::unique_ptr<Compiled> compiled;
    std::string error; // why the id cannot be decoded with, when compiled is null
    std::string type;
  };
  Entry& entry(std::uint32_t id) const;
  RegisteredSchema resolve(const Reference& reference) const;

  mutable std::mutex m_mutex;
  std::unique_ptr<SchemaSource> m_source;
  mutable std::map<std::uint32_t, Entry> m_entries;
  mutable std::map<std::uint32_t, RegisteredSchema> m_fetched;
  mutable std::map<std::pair<std::string, std::int64_t>, std::uint32_t> m_reference_ids; // (subject, version)
};

} // namespace dedupctl::connectors::schema
