#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace dedupctl::core {

// The offsets of one partition seen so far, as sorted disjoint [first, last] runs. A dump read in
// order costs one run per gap (compaction, transaction markers); an offset below the highest seen
// is found by binary search. Used to tell a record read twice (two dumps concatenated) from a new one.
class OffsetSet {
public:
  // Adds `offset`; false when it was already there.
  bool insert(std::int64_t offset) {
    if (m_runs.empty() || offset > m_runs.back().second + 1) {
      m_runs.emplace_back(offset, offset);
      return true;
    }
    if (offset == m_runs.back().second + 1) {
      ++m_runs.back().second;
      return true;
    }
    // The first run that ends at or after offset - 1 (a run it may extend or lie in).
    auto it = std::lower_bound(m_runs.begin(), m_runs.end(), offset,
                               [](const Run& run, std::int64_t value) { return run.second + 1 < value; });
    if (it->first <= offset && offset <= it->second) {
      return false;
    }
    if (it->second + 1 == offset) {
      ++it->second;
      auto next = it + 1;
      if (next != m_runs.end() && next->first == offset + 1) {
        it->second = next->second;
        m_runs.erase(next);
      }
    } else if (it->first == offset + 1) {
      --it->first;
    } else {
      m_runs.insert(it, Run{offset, offset});
    }
    return true;
  }

  bool contains(std::int64_t offset) const {
    auto it = std::lower_bound(m_runs.begin(), m_runs.end(), offset,
                               [](const Run& run, std::int64_t value) { return run.second < value; });
    return it != m_runs.end() && it->first <= offset;
  }

  std::size_t runs() const { return m_runs.size(); }

private:
  using Run = std::pair<std::int64_t, std::int64_t>;
  std::vector<Run> m_runs;
};

} // namespace dedupctl::core
