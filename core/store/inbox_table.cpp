#include "core/store/inbox_table.hpp"

#include "core/util/fingerprint.hpp"
#include "core/util/text.hpp"

#include <cctype>
#include <charconv>
#include <climits>
#include <cstdint>
#include <stdexcept>

namespace dedupctl::core {

namespace {
std::uint64_t default_hash(std::string_view id) { return hash64(id, 0x1b); }
} // namespace

InboxTable::InboxTable(Hash hash) : m_hash(hash ? hash : default_hash) {}

void InboxTable::reserve(std::size_t rows) {
  m_rows.reserve(rows);
  m_index = FlatHashMap<std::uint32_t>(rows);
}

void InboxTable::clear() {
  m_ids.clear();
  m_rows.clear();
  m_index = FlatHashMap<std::uint32_t>();
  m_overflow.clear();
}

std::uint32_t InboxTable::intern(std::string_view status) {
  auto it = m_status_index.find(status);
  if (it != m_status_index.end()) {
    return it->second;
  }
  m_statuses.emplace_back(status);
  auto index = static_cast<std::uint32_t>(m_statuses.size() - 1);
  m_status_index.emplace(m_statuses.back(), index);
  return index;
}

bool InboxTable::insert(std::string_view id, std::optional<std::int64_t> processed_at_ms, std::string_view status) {
  bool inserted = false;
  std::uint32_t& slot = m_index.find_or_insert(m_hash(id), inserted);
  if (!inserted) {
    if (id_of(m_rows[slot - 1]) == id) {
      return false;
    }
    if (m_overflow.contains(std::string(id))) {
      return false;
    }
  }
  if (id.size() >= (1U << 24) || m_ids.size() >= (1ULL << 40)) {
    throw std::length_error("inbox ids beyond 16 MB each or 1 TB in all");
  }
  Row row{processed_at_ms.value_or(0), static_cast<std::uint64_t>(m_ids.size()) & ((1ULL << 40) - 1),
          static_cast<std::uint32_t>(id.size()) & ((1U << 24) - 1), intern(status), processed_at_ms.has_value()};
  m_ids.append(id);
  m_rows.push_back(row);
  auto index = static_cast<std::uint32_t>(m_rows.size());
  if (inserted) {
    slot = index;
  } else {
    m_overflow.emplace(std::string(id), index);
  }
  return true;
}

const InboxTable::Row* InboxTable::find(std::string_view id) const {
  const std::uint32_t* slot = m_index.find(m_hash(id));
  if (!slot) {
    return nullptr;
  }
  if (id_of(m_rows[*slot - 1]) == id) {
    return &m_rows[*slot - 1];
  }
  auto it = m_overflow.find(std::string(id));
  return it == m_overflow.end() ? nullptr : &m_rows[it->second - 1];
}

void InboxTable::states(const std::vector<std::string>& ids, std::vector<RecordState>& out) const {
  out.assign(ids.size(), RecordState{});
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const Row* row = find(ids[i]);
    if (!row) {
      continue;
    }
    out[i] = inbox_row(row->has_time ? std::optional(row->processed_at_ms) : std::nullopt, m_statuses[row->status]);
  }
}

bool inbox_id_fits(std::string_view column_type, std::string_view key) {
  if (column_type == "uuid") {
    std::string_view v = key;
    if (v.size() >= 2 && v.front() == '{' && v.back() == '}') {
      v = v.substr(1, v.size() - 2);
    }
    int digits = 0;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (std::isxdigit(static_cast<unsigned char>(v[i]))) {
        ++digits;
      } else if (!(v[i] == '-' && digits % 4 == 0 && digits > 0 && i + 1 < v.size() && v[i + 1] != '-')) {
        return false;
      }
    }
    return digits == 32;
  }
  if (column_type == "bigint" || column_type == "integer" || column_type == "smallint") {
    std::string_view v = key;
    if (!v.empty() && v.front() == '+') {
      v.remove_prefix(1);
    }
    std::int64_t value = 0;
    if (!parse_whole(v, value)) {
      return false;
    }
    std::int64_t limit = column_type == "bigint" ? INT64_MAX : column_type == "integer" ? INT32_MAX : INT16_MAX;
    return value <= limit && value >= -limit - 1;
  }
  // character(n) and character varying(n): at most n characters (code points); char(n) stores the
  // id with its trailing blanks dropped, so those do not count.
  for (std::string_view prefix : {std::string_view("character varying("), std::string_view("character(")}) {
    if (column_type.substr(0, prefix.size()) != prefix || column_type.back() != ')') {
      continue;
    }
    std::int64_t declared = 0;
    if (!parse_whole(column_type.substr(prefix.size(), column_type.size() - prefix.size() - 1), declared)) {
      return true; // not a length PostgreSQL writes: let the server decide
    }
    std::string_view v = key;
    if (prefix == "character(") {
      while (!v.empty() && v.back() == ' ') {
        v.remove_suffix(1);
      }
    }
    std::int64_t characters = 0;
    for (char c : v) {
      characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80; // a byte that starts a character
    }
    return characters <= declared;
  }
  return true;
}

} // namespace dedupctl::core
