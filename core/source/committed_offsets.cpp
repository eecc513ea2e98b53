#include "core/source/committed_offsets.hpp"

#include "core/source/range.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"

#include <fmt/format.h>

#include <set>

namespace dedupctl::core {

std::vector<CommittedOffset> parse_committed_csv(std::string_view text, std::string_view name, std::string_view group) {
  constexpr const char* k_expected = "expected topic,partition,offset rows as kafka-consumer-groups --reset-offsets "
                                     "--to-current --dry-run --export prints them";
  std::vector<CommittedOffset> out;
  std::set<std::pair<std::string, std::int32_t>> seen;
  std::set<std::string, std::less<>> other_groups;
  std::size_t line_number = 0;
  for (auto line : split(text, '\n')) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.empty()) {
      continue;
    }
    auto fields = split(line, ',');
    auto fail = [&](const std::string& why) {
      throw UsageError(fmt::format("--committed {}:{}: {}; {}", name, line_number, why, k_expected));
    };
    if (fields.size() != 3 && fields.size() != 4) {
      fail(fmt::format("expected 3 or 4 comma-separated fields, found {}", fields.size()));
    }
    if (fields.size() == 4) {
      if (fields[0] != group) {
        other_groups.emplace(fields[0]);
        continue;
      }
      fields.erase(fields.begin());
    }
    CommittedOffset row;
    row.topic = std::string(fields[0]);
    if (row.topic.empty()) {
      fail("the topic is empty");
    }
    if (!parse_whole(fields[1], row.partition) || row.partition < 0) {
      fail(fmt::format("'{}' is not a partition number", fields[1]));
    }
    if (!parse_whole(fields[2], row.offset) || row.offset < 0) {
      fail(fmt::format("'{}' is not an offset", fields[2]));
    }
    if (!seen.emplace(row.topic, row.partition).second) {
      fail(fmt::format("{}[{}] is given twice", row.topic, row.partition));
    }
    out.push_back(std::move(row));
  }
  if (out.empty()) {
    std::string names;
    for (const auto& other : other_groups) {
      names += (names.empty() ? "" : ", ") + other;
    }
    throw UsageError(other_groups.empty()
                         ? fmt::format("--committed {} holds no offsets; {}", name, k_expected)
                         : fmt::format("--committed {} holds no offsets of group '{}' (it names {}): export them with "
                                       "kafka-consumer-groups --group {} --reset-offsets --to-current --dry-run "
                                       "--export",
                                       name, group, names, group));
  }
  return out;
}

std::vector<PartitionRange> dump_seek_ranges(const std::vector<CommittedOffset>& committed, const OffsetSpec& seek,
                                             std::int64_t now_ms) {
  std::vector<PartitionRange> out;
  for (const auto& row : committed) {
    PartitionFacts facts;
    facts.log_start = 0;
    facts.log_end = k_offset_max; // unknown until read
    facts.committed = row.offset;
    auto resolved = resolve_offset(seek, SpecRole::Seek, facts, true, now_ms);
    PartitionRange range;
    range.topic = row.topic;
    range.partition = row.partition;
    range.committed = row.offset;
    range.seek = resolved.offset;
    range.seek_timestamp = resolved.timestamp_filter;
    out.push_back(std::move(range));
  }
  return out;
}

std::optional<std::string> dump_partitions_without_offsets(const SourceInfo& source, std::string_view name) {
  std::vector<const PartitionRange*> lacking;
  std::size_t holding = 0;
  for (const auto& range : source.partitions) {
    if (range.events == 0) {
      continue;
    }
    ++holding;
    if (!range.committed) {
      lacking.push_back(&range);
    }
  }
  if (lacking.empty()) {
    return std::nullopt;
  }
  std::string group = source.group.value_or("G");
  return fmt::format("--committed {} has no offset of group '{}' for {} ({} of {} partitions the dump holds events "
                     "of): the replay window [seek, committed) there would have no end. Export every partition with "
                     "kafka-consumer-groups --group {} --all-topics --reset-offsets --to-current --dry-run --export",
                     name, group, partition_names(lacking), lacking.size(), holding, group);
}

} // namespace dedupctl::core
