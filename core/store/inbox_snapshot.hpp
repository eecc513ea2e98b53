#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// The inbox snapshot file (dedupctl snapshot --store postgres://…): a header line, then the rows as
// PostgreSQL's COPY … TO STDOUT writes them (text format: tab-separated, \N for NULL, backslash
// escapes), four columns: event id, consumer (\N without a consumer column), processed_at (ISO,
// UTC), status (\N without a status column).
//   # dedupctl-inbox-snapshot v1	taken_at=1795305600000	store=postgres://…	table=processed_events
namespace dedupctl::core {

struct InboxSnapshotHeader {
  std::int64_t taken_at_ms = 0;
  std::string store;
  std::string table;
};

struct InboxRow {
  std::string event_id;
  std::optional<std::string> consumer;
  std::optional<std::int64_t> processed_at_ms;
  std::optional<std::string> status;
};

inline constexpr std::string_view k_inbox_snapshot_magic = "# dedupctl-inbox-snapshot v1";

std::string format_inbox_snapshot_header(const InboxSnapshotHeader& header);
bool parse_inbox_snapshot_header(std::string_view line, InboxSnapshotHeader& header, std::string& error);
// A COPY text-format line cut at its tabs into exactly n fields (still escaped); false if it has
// another count.
bool split_copy_fields(std::string_view line, std::string_view* fields, std::size_t n);
// One COPY text-format line of the four columns.
bool parse_inbox_row(std::string_view line, InboxRow& row, std::string& error);

// The three columns an audit loads (event id, processed_at as epoch microseconds, kept as the
// millisecond it falls in, status), without allocating per row once the strings have grown. A NULL
// status is "". False when malformed.
struct InboxLoadRow {
  std::string event_id;
  std::optional<std::int64_t> processed_at_ms;
  std::string status;
};
bool parse_inbox_load_row(std::string_view line, InboxLoadRow& row);

} // namespace dedupctl::core
