#pragma once

#include "core/store/record_state.hpp"
#include "core/util/flat_map.hpp"

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dedupctl::core {

// Inbox rows held in memory: a snapshot file's, a whole inbox loaded with COPY, or one batch's
// lookup result. Compact (ids in one buffer, statuses interned, a flat hash index), exact (ids are
// compared byte for byte; hashes that collide go to an overflow map), and the first row of an id
// wins (several consumers' rows for one id when the lookup is not scoped by --consumer).
class InboxTable {
public:
  using Hash = std::uint64_t (*)(std::string_view);
  explicit InboxTable(Hash hash = nullptr);

  // False when the id already had a row (the row is then ignored).
  bool insert(std::string_view id, std::optional<std::int64_t> processed_at_ms, std::string_view status);
  void clear();
  void reserve(std::size_t rows);
  std::size_t size() const { return m_rows.size(); }

  // The record state of every id, in order: present rows carry their processed_at (the coverage
  // rules apply the retention) and their status as the value, which stays valid as long as the table.
  void states(const std::vector<std::string>& ids, std::vector<RecordState>& out) const;

private:
  struct Row { // 24 bytes
    std::int64_t processed_at_ms;
    std::uint64_t id_offset : 40;
    std::uint64_t id_size : 24;
    std::uint32_t status;
    std::uint32_t has_time;
  };
  std::string_view id_of(const Row& row) const { return std::string_view(m_ids).substr(row.id_offset, row.id_size); }
  const Row* find(std::string_view id) const;
  std::uint32_t intern(std::string_view status);

  Hash m_hash;
  std::string m_ids;
  std::vector<Row> m_rows;
  FlatHashMap<std::uint32_t> m_index;                        // hash → row index + 1
  std::unordered_map<std::string, std::uint32_t> m_overflow; // ids whose hash another id took
  std::deque<std::string> m_statuses;                        // stable addresses for the views
  std::unordered_map<std::string_view, std::uint32_t> m_status_index;
};

// Whether an id column of `column_type` (PostgreSQL's format_type with the column's modifier) can
// hold `key`: a uuid in PostgreSQL's input forms (any case, optional braces, a hyphen after any group
// of four digits), an integer within the type's range, at most n characters for character(n) and
// character varying(n) (trailing blanks not counted for character(n)); any key for other types (the
// server decides).
bool inbox_id_fits(std::string_view column_type, std::string_view key);

} // namespace dedupctl::core
