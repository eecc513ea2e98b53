#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/source/group_kind.hpp"
#include "core/source/partition.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dedupctl::core {

// Where a range's events came from: a cluster's topics, or a file (a kcat dump, a sink read back).
enum class SourceKind { Kafka, File };
std::string_view to_string(SourceKind kind); // "kafka", "file": as report-v1 and digests name it

struct SourceInfo {
  SourceKind kind = SourceKind::Kafka;
  std::vector<std::string> topics; // in request order
  std::string path;                // file sources
  std::string bootstrap;           // kafka sources
  std::optional<std::string> group;
  // Set when --group names a group the cluster lists but not as a consumer group (a share group, …):
  // found by the Kafka connector only when the group committed nothing on the range's partitions.
  std::optional<GroupKindInfo> group_kind;
  std::string isolation; // kafka sources: "read_committed" or "read_uncommitted"
  std::vector<PartitionRange> partitions;
  std::int64_t invalid_lines = 0;    // file sources read with --skip-invalid
  std::int64_t repeated_records = 0; // file sources: records read again (same topic, partition, offset), dropped
  // How framed payloads were decoded and fingerprinted (--registry, --schemas); empty without.
  std::string payload_decoding;
};

// `range-clamped`: requested starts before the log start, one example per partition.
std::optional<Finding> range_clamped_finding(const SourceInfo& source, std::size_t max_examples);

// "t[0], t[1], … and N more": the first five partitions of `ranges` by name, for a message.
std::string partition_names(const std::vector<const PartitionRange*>& ranges);

struct OffsetSpec;

// Why the group's committed offsets cannot carry the requested range, for a usage error (as
// kafka-consumer-groups refuses to shift a partition without a committed offset): a SPEC that counts
// from the committed offset (`committed`, --seek -N) on a partition holding events the group never
// committed, or any --seek when the group committed nothing on these partitions (the replay window
// [seek, committed) would have no end: usually a misspelt group, or one that is no consumer group,
// `group_kind`, said as such). Partitions without events never
// need one. `specs` are the --from/--to/--seek given; nullptr for a flag not given.
std::optional<std::string> committed_offsets_missing(const SourceInfo& source, const OffsetSpec* seek,
                                                     const std::vector<const OffsetSpec*>& range_specs);

} // namespace dedupctl::core

namespace dedupctl::core {

// Folds what the source delivered into the resolved ranges: event counts, first/last timestamps,
// the effective start of time-filtered ranges, and (for sources without resolved ranges, such as
// a kcat dump) one range per partition seen.
void finalize_source(SourceInfo& source, const std::vector<PartitionPosition>& positions);

} // namespace dedupctl::core
