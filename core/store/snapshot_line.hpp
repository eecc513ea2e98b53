#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// The snapshot file (dedupctl snapshot --output): a header line, then one record per line,
//   # dedupctl-snapshot v1	taken_at=1795305600000	store=redis://127.0.0.1:6379	match=dedup:*[	layout=NAME]
//   <key>	<remaining TTL in ms as of taken_at, or ->	<first bytes of the value>
// Keys and values are escaped (\t \n \r \\ and \xHH for other control bytes) so that any binary
// key survives.
namespace dedupctl::core {

struct SnapshotHeader {
  std::int64_t taken_at_ms = 0;
  std::string store;
  std::string match;
  std::string nodes; // the Redis servers scanned ("h1:p1,h2:p2,…"): every master of a cluster
  // The record layout the records were read with (core/store/layout; "plain" is not written): the
  // keys are its keys (a one-key layout's members), the values what snapshot_value keeps.
  std::string layout = "plain";
};

struct SnapshotEntry {
  std::string key;
  std::optional<std::int64_t> pttl_ms;
  std::string value;
};

std::string format_snapshot_header(const SnapshotHeader& header);
std::string format_snapshot_entry(const SnapshotEntry& entry);
// False with `error` set when the line is not a snapshot header/entry.
bool parse_snapshot_header(std::string_view line, SnapshotHeader& header, std::string& error);
bool parse_snapshot_entry(std::string_view line, SnapshotEntry& entry, std::string& error);

} // namespace dedupctl::core
