// The directory `dedupctl schemas export` writes and --schemas reads (connectors/schema/source.cpp).
#include "connectors/file/output.hpp"
#include "connectors/schema/source.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>

namespace dedupctl::connectors::schema {

void make_export_directory(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!std::filesystem::is_directory(dir, ec)) {
    throw UsageError(fmt::format("--out {}: not a directory that can be made", dir));
  }
}

void write_export(const std::string& dir, const std::vector<RegisteredSchema>& schemas) {
  for (const auto& schema : schemas) {
    file::ReportOutput out((std::filesystem::path(dir) / fmt::format("{}.json", schema.id)).string());
    std::string text = to_export_json(schema);
    std::fwrite(text.data(), 1, text.size(), out.stream());
    out.commit();
  }
}

} // namespace dedupctl::connectors::schema
