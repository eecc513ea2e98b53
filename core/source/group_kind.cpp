#include "core/source/group_kind.hpp"

#include "core/util/encoding.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

namespace {

std::uint16_t read_u16(std::string_view bytes, std::size_t at) {
  return static_cast<std::uint16_t>((static_cast<unsigned char>(bytes[at]) << 8) |
                                    static_cast<unsigned char>(bytes[at + 1]));
}

} // namespace

std::int32_t java_string_hash(std::string_view utf8) {
  std::uint32_t hash = 0; // int arithmetic wraps in Java; unsigned here, the same bits
  auto add = [&](std::uint32_t unit) { hash = hash * 31u + unit; };
  for (std::size_t i = 0; i < utf8.size();) {
    std::uint32_t cp = next_code_point(utf8, i);
    if (cp >= 0x10000) {
      cp -= 0x10000;
      add(0xD800u + (cp >> 10));
      add(0xDC00u + (cp & 0x3FFu));
    } else {
      add(cp);
    }
  }
  return static_cast<std::int32_t>(hash);
}

std::int32_t coordinator_partition(std::string_view group, std::int32_t partitions) {
  std::int32_t hash = java_string_hash(group);
  std::int32_t abs = hash == INT32_MIN ? 0 : (hash < 0 ? -hash : hash); // Kafka's Utils.abs
  return partitions > 0 ? abs % partitions : 0;
}

std::optional<CoordinatorRecord> coordinator_record_of(std::string_view key, std::string_view group) {
  if (key.size() < 4) {
    return std::nullopt;
  }
  std::uint16_t type = read_u16(key, 0);
  std::uint16_t length = read_u16(key, 2);
  if (length == 0xFFFF || key.size() < 4u + length || key.substr(4, length) != group) {
    return std::nullopt;
  }
  switch (type) {
  case 0:
  case 1:
    return CoordinatorRecord::Offsets;
  case 2:
    return CoordinatorRecord::Classic;
  case 3:
  case 4:
  case 5:
  case 6:
  case 7:
  case 8:
  case 16:
    return CoordinatorRecord::Consumer;
  case 9: // ShareGroupPartitionMetadata (4.0; removed since)
  case 10:
  case 11:
  case 12:
  case 13:
  case 14:
  case 15:
    return CoordinatorRecord::Share;
  case 17:
  case 18:
  case 19:
  case 20:
  case 21:
  case 22:
  case 23:
    return CoordinatorRecord::Streams;
  default:
    return CoordinatorRecord::Unknown;
  }
}

std::string not_a_consumer_group(std::string_view group, const GroupKindInfo& info) {
  std::string share_advice = fmt::format(
      "A share group has no committed offsets to seek from (kafka-share-groups --reset-offsets --group {} moves its "
      "start offset). It redelivers by design: a record whose acquisition lock times out, or that a consumer "
      "releases, is delivered again, up to group.share.delivery.count.limit times, and each redelivery is a "
      "duplicate its dedup placement must absorb. For that coverage, audit the range it would re-deliver without "
      "--group: --from OFFSET|@TIME --to latest",
      group);
  switch (info.kind) {
  case GroupKind::Share:
    return fmt::format("group '{}' is a share group (KIP-932), not a consumer group. {}", group, share_advice);
  case GroupKind::Streams:
    return fmt::format("group '{}' is a Kafka Streams group (KIP-1071), not a consumer group, and it committed "
                       "nothing on these partitions: kafka-streams-groups --describe --group {} shows its offsets, "
                       "and --reset-offsets there moves them. Audit a range without --group: --from OFFSET|@TIME "
                       "--to latest",
                       group, group);
  case GroupKind::Other:
    return fmt::format("group '{}' is a '{}' group, not a consumer group: it commits no offsets a seek could "
                       "start from. Audit a range without --group: --from OFFSET|@TIME --to latest",
                       group, info.protocol_type);
  case GroupKind::Listed:
    break;
  }
  return fmt::format("group '{}' is not a consumer group: the cluster lists it, but not among its consumer groups "
                     "(classic or consumer protocol), so it is most likely a share group (KIP-932) or a Streams "
                     "group; its type could not be read ({}); kafka-groups --list --group-type share names share "
                     "groups. {}",
                     group, info.unread_why, share_advice);
}

} // namespace dedupctl::core
