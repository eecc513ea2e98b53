#include "commands/pipeline/in_flight_keys.hpp"

#include <algorithm>

namespace dedupctl::commands {

bool InFlightKeys::has(const std::string& key, std::uint64_t hash) const {
  const std::uint64_t* last = m_index.find(hash);
  if (!last || m_chunks.empty() || *last < m_chunks.front().seq) {
    return false;
  }
  for (const Chunk& chunk : m_chunks) {
    const std::uint32_t* slot = chunk.index->find(hash);
    if (slot && ((*chunk.keys)[*slot - 1] == key ||
                 std::find(chunk.keys->begin(), chunk.keys->end(), key) != chunk.keys->end())) {
      return true;
    }
  }
  return false;
}

void InFlightKeys::add(std::uint64_t seq, const std::vector<std::string>& keys,
                       const std::vector<std::uint64_t>& hashes, const core::FlatHashMap<std::uint32_t>& index) {
  std::size_t live = hashes.size();
  for (const auto& chunk : m_chunks) {
    live += chunk.hashes->size();
  }
  if (m_index.size() > std::max<std::size_t>(4 * live, 1U << 16)) {
    m_index = core::FlatHashMap<std::uint64_t>(2 * live);
    for (const auto& chunk : m_chunks) {
      record(chunk);
    }
  }
  m_chunks.push_back(Chunk{seq, &keys, &hashes, &index});
  record(m_chunks.back());
}

void InFlightKeys::finish_oldest() {
  if (!m_chunks.empty()) {
    m_chunks.pop_front();
  }
}

void InFlightKeys::drop_newest(std::uint64_t seq) {
  if (!m_chunks.empty() && m_chunks.back().seq == seq) {
    m_chunks.pop_back();
  }
}

void InFlightKeys::record(const Chunk& chunk) {
  for (std::uint64_t hash : *chunk.hashes) {
    bool inserted = false;
    m_index.find_or_insert(hash, inserted) = chunk.seq;
  }
}

} // namespace dedupctl::commands
