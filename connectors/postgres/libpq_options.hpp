#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>

// Small helpers the PostgreSQL connector files share (internal to connectors/postgres).
namespace dedupctl::connectors::postgres::detail {

// Adds connect_timeout (libpq takes whole seconds) to a URI or key=value conninfo without one.
inline std::string with_connect_timeout(const std::string& conninfo, std::int64_t timeout_ms) {
  if (conninfo.find("connect_timeout") != std::string::npos) {
    return conninfo;
  }
  auto seconds = std::max<std::int64_t>(1, (timeout_ms + 999) / 1000);
  if (conninfo.find("://") != std::string::npos) {
    return conninfo + (conninfo.find('?') == std::string::npos ? "?" : "&") +
           fmt::format("connect_timeout={}", seconds);
  }
  return conninfo + fmt::format(" connect_timeout={}", seconds);
}

// libpq's messages run over several lines; the first says what happened.
inline std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

} // namespace dedupctl::connectors::postgres::detail
