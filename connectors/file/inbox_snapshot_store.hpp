#pragma once

#include "core/store/dedup_store.hpp"
#include "core/store/inbox_snapshot.hpp"
#include "core/store/inbox_table.hpp"

#include <string>

namespace dedupctl::connectors::file {

// An inbox snapshot file as an inbox: the rows as they were when it was taken (audit with
// header().taken_at_ms as now). Whether the table had a unique constraint is not recorded.
class InboxSnapshotStore final : public core::InboxStore {
public:
  // Throws UsageError naming the file and line when it cannot be read or parsed.
  InboxSnapshotStore(const std::string& path, std::string consumer);

  static bool is_inbox_snapshot(const std::string& path);

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override;
  std::string kind() const override { return "file"; }
  std::optional<std::int64_t> oldest_row_age_ms(std::int64_t now_ms) override;
  std::optional<bool> has_unique_constraint() override { return std::nullopt; }
  std::int64_t ids_under_several_consumers() override { return m_shared_ids; }
  std::string lookup_method() const override { return "snapshot file"; }
  const core::InboxSnapshotHeader& header() const { return m_header; }

private:
  core::InboxSnapshotHeader m_header;
  core::InboxTable m_rows;
  std::int64_t m_shared_ids = 0;
  std::optional<std::int64_t> m_oldest;
};

} // namespace dedupctl::connectors::file
