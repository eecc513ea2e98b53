#include "core/source/group_kind.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dedupctl::core;

// The values Java 17 prints for String.hashCode() and Utils.abs(hash) % 50 of the same strings (a
// surrogate pair, non-ASCII letters, the one string whose hash is Integer.MIN_VALUE, and an invalid
// UTF-8 byte decoded as U+FFFD).
TEST(GroupKind, FindsTheCoordinatorPartitionAsKafkaDoes) {
  EXPECT_EQ(java_string_hash("shared"), -903566235);
  EXPECT_EQ(java_string_hash("billing"), -109829509);
  EXPECT_EQ(java_string_hash("\xc3\xa9lan-gr\xc3\xbc\xc3\x9f"
                             "e"),
            1302554778);
  EXPECT_EQ(java_string_hash("\xf0\x9f\x98\x80-q"), 1703757447);
  EXPECT_EQ(java_string_hash("a\xff"
                             "b"),
            2124838);
  EXPECT_EQ(java_string_hash(""), 0);
  EXPECT_EQ(coordinator_partition("shared", 50), 35);
  EXPECT_EQ(coordinator_partition("billing", 50), 9);
  EXPECT_EQ(coordinator_partition("\xc3\xa9lan-gr\xc3\xbc\xc3\x9f"
                                  "e",
                                  50),
            28);
  EXPECT_EQ(coordinator_partition("\xf0\x9f\x98\x80-q", 50), 47);
  EXPECT_EQ(java_string_hash("polygenelubricants"), INT32_MIN);
  EXPECT_EQ(coordinator_partition("polygenelubricants", 50), 0);
}

namespace {

std::string key(std::uint16_t type, const std::string& group) {
  std::string out;
  out += static_cast<char>(type >> 8);
  out += static_cast<char>(type & 0xFF);
  out += static_cast<char>(group.size() >> 8);
  out += static_cast<char>(group.size() & 0xFF);
  return out + group;
}

} // namespace

// Kafka 4.3's coordinator record keys (kafka-group-coordinator's *Key.json apiKey): the type, then the
// group id; another group's records, a short or cut key are not the group's.
TEST(GroupKind, ReadsTheRecordTypeOfTheGroupsOwnKeysOnly) {
  EXPECT_EQ(coordinator_record_of(key(11, "q"), "q"), CoordinatorRecord::Share);
  EXPECT_EQ(coordinator_record_of(key(15, "q"), "q"), CoordinatorRecord::Share);
  EXPECT_EQ(coordinator_record_of(key(17, "q"), "q"), CoordinatorRecord::Streams);
  EXPECT_EQ(coordinator_record_of(key(23, "q"), "q"), CoordinatorRecord::Streams);
  EXPECT_EQ(coordinator_record_of(key(3, "q"), "q"), CoordinatorRecord::Consumer);
  EXPECT_EQ(coordinator_record_of(key(16, "q"), "q"), CoordinatorRecord::Consumer);
  EXPECT_EQ(coordinator_record_of(key(2, "q"), "q"), CoordinatorRecord::Classic);
  EXPECT_EQ(coordinator_record_of(key(1, "q") + std::string("\0\1t", 3), "q"), CoordinatorRecord::Offsets);
  EXPECT_EQ(coordinator_record_of(key(99, "q"), "q"), CoordinatorRecord::Unknown);
  EXPECT_FALSE(coordinator_record_of(key(11, "queue"), "q"));
  EXPECT_FALSE(coordinator_record_of(key(11, "q"), "queue"));
  EXPECT_FALSE(coordinator_record_of(key(11, "queue").substr(0, 6), "queue"));
  EXPECT_FALSE(coordinator_record_of(std::string("\0\x0b", 2), "q"));
}
