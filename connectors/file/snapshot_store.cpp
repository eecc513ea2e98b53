#include "connectors/file/snapshot_store.hpp"

#include "connectors/file/text.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
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
  std::error_code size_error;
  if (auto size = std::filesystem::file_size(path, size_error); !size_error) {
    m_records.reserve(size / 32); // a line is rarely shorter
    m_key_bytes.reserve(size / 2);
    m_index = core::FlatHashMap<std::uint32_t>(size / 32);
  }
  core::SnapshotEntry entry;
  for (std::int64_t number = 2; std::getline(in, line); ++number) {
    if (line.empty()) {
      continue;
    }
    if (!core::parse_snapshot_entry(line, entry, error)) {
      throw UsageError(fmt::format("{}:{}: {}", path, number, error));
    }
    add(entry);
  }
}

void SnapshotStore::add(const core::SnapshotEntry& entry) {
  // Values repeat line after line ("done"): the last one is checked before the index.
  if (m_values.empty() || m_values[m_last_value] != entry.value) {
    auto [value, new_value] = m_value_index.try_emplace(entry.value, static_cast<std::uint32_t>(m_values.size()));
    if (new_value) {
      m_values.push_back(entry.value);
    }
    m_last_value = value->second;
  }
  std::int64_t pttl_ms = entry.pttl_ms.value_or(k_no_expiry);
  auto index = static_cast<std::uint32_t>(m_records.size());
  bool inserted = false;
  std::uint32_t& slot = m_index.find_or_insert(core::hash64(entry.key), inserted);
  std::optional<std::uint32_t> existing;
  if (inserted) {
    slot = index + 1;
  } else if (key_of(m_records[slot - 1]) == entry.key) {
    existing = slot - 1;
  } else if (auto [it, new_key] = m_collided.try_emplace(entry.key, index); !new_key) {
    existing = it->second; // another key has its hash (2^-64)
  }
  if (existing) {
    m_records[*existing].value = m_last_value; // the later line wins
    m_records[*existing].pttl_ms = pttl_ms;
    return;
  }
  m_records.push_back(Record{m_key_bytes.size(), static_cast<std::uint32_t>(entry.key.size()), m_last_value, pttl_ms});
  m_key_bytes.append(entry.key);
}

std::optional<std::uint32_t> SnapshotStore::find(std::string_view key) const {
  const std::uint32_t* slot = m_index.find(core::hash64(key));
  if (!slot) {
    return std::nullopt;
  }
  if (key_of(m_records[*slot - 1]) == key) {
    return *slot - 1;
  }
  auto it = m_collided.find(std::string(key));
  return it == m_collided.end() ? std::nullopt : std::optional(it->second);
}

void SnapshotStore::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  out.assign(keys.size(), core::RecordState{});
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto found = find(keys[i]);
    if (!found) {
      continue;
    }
    const Record* record = &m_records[*found];
    out[i].kind = core::RecordState::Kind::Present;
    if (record->pttl_ms != k_no_expiry) {
      out[i].pttl_ms = record->pttl_ms;
    }
    out[i].value = m_values[record->value];
  }
}

} // namespace dedupctl::connectors::file
