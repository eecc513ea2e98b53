#include "connectors/file/snapshot_store.hpp"

#include "connectors/file/text.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace dedupctl::connectors::file {

SnapshotStore::SnapshotStore(const std::string& path) {
  refuse_directory(path, "--store file:");
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw UsageError(fmt::format("cannot read snapshot {}: {}; check --store file:PATH", path, std::strerror(errno)));
  }
  std::string line;
  std::string error;
  if (!std::getline(in, line) || !core::parse_snapshot_header(line, m_header, error)) {
    throw UsageError(fmt::format("{}:1: {}", path, error.empty() ? "empty file" : error));
  }
  core::SnapshotEntry entry;
  for (std::int64_t number = 2; std::getline(in, line); ++number) {
    if (line.empty()) {
      continue;
    }
    if (!core::parse_snapshot_entry(line, entry, error)) {
      throw UsageError(fmt::format("{}:{}: {}", path, number, error));
    }
    m_records[entry.key] = Record{entry.pttl_ms, entry.value};
  }
}

void SnapshotStore::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  out.assign(keys.size(), core::RecordState{});
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto it = m_records.find(keys[i]);
    if (it == m_records.end()) {
      continue;
    }
    out[i].kind = core::RecordState::Kind::Present;
    out[i].pttl_ms = it->second.pttl_ms;
    out[i].value = it->second.value;
  }
}

} // namespace dedupctl::connectors::file
