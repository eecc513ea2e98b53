#include "core/audit/time_histogram.hpp"

namespace dedupctl::core {

void TimeHistogram::coarsen() {
  std::int64_t width = m_width * 2;
  std::int64_t origin = m_origin - ((m_origin % width) + width) % width;
  std::vector<std::array<std::int64_t, k_coverage_states>> merged;
  for (std::size_t i = 0; i < m_counts.size(); ++i) {
    auto j = static_cast<std::size_t>((m_origin + static_cast<std::int64_t>(i) * m_width - origin) / width);
    if (merged.size() <= j) {
      merged.resize(j + 1, std::array<std::int64_t, k_coverage_states>{});
    }
    for (std::size_t s = 0; s < k_coverage_states; ++s) {
      merged[j][s] += m_counts[i][s];
    }
  }
  m_counts = std::move(merged);
  m_origin = origin;
  m_width = width;
}

void TimeHistogram::add(std::int64_t timestamp_ms, Coverage state) {
  if (timestamp_ms < 0) {
    return; // no timestamp: not on a time axis
  }
  if (m_counts.empty()) {
    m_origin = timestamp_ms - timestamp_ms % m_width;
    m_counts.resize(1, std::array<std::int64_t, k_coverage_states>{});
  }
  while (timestamp_ms < m_origin) {
    if (m_counts.size() < k_buckets) {
      m_counts.insert(m_counts.begin(), std::array<std::int64_t, k_coverage_states>{});
      m_origin -= m_width;
    } else {
      coarsen();
    }
  }
  auto index = static_cast<std::size_t>((timestamp_ms - m_origin) / m_width);
  while (index >= k_buckets) {
    coarsen();
    index = static_cast<std::size_t>((timestamp_ms - m_origin) / m_width);
  }
  if (m_counts.size() <= index) {
    m_counts.resize(index + 1, std::array<std::int64_t, k_coverage_states>{});
  }
  ++m_counts[index][static_cast<std::size_t>(state)];
}

} // namespace dedupctl::core
