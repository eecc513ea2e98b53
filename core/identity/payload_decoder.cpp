#include "core/identity/payload_decoder.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

std::optional<WireFrame> parse_wire_frame(std::string_view bytes) {
  if (bytes.size() < 5 || bytes[0] != '\0') {
    return std::nullopt;
  }
  WireFrame frame;
  for (std::size_t i = 1; i < 5; ++i) {
    frame.schema_id = (frame.schema_id << 8) | static_cast<unsigned char>(bytes[i]);
  }
  frame.body = bytes.substr(5);
  return frame;
}

std::string unframed_reason(std::string_view bytes) {
  if (bytes.empty()) {
    return "empty";
  }
  if (bytes[0] != '\0') {
    return fmt::format("binary, not JSON, and not in the schema registry's wire format (first byte "
                       "0x{:02x}, not the magic byte 0x00)",
                       static_cast<unsigned char>(bytes[0]));
  }
  return fmt::format("truncated: {} bytes, shorter than the wire format's 5-byte header", bytes.size());
}

} // namespace dedupctl::core
