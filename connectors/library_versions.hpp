#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dedupctl::connectors {

// The client libraries the executable carries, as (name, "VERSION (details)") in the order
// `dedupctl version` prints them: librdkafka (its builtin.features), hiredis, libpqxx, libpq and
// OpenSSL (what the process runs on, which may be newer than what it was built with).
std::vector<std::pair<std::string, std::string>> library_versions();

} // namespace dedupctl::connectors
