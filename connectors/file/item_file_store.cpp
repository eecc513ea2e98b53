#include "connectors/file/item_file_store.hpp"

#include "connectors/file/text.hpp"
#include "core/store/dynamodb.hpp"
#include "core/store/record_state.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>

namespace dedupctl::connectors::file {

namespace {

// The whole file, gunzipped when it is gzip (zlib reads plain files as they are).
std::string read_maybe_gzip(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  if (!in) {
    throw UsageError(fmt::format("cannot read {}: {}; check --store file:PATH", path, std::strerror(errno)));
  }
  std::string out;
  char buffer[1 << 16];
  int n = 0;
  while ((n = gzread(in, buffer, sizeof buffer)) > 0) {
    out.append(buffer, static_cast<std::size_t>(n));
  }
  int error = 0;
  const char* why = n < 0 ? gzerror(in, &error) : nullptr;
  std::string message = why ? why : "";
  gzclose(in);
  if (n < 0) {
    throw UsageError(fmt::format("{}: not readable as gzip ({}): a DynamoDB export's data file is gzipped JSON lines",
                                 path, message));
  }
  return out;
}

} // namespace

bool ItemFileStore::is_item_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  char head[64] = {};
  in.read(head, sizeof head);
  std::string_view text(head, static_cast<std::size_t>(in.gcount()));
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f && static_cast<unsigned char>(text[1]) == 0x8b) {
    return true;
  }
  auto trimmed = core::trim_front(text);
  return !trimmed.empty() && trimmed[0] == '{';
}

ItemFileStore::ItemFileStore(const std::string& path, core::RecordLayout layout) : m_layout(std::move(layout)) {
  core::as_dynamodb_layout(m_layout);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(path, ec)) {
      auto name = entry.path().filename().string();
      if (entry.is_regular_file() && name.ends_with(".json.gz") && !name.starts_with("manifest")) {
        files.push_back(entry.path());
      }
    }
    if (ec) {
      throw UsageError(fmt::format("cannot list {}: {}", path, ec.message()));
    }
    if (files.empty()) {
      throw UsageError(fmt::format("{} holds no *.json.gz data files: give the export's directory (the one with "
                                   "data/ and manifest-summary.json) or one of its files",
                                   path));
    }
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      read(file.string());
    }
  } else {
    read(path);
  }
}

void ItemFileStore::read(const std::string& path) {
  ++m_files;
  m_written_at_ms = std::max(m_written_at_ms, mtime_ms(path));
  std::string text = read_maybe_gzip(path);
  std::string error;
  auto start = core::trim_front(text);
  if (start.starts_with("{\"Item\"")) {
    std::size_t line_number = 0;
    for (auto line : core::split(text, '\n')) {
      ++line_number;
      if (core::trim(line).empty()) {
        continue;
      }
      auto record = core::parse_export_line(line, m_layout, error);
      if (!record) {
        throw UsageError(fmt::format("{}:{}: {}", path, line_number, error));
      }
      if (!record->key.empty()) {
        m_records.insert_or_assign(std::move(record->key), std::move(record->value));
      }
    }
    return;
  }
  auto records = core::parse_scan_output(text, m_layout, error);
  if (!records) {
    // Where the JSON breaks, as nlohmann's parser says it ("line 3, column 5"); simdjson does not.
    try {
      auto parsed = nlohmann::json::parse(text);
      (void)parsed;
    } catch (const nlohmann::json::parse_error& e) {
      std::string_view what = e.what();
      auto at = what.find("line ");
      error = fmt::format("not JSON at {}", what.substr(at == std::string_view::npos ? 0 : at));
    }
    throw UsageError(fmt::format("{}: {}", path, error));
  }
  for (auto& record : *records) {
    m_records.insert_or_assign(std::move(record.key), std::move(record.value));
  }
}

void ItemFileStore::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  out.assign(keys.size(), core::RecordState{});
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto it = m_records.find(keys[i]);
    if (it != m_records.end()) {
      out[i] = core::present_record(std::nullopt, it->second);
      core::read_record_value(m_layout, it->second, out[i]);
    }
  }
}

} // namespace dedupctl::connectors::file
