#pragma once

#include "core/replay/replay.hpp"

#include <memory>
#include <string>

namespace dedupctl::connectors::file {

// --sink file:PATH: kcat -J NDJSON, appended (a rerun continues the file). A last line cut short by
// a killed run is cut off on open. Its position is the file's size after a flush (fsync'ed).
std::unique_ptr<core::ReplaySink> open_sink(const std::string& path);

} // namespace dedupctl::connectors::file
