#pragma once

#include "core/secrets.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dedupctl::core {

// A --store / --via URI: redis://[user:pass@]host:port[/db], redis+unix:///path[?db=N],
// postgres://… or a libpq conninfo, file:PATH (a snapshot), memory:.
struct StoreUri {
  enum class Kind { Redis, Postgres, File, Memory };
  Kind kind = Kind::Redis;
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string unix_path; // redis+unix
  int db = 0;
  std::string user;
  std::optional<std::string> password;
  std::string path;     // file:
  std::string conninfo; // postgres
  std::string text;     // as given

  // The URI for messages and reports: the password replaced by "***".
  std::string redacted() const;
};

// Throws UsageError naming the flag.
StoreUri parse_store_uri(std::string_view text, std::string_view what = "--store");

} // namespace dedupctl::core
