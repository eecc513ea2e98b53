#pragma once

#include "core/source/offset_spec.hpp"
#include "core/source/source_info.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// A consumer group's committed offsets given as a file, for a kcat dump, which has none: the CSV
// that `kafka-consumer-groups --group G --reset-offsets --to-current --dry-run --export` prints
// (topic,partition,offset; with several --group, group,topic,partition,offset).
namespace dedupctl::core {

struct CommittedOffset {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
};

// The rows of `group` (all rows when they name no group). Throws UsageError naming `name` and the
// line for a row that is not one, a partition given twice, or a file without offsets of the group.
std::vector<CommittedOffset> parse_committed_csv(std::string_view text, std::string_view name, std::string_view group);

// The partitions of a dump audited with --seek, one per committed offset: `seek` resolved as a
// broker would, except that a dump knows its log start and end only once read (earliest, latest and
// times are decided then: finalize_source and the audit's seek_found).
std::vector<PartitionRange> dump_seek_ranges(const std::vector<CommittedOffset>& committed, const OffsetSpec& seek,
                                             std::int64_t now_ms);

// Why a dump audited with --seek cannot be judged, once read: partitions holding events that
// --committed `name` gives no offset for (their replay window would have no end).
std::optional<std::string> dump_partitions_without_offsets(const SourceInfo& source, std::string_view name);

} // namespace dedupctl::core
