#include "connectors/file/inbox_snapshot_store.hpp"

#include "connectors/file/text.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <unordered_map>

namespace dedupctl::connectors::file {

bool InboxSnapshotStore::is_inbox_snapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  return in && std::getline(in, line) && line.starts_with(core::k_inbox_snapshot_magic);
}

InboxSnapshotStore::InboxSnapshotStore(const std::string& path, std::string consumer) {
  std::ifstream in;
  open_snapshot(in, path, m_header, core::parse_inbox_snapshot_header);
  std::string line;
  std::string error;
  std::unordered_map<std::string, std::set<std::string>> consumers_of;
  core::InboxRow row;
  for (std::int64_t number = 2; std::getline(in, line); ++number) {
    if (line.empty()) {
      continue;
    }
    if (!core::parse_inbox_row(line, row, error)) {
      throw UsageError(fmt::format("{}:{}: {}", path, number, error));
    }
    if (row.consumer) {
      consumers_of[row.event_id].insert(*row.consumer);
    }
    if (!consumer.empty() && row.consumer != consumer) {
      continue; // scoped by --consumer, as the live lookup is
    }
    if (row.processed_at_ms) {
      m_oldest = std::min(m_oldest.value_or(*row.processed_at_ms), *row.processed_at_ms);
    }
    m_rows.insert(row.event_id, row.processed_at_ms, row.status.value_or(""));
  }
  for (const auto& [id, consumers] : consumers_of) {
    m_shared_ids += consumers.size() > 1 ? 1 : 0;
  }
}

std::optional<std::int64_t> InboxSnapshotStore::oldest_row_age_ms(std::int64_t now_ms) {
  if (!m_oldest) {
    return std::nullopt;
  }
  return now_ms - *m_oldest;
}

void InboxSnapshotStore::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  m_rows.states(keys, out);
}

} // namespace dedupctl::connectors::file
