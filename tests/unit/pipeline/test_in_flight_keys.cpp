#include "commands/pipeline/in_flight_keys.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <string>
#include <vector>

namespace dedupctl::commands {
namespace {

// A chunk's keys as the replay keeps them: its keys, their hashes, and its own index of them.
struct Keys {
  Keys(std::vector<std::string> k, std::vector<std::uint64_t> h) : keys(std::move(k)), hashes(std::move(h)) {
    for (std::size_t i = 0; i < hashes.size(); ++i) {
      bool inserted = false;
      std::uint32_t& slot = index.find_or_insert(hashes[i], inserted);
      if (inserted) {
        slot = static_cast<std::uint32_t>(i + 1);
      }
    }
  }
  std::vector<std::string> keys;
  std::vector<std::uint64_t> hashes;
  core::FlatHashMap<std::uint32_t> index;
};

TEST(InFlightKeys, AKeyCountsWhileItsChunkIsInFlight) {
  InFlightKeys in_flight;
  Keys first({"k-1", "k-2"}, {11, 12});
  Keys second({"k-3"}, {13});
  EXPECT_FALSE(in_flight.has("k-1", 11));
  in_flight.add(0, first.keys, first.hashes, first.index);
  in_flight.add(1, second.keys, second.hashes, second.index);
  EXPECT_TRUE(in_flight.has("k-1", 11));
  EXPECT_TRUE(in_flight.has("k-3", 13));
  EXPECT_FALSE(in_flight.has("k-4", 14));
  in_flight.finish_oldest();
  EXPECT_FALSE(in_flight.has("k-1", 11)) << "its chunk finished";
  EXPECT_TRUE(in_flight.has("k-3", 13));
  in_flight.finish_oldest();
  EXPECT_FALSE(in_flight.has("k-3", 13));
  EXPECT_EQ(in_flight.chunks(), 0U);
}

// Two keys with one 64-bit hash are told apart by the chunk's own keys.
TEST(InFlightKeys, AnotherKeyWithTheSameHashIsNotInFlight) {
  InFlightKeys in_flight;
  Keys chunk({"k-1", "k-2"}, {7, 7});
  in_flight.add(0, chunk.keys, chunk.hashes, chunk.index);
  EXPECT_TRUE(in_flight.has("k-1", 7));
  EXPECT_TRUE(in_flight.has("k-2", 7)) << "not the first key of its hash, found all the same";
  EXPECT_FALSE(in_flight.has("k-9", 7));
}

TEST(InFlightKeys, OnlyTheNewestChunkNamedIsDropped) {
  InFlightKeys in_flight;
  Keys first({"k-1"}, {1});
  Keys second({"k-2"}, {2});
  in_flight.add(4, first.keys, first.hashes, first.index);
  in_flight.add(5, second.keys, second.hashes, second.index);
  in_flight.drop_newest(4); // not the newest: nothing happens
  EXPECT_TRUE(in_flight.has("k-2", 2));
  in_flight.drop_newest(5);
  EXPECT_FALSE(in_flight.has("k-2", 2));
  EXPECT_TRUE(in_flight.has("k-1", 1));
}

// Entries are never removed one by one, yet the index stays within four times what is in flight
// (at least 64 Ki): a long run does not grow it with every key it ever replayed.
TEST(InFlightKeys, TheIndexIsBuiltAgainOnceItHoldsFourTimesWhatIsInFlight) {
  InFlightKeys in_flight;
  std::deque<Keys> chunks;
  std::uint64_t next_hash = 1;
  for (std::uint64_t seq = 0; seq < 200; ++seq) {
    std::vector<std::string> keys;
    std::vector<std::uint64_t> hashes;
    for (int i = 0; i < 1000; ++i) {
      keys.push_back("k-" + std::to_string(next_hash));
      hashes.push_back(next_hash++);
    }
    chunks.emplace_back(std::move(keys), std::move(hashes));
    in_flight.add(seq, chunks.back().keys, chunks.back().hashes, chunks.back().index);
    if (in_flight.chunks() > 2) {
      in_flight.finish_oldest();
      chunks.pop_front();
    }
    EXPECT_LE(in_flight.indexed(), (1U << 16) + 1000U) << seq;
  }
  EXPECT_TRUE(in_flight.has("k-" + std::to_string(next_hash - 1), next_hash - 1));
  EXPECT_FALSE(in_flight.has("k-1", 1)) << "finished long ago";
}

} // namespace
} // namespace dedupctl::commands
