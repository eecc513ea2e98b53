#include "core/span.hpp"

#include "core/util/time.hpp"

namespace dedupctl::core {

std::string to_text(const Span& span) {
  if (span.is_infinite()) {
    return "infinite";
  }
  auto ms = span.finite_ms();
  return ms ? format_duration(*ms) : "unknown";
}

} // namespace dedupctl::core
