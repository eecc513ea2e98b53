#pragma once

#include "core/util/errors.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// Payloads serialized through a schema registry (Avro, Protobuf, JSON Schema). The decoding itself
// needs client libraries (connectors/schema); core only knows the frame and this interface.
namespace dedupctl::core {

// The Confluent wire format: a zero magic byte, a 4-byte big-endian schema id, the encoded record.
struct WireFrame {
  std::uint32_t schema_id = 0;
  std::string_view body;
};

// The frame of `bytes`, or nullopt when they are not framed (no magic byte 0, or fewer than 5 bytes).
std::optional<WireFrame> parse_wire_frame(std::string_view bytes);

// Why a binary payload could not be decoded either (its frame is short, or its magic byte is not 0),
// to follow "payload is ".
std::string unframed_reason(std::string_view bytes);

// The schemas could not be fetched (a registry down or refusing us): exit 3 as any other system, a
// type of its own so that watch names the registry, not the brokers, as what it cannot see.
class SchemaSourceUnreachableError : public UnreachableError {
public:
  using UnreachableError::UnreachableError;
};

// Turns a framed payload into the JSON tree of its decoded record, in a canonical form (object
// members sorted by name, null members left out) so that equal content gives equal text whatever
// schema version wrote it. Implementations are safe to call from several threads.
class PayloadDecoder {
public:
  virtual ~PayloadDecoder() = default;
  // Decodes `frame` into `json`; returns "" on success, otherwise why it could not, to follow
  // "payload is " ("framed with schema id 7, which the registry does not know", "a truncated Avro
  // record of schema id 3"). Throws SchemaSourceUnreachableError when the schemas cannot be fetched.
  virtual std::string decode(const WireFrame& frame, std::string& json) const = 0;
  // How payloads are decoded and fingerprinted, for the report.
  virtual std::string describe() const = 0;
};

} // namespace dedupctl::core
