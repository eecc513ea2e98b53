#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// What kind of group a --group names, when it is not a consumer group a seek could move. librdkafka
// lists and describes consumer groups only (classic and KIP-848 consumer protocol); a share group
// (KIP-932) or a Streams group (KIP-1071) looks to it like a group that committed nothing, which
// is told apart here from the group coordinator's own records in __consumer_offsets.
namespace dedupctl::core {

enum class GroupKind {
  Share,   // KIP-932: no committed offsets; redelivers by lock timeout and delivery count
  Streams, // KIP-1071
  Other,   // a classic group of another protocol type (Kafka Connect's "connect", …)
  Listed,  // listed by the cluster but not as a consumer group; its records could not be read
};

struct GroupKindInfo {
  GroupKind kind = GroupKind::Listed;
  std::string protocol_type; // Other: the group's protocol type
  std::string unread_why;    // Listed: why __consumer_offsets could not tell the type
};

// Java's String.hashCode of the group id (UTF-16 code units of its UTF-8 bytes; an invalid byte
// counts as U+FFFD, as Java decodes it).
std::int32_t java_string_hash(std::string_view utf8);
// The __consumer_offsets partition that holds the group's records, as the group coordinator picks
// it: Utils.abs(groupId.hashCode()) % partitions.
std::int32_t coordinator_partition(std::string_view group, std::int32_t partitions);

// The group kind a __consumer_offsets record key states, when it is a record of `group`: its first
// two bytes are the record type (OffsetCommit 0-1, classic GroupMetadata 2, consumer-protocol 3-8
// and 16, share 10-15, streams 17-23), then the group id as an int16-length string.
enum class CoordinatorRecord { Offsets, Classic, Consumer, Share, Streams, Unknown };
std::optional<CoordinatorRecord> coordinator_record_of(std::string_view key, std::string_view group);

// The usage error for a --seek or a committed-relative SPEC on a group that is no consumer group.
std::string not_a_consumer_group(std::string_view group, const GroupKindInfo& info);

} // namespace dedupctl::core
