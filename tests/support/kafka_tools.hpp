#pragma once

// What tests, the seeder and the benches do to a Kafka cluster that the product never does: produce
// records with chosen partitions and CreateTimes, commit a group's offsets without joining it, and
// read watermarks. librdkafka directly, not the product's connector: these are test tools.

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace dedupctl::testing {

// A record to produce, with an explicit CreateTime.
struct OutgoingRecord {
  std::string topic;
  std::optional<std::int32_t> partition; // nullopt: the partitioner picks by key
  std::optional<std::string> key;
  std::optional<std::string> payload;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
  std::int64_t timestamp_ms = 0;
};

// A producer (acks=all) that counts failed deliveries; `properties` are set after its own.
// Throws std::runtime_error.
class TestProducer {
public:
  TestProducer(const std::string& bootstrap, std::int64_t timeout_ms,
               const std::vector<std::pair<std::string, std::string>>& properties = {});
  ~TestProducer();
  TestProducer(const TestProducer&) = delete;
  TestProducer& operator=(const TestProducer&) = delete;

  // Connects and learns the topic's leaders now, not at the first send: a record sent after this
  // lands within milliseconds, also on a loaded machine. Throws std::runtime_error.
  void connect(const std::string& topic);
  // Queues a record; waits for queue space when the local queue is full.
  void send(const OutgoingRecord& record);
  // Waits for every delivery report; returns how many failed, with the first error.
  std::int64_t flush(std::string& first_error);

private:
  struct State;
  std::unique_ptr<State> m_state;
};

// Commits offsets (partition, offset) for `group` without joining it. Throws std::runtime_error.
void commit_offsets(const std::string& bootstrap, const std::string& group, const std::string& topic,
                    const std::vector<std::pair<std::int32_t, std::int64_t>>& offsets);

// The (low, high) watermarks of every partition of a topic. Throws std::runtime_error.
std::vector<std::pair<std::int64_t, std::int64_t>> watermarks(const std::string& bootstrap, const std::string& topic,
                                                              std::int64_t timeout_ms = 10'000);

// A record as read back: its key and value (nullopt: null, a tombstone), its offset and timestamp.
struct ReadRecord {
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = -1;
  std::optional<std::string> key;
  std::optional<std::string> value;
};

// Every record of one partition from its start to its high watermark at the call, read_committed
// (an exactly-once changelog's aborted records left out), without a group. Throws std::runtime_error.
std::vector<ReadRecord> read_partition(const std::string& bootstrap, const std::string& topic, std::int32_t partition,
                                       std::int64_t timeout_ms = 30'000);

// Allows or denies `principal` (User:NAME) an operation ("DESCRIBE", "DESCRIBE_CONFIGS", "READ",
// "WRITE") on a topic, through an ACL; the broker must run an authorizer. Throws std::runtime_error.
void add_topic_acl(const std::string& bootstrap, const std::string& topic, const std::string& principal,
                   const std::string& operation, bool allow);

// Creates a topic with topic configs (retention.ms, cleanup.policy …). Throws std::runtime_error.
void create_topic(const std::string& bootstrap, const std::string& topic, int partitions,
                  const std::vector<std::pair<std::string, std::string>>& configs = {});

// A consumer that subscribes to `topic` in `group` as an application would (a member of the group,
// with assignments), consumes `count` records, commits what it consumed, and stays a member until
// leave() or destruction. Throws std::runtime_error.
class GroupMember {
public:
  GroupMember(const std::string& bootstrap, const std::string& group, const std::string& topic, std::int64_t count);
  ~GroupMember();
  GroupMember(const GroupMember&) = delete;
  GroupMember& operator=(const GroupMember&) = delete;
  // How many times the member's assignment changed (a rebalance) since it first got one.
  int rebalances() const;
  void leave();

private:
  struct State;
  std::unique_ptr<State> m_state;
};

// Produces `records` in one transaction of a transactional producer (`transactional_id`), then
// commits it or aborts it. A real broker only (the mock's transactions are not worth the name).
// Throws std::runtime_error.
void produce_transaction(const std::string& bootstrap, const std::string& transactional_id,
                         const std::vector<OutgoingRecord>& records, bool commit);

// True once a broker answers a metadata request within `timeout_ms`.
bool answers_metadata(const std::string& bootstrap, std::int64_t timeout_ms);

} // namespace dedupctl::testing
