#pragma once

#include <string>
#include <string_view>

namespace dedupctl::connectors::file {

// Throws UsageError naming `what` when `path` is a directory (which reads as an empty file).
void refuse_directory(const std::string& path, std::string_view what);

// The whole file; throws UsageError naming it and `what` (the flag or argument) when unreadable.
std::string read_text_file(const std::string& path, std::string_view what);

} // namespace dedupctl::connectors::file
