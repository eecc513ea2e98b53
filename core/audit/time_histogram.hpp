#pragma once

#include "core/audit/coverage.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dedupctl::core {

// Coverage states over event time in at most k_buckets buckets, for charts: buckets start one
// minute wide and double (merging pairs) whenever an event would not fit, so memory is fixed and
// every event is counted once.
class TimeHistogram {
public:
  static constexpr std::size_t k_buckets = 48;
  void add(std::int64_t timestamp_ms, Coverage state);
  bool empty() const { return m_counts.empty(); }
  std::int64_t origin_ms() const { return m_origin; }
  std::int64_t width_ms() const { return m_width; }
  const std::vector<std::array<std::int64_t, k_coverage_states>>& buckets() const { return m_counts; }

private:
  void coarsen();
  std::int64_t m_origin = 0;
  std::int64_t m_width = 60'000;
  std::vector<std::array<std::int64_t, k_coverage_states>> m_counts;
};

} // namespace dedupctl::core
