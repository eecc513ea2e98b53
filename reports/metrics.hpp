#pragma once

#include "core/watch/watch_state.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// What `dedupctl watch` serves on /metrics: the model, and its rendering in the Prometheus text
// format 0.0.4 or OpenMetrics 1.0.0 (what the scraper's Accept header asks for). The metric names
// and labels are an interface alerts and dashboards depend on (man/dedupctl-watch.1); change them
// only with the major version.
namespace dedupctl::reports {

// Latencies in seconds, in fixed buckets (cumulative when rendered).
class LatencyHistogram {
public:
  LatencyHistogram();
  void observe(double seconds);
  const std::vector<double>& bounds() const { return m_bounds; }
  const std::vector<std::int64_t>& counts() const { return m_counts; } // per bucket, +Inf last
  double sum() const { return m_sum; }
  std::int64_t count() const { return m_count; }

private:
  std::vector<double> m_bounds;
  std::vector<std::int64_t> m_counts;
  double m_sum = 0;
  std::int64_t m_count = 0;
};

struct TopicCounters {
  std::int64_t log_duplicates = 0;
  std::int64_t id_reuse = 0;
  std::int64_t semantic_duplicates = 0;
  std::int64_t key_collisions = 0;
};

struct Figure {
  std::optional<double> seconds; // nullopt: unknown (not rendered); +inf: infinite
  std::string source;            // "flag", "broker", "estimate", "unknown"
};

struct WatchMetrics {
  core::WatchGauges gauges;
  Figure ttl;
  std::map<std::string, Figure> retention;       // by topic
  std::map<std::string, TopicCounters> counters; // by topic
  std::map<std::string, bool> up;                // by system: kafka, redis, postgres, registry
  std::optional<double> last_refresh_seconds;    // epoch seconds of the last completed refresh
  LatencyHistogram lookup_seconds;
  std::int64_t events_held = 0;
  std::int64_t bytes_held = 0;
};

enum class MetricsFormat { Prometheus, OpenMetrics };
// OpenMetrics when the Accept header asks for application/openmetrics-text, else Prometheus text.
MetricsFormat negotiate_metrics_format(std::string_view accept);
std::string_view content_type(MetricsFormat format);
std::string render_metrics(const WatchMetrics& metrics, MetricsFormat format);

} // namespace dedupctl::reports
