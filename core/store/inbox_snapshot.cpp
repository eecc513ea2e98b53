#include "core/store/inbox_snapshot.hpp"

#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include "core/util/time.hpp"

#include <charconv>
#include <fmt/format.h>
#include <vector>

namespace dedupctl::core {

std::string format_inbox_snapshot_header(const InboxSnapshotHeader& header) {
  return fmt::format("{}\ttaken_at={}\tstore={}\ttable={}", k_inbox_snapshot_magic, header.taken_at_ms, header.store,
                     header.table);
}

bool parse_inbox_snapshot_header(std::string_view line, InboxSnapshotHeader& header, std::string& error) {
  if (!line.starts_with(k_inbox_snapshot_magic)) {
    error = "not a dedupctl inbox snapshot";
    return false;
  }
  bool has_time = false;
  std::size_t pos = k_inbox_snapshot_magic.size();
  while (pos < line.size()) {
    std::size_t start = line[pos] == '\t' ? pos + 1 : pos;
    std::size_t tab = line.find('\t', start);
    std::string_view field = line.substr(start, tab == std::string_view::npos ? std::string_view::npos : tab - start);
    if (field.starts_with("taken_at=")) {
      has_time = parse_whole(field.substr(9), header.taken_at_ms);
    } else if (field.starts_with("store=")) {
      header.store = std::string(field.substr(6));
    } else if (field.starts_with("table=")) {
      header.table = std::string(field.substr(6));
    }
    pos = tab == std::string_view::npos ? line.size() : tab;
  }
  if (!has_time) {
    error = "the inbox snapshot header has no taken_at=MS";
  }
  return has_time;
}

namespace {

// COPY text format: \N is NULL; \t \n \r \\ and \b \f \v are escapes. Fields without a backslash
// (nearly all) are copied as they are.
bool copy_field(std::string_view raw, std::string& value, bool& null) {
  null = raw == "\\N";
  value.clear();
  if (null) {
    return true;
  }
  if (raw.find('\\') == std::string_view::npos) {
    value.assign(raw);
    return true;
  }
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '\\') {
      value += raw[i];
      continue;
    }
    if (++i >= raw.size()) {
      return false;
    }
    switch (raw[i]) {
    case 't':
      value += '\t';
      break;
    case 'n':
      value += '\n';
      break;
    case 'r':
      value += '\r';
      break;
    case 'b':
      value += '\b';
      break;
    case 'f':
      value += '\f';
      break;
    case 'v':
      value += '\v';
      break;
    default:
      value += raw[i];
    }
  }
  return true;
}

bool copy_field(std::string_view raw, std::optional<std::string>& out) {
  std::string value;
  bool null = false;
  if (!copy_field(raw, value, null)) {
    return false;
  }
  if (null) {
    out.reset();
  } else {
    out = std::move(value);
  }
  return true;
}

} // namespace

bool split_copy_fields(std::string_view line, std::string_view* fields, std::size_t n) {
  std::size_t pos = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto tab = line.find('\t', pos);
    if ((tab == std::string_view::npos) != (i + 1 == n)) {
      return false;
    }
    fields[i] = line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos);
    pos = tab + 1;
  }
  return true;
}

bool parse_inbox_row(std::string_view line, InboxRow& row, std::string& error) {
  std::vector<std::string_view> fields;
  std::size_t pos = 0;
  while (true) {
    auto tab = line.find('\t', pos);
    fields.push_back(line.substr(pos, tab == std::string_view::npos ? std::string_view::npos : tab - pos));
    if (tab == std::string_view::npos) {
      break;
    }
    pos = tab + 1;
  }
  if (fields.size() != 4) {
    error = fmt::format("expected 4 tab-separated columns (event id, consumer, processed_at, status), got {}",
                        fields.size());
    return false;
  }
  std::optional<std::string> id;
  std::optional<std::string> processed_at;
  if (!copy_field(fields[0], id) || !id || !copy_field(fields[1], row.consumer) ||
      !copy_field(fields[2], processed_at) || !copy_field(fields[3], row.status)) {
    error = "a bad COPY escape or a NULL event id";
    return false;
  }
  row.event_id = std::move(*id);
  row.processed_at_ms.reset();
  if (processed_at) {
    try {
      row.processed_at_ms = parse_time(*processed_at, "processed_at");
    } catch (const UsageError& e) {
      error = e.what();
      return false;
    }
  }
  return true;
}

} // namespace dedupctl::core

namespace dedupctl::core {

bool parse_inbox_load_row(std::string_view line, InboxLoadRow& row) {
  std::string_view fields[3];
  bool null = false;
  if (!split_copy_fields(line, fields, 3) || !copy_field(fields[0], row.event_id, null) || null) {
    return false;
  }
  row.processed_at_ms.reset();
  if (fields[1] != "\\N") {
    std::int64_t us = 0;
    if (!parse_whole(fields[1], us)) {
      return false;
    }
    row.processed_at_ms = epoch_ms_of_us(us);
  }
  return copy_field(fields[2], row.status, null);
}

} // namespace dedupctl::core
