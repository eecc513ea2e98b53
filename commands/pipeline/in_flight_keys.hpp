#pragma once

#include "core/util/flat_map.hpp"

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace dedupctl::commands {

// The dedup keys of a replay's chunks still in flight (claimed, not yet settled), so that a later
// chunk does not ask the placement for them again: its event comes later in the range, so it is a
// duplicate whatever the earlier claim finds, and asking again would only meet this run's own claim.
// A chunk's keys are added once it is built and drop out when it finishes; chunks finish in order,
// oldest first. The class keeps views of the chunk's keys, its hashes and its own index (a key's hash
// → the first key of that hash, + 1), which must stay where they are until the chunk finishes.
class InFlightKeys {
public:
  // Whether a chunk in flight has `key`. One probe of the run's index of hashes: only a hash a chunk
  // in flight has (a duplicate, or a rare 64-bit collision) looks at the chunks' keys.
  bool has(const std::string& key, std::uint64_t hash) const;
  // A chunk just built, newer than every one in flight.
  void add(std::uint64_t seq, const std::vector<std::string>& keys, const std::vector<std::uint64_t>& hashes,
           const core::FlatHashMap<std::uint32_t>& index);
  // The oldest chunk in flight finished; the newest, `seq`, was dropped unclaimed (a run that stops).
  void finish_oldest();
  void drop_newest(std::uint64_t seq);
  std::size_t chunks() const { return m_chunks.size(); }
  // Entries in the index of hashes, stale ones included (for the tests of its rebuild).
  std::size_t indexed() const { return m_index.size(); }

private:
  struct Chunk {
    std::uint64_t seq;
    const std::vector<std::string>* keys;
    const std::vector<std::uint64_t>* hashes;
    const core::FlatHashMap<std::uint32_t>* index;
  };
  void record(const Chunk& chunk);

  std::deque<Chunk> m_chunks;
  // A key's hash → the seq of the latest chunk with it: an entry older than the oldest chunk in flight
  // is a finished chunk's and counts as absent. Entries are never removed one by one; once the index
  // holds four times what is in flight it is built again from the chunks in flight.
  core::FlatHashMap<std::uint64_t> m_index;
};

} // namespace dedupctl::commands
