#include "core/source/source_info.hpp"

#include "core/source/offset_spec.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

std::string_view to_string(SourceKind kind) { return kind == SourceKind::File ? "file" : "kafka"; }

std::string partition_names(const std::vector<const PartitionRange*>& ranges) {
  constexpr std::size_t k_named = 5;
  std::string names;
  for (std::size_t i = 0; i < ranges.size() && i < k_named; ++i) {
    names += fmt::format("{}{}[{}]", i ? ", " : "", ranges[i]->topic, ranges[i]->partition);
  }
  if (ranges.size() > k_named) {
    names += fmt::format(" and {} more", ranges.size() - k_named);
  }
  return names;
}

std::optional<std::string> committed_offsets_missing(const SourceInfo& source, const OffsetSpec* seek,
                                                     const std::vector<const OffsetSpec*>& range_specs) {
  if (!source.group) {
    return std::nullopt;
  }
  std::vector<const PartitionRange*> lacking;
  std::size_t holding = 0;
  for (const auto& range : source.partitions) {
    bool has_events = !range.log_start || !range.log_end || *range.log_start < *range.log_end;
    holding += has_events ? 1 : 0;
    if (has_events && !range.committed) {
      lacking.push_back(&range);
    }
  }
  if (lacking.empty()) {
    return std::nullopt;
  }
  auto counts_from_committed = [](const OffsetSpec* spec, bool seeking) {
    return spec && (spec->kind == SpecKind::Committed || (seeking && spec->kind == SpecKind::Relative));
  };
  const OffsetSpec* culprit = counts_from_committed(seek, true) ? seek : nullptr;
  for (const auto* spec : range_specs) {
    culprit = culprit ? culprit : (counts_from_committed(spec, false) ? spec : nullptr);
  }
  bool none_at_all = lacking.size() == holding;
  if (!culprit && !(seek && none_at_all)) {
    return std::nullopt;
  }
  if (source.group_kind) {
    return not_a_consumer_group(*source.group, *source.group_kind);
  }
  std::string names = partition_names(lacking);
  std::string why =
      culprit
          ? fmt::format("'{}' counts from the committed offset, which these partitions do not have", culprit->text)
          : fmt::format("--seek '{}' opens the replay window [seek, committed), which would have no end", seek->text);
  return fmt::format("group '{}' has no committed offset on {} ({} of {} partitions holding events): {}. Check the "
                     "group name (kafka-consumer-groups --describe --group {}), or give offsets that do not "
                     "depend on it (earliest, N, @TIME)",
                     *source.group, names, lacking.size(), holding, why, *source.group);
}

std::optional<Finding> range_clamped_finding(const SourceInfo& source, std::size_t max_examples) {
  FindingBuilder builder(max_examples);
  for (const auto& range : source.partitions) {
    if (!range.clamped) {
      continue;
    }
    builder.add(range.partition, [&] {
      Example ex;
      ex.topic = range.topic;
      ex.partition = range.partition;
      ex.offset = range.from;
      ex.timestamp_ms = range.first_timestamp.value_or(-1);
      ex.note = range.from_timestamp
                    ? fmt::format("requested a time before the oldest retained event; the log starts at offset {}",
                                  range.log_start.value_or(range.from))
                    : fmt::format("requested offset {}, the log starts at {}", range.requested_from,
                                  range.log_start.value_or(range.from));
      return ex;
    });
  }
  return builder.build("range-clamped", Severity::Warning,
                       fmt::format("{} partitions: the requested start lies before the log start", builder.count()),
                       "The events before the log start were deleted by retention and cannot be read or replayed; "
                       "the range starts at the log start instead. Check the retention if you expected them.");
}

} // namespace dedupctl::core

namespace dedupctl::core {

void finalize_source(SourceInfo& source, const std::vector<PartitionPosition>& positions) {
  for (const auto& position : positions) {
    PartitionRange* range = nullptr;
    for (auto& candidate : source.partitions) {
      if (candidate.topic == position.topic && candidate.partition == position.partition) {
        range = &candidate;
        break;
      }
    }
    if (!range) {
      source.partitions.push_back(PartitionRange{});
      range = &source.partitions.back();
      range->topic = position.topic;
      range->partition = position.partition;
      range->from = position.first_offset.value_or(0);
      range->to = position.last_offset ? *position.last_offset + 1 : range->from;
    }
    if (source.kind == SourceKind::File) {
      // A dump's partitions given before reading (--committed, for --seek): the dump decides where
      // they start and end, and a seek beyond either falls on it.
      range->from = position.first_offset.value_or(0);
      range->to = position.last_offset ? *position.last_offset + 1 : range->from;
      if (range->seek) {
        range->seek = std::clamp(*range->seek, range->from, range->to);
      }
    }
    range->events = position.events;
    range->first_timestamp = position.first_timestamp;
    range->last_timestamp = position.last_timestamp;
    if (position.stopped_at) {
      range->to = *position.stopped_at;
    }
    if (range->from_timestamp) {
      // The start was a time the broker could not resolve: the range began at the first event at
      // or after it. Everything retained is newer than the requested time when that is the log start
      // itself and older events were deleted.
      range->from = position.first_offset.value_or(range->to);
      if (range->log_start && *range->log_start > 0 && position.first_offset == range->log_start) {
        range->clamped = true;
        range->requested_from = range->from;
      }
    }
  }
  std::sort(source.partitions.begin(), source.partitions.end(), [](const PartitionRange& a, const PartitionRange& b) {
    return a.topic != b.topic ? a.topic < b.topic : a.partition < b.partition;
  });
  for (const auto& topic_range : source.partitions) {
    if (std::find(source.topics.begin(), source.topics.end(), topic_range.topic) == source.topics.end()) {
      source.topics.push_back(topic_range.topic);
    }
  }
}

} // namespace dedupctl::core
