#include "reports/metrics.hpp"

#include "core/audit/coverage.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace dedupctl::reports {

LatencyHistogram::LatencyHistogram()
    : m_bounds{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
      m_counts(m_bounds.size() + 1, 0) {}

void LatencyHistogram::observe(double seconds) {
  auto at = std::lower_bound(m_bounds.begin(), m_bounds.end(), seconds);
  ++m_counts[static_cast<std::size_t>(at - m_bounds.begin())];
  m_sum += seconds;
  ++m_count;
}

MetricsFormat negotiate_metrics_format(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos ? MetricsFormat::OpenMetrics
                                                                               : MetricsFormat::Prometheus;
}

std::string_view content_type(MetricsFormat format) {
  return format == MetricsFormat::OpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                              : "text/plain; version=0.0.4; charset=utf-8";
}

namespace {

// A label value: backslash, double quote and line feed escaped (both formats).
std::string label(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double value) {
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  if (std::isnan(value)) {
    return "NaN";
  }
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    return fmt::format("{}", static_cast<std::int64_t>(value));
  }
  return fmt::format("{}", value);
}

class Writer {
public:
  explicit Writer(MetricsFormat format) : m_format(format) {}
  // A family's HELP and TYPE; a counter's family is named without _total in OpenMetrics.
  void family(std::string_view name, std::string_view type, std::string_view help) {
    std::string_view family = name;
    if (type == "counter" && m_format == MetricsFormat::OpenMetrics && family.ends_with("_total")) {
      family.remove_suffix(6);
    }
    m_out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", family, help, family, type);
  }
  void sample(std::string_view name, const std::vector<std::pair<std::string_view, std::string>>& labels,
              double value) {
    m_out += name;
    if (!labels.empty()) {
      m_out += '{';
      for (std::size_t i = 0; i < labels.size(); ++i) {
        m_out += fmt::format("{}{}=\"{}\"", i ? "," : "", labels[i].first, label(labels[i].second));
      }
      m_out += '}';
    }
    m_out += ' ';
    m_out += number(value);
    m_out += '\n';
  }
  std::string finish() {
    if (m_format == MetricsFormat::OpenMetrics) {
      m_out += "# EOF\n";
    }
    return std::move(m_out);
  }

private:
  MetricsFormat m_format;
  std::string m_out;
};

} // namespace

std::string render_metrics(const WatchMetrics& m, MetricsFormat format) {
  Writer w(format);
  w.family("dedupctl_events", "gauge",
           "Events in the replayable range by coverage state (they add up to the events in range).");
  for (const auto& p : m.gauges.partitions) {
    for (int s = 0; s < core::k_coverage_states; ++s) {
      w.sample("dedupctl_events",
               {{"topic", p.topic},
                {"partition", std::to_string(p.partition)},
                {"state", std::string(core::to_string(static_cast<core::Coverage>(s)))}},
               static_cast<double>(p.states[static_cast<std::size_t>(s)]));
    }
  }
  w.family("dedupctl_replay_would_reapply", "gauge",
           "Events a seek to each --seek spec would re-apply now, by the side effects of their type.");
  for (const auto& [key, n] : m.gauges.would_reapply) {
    const auto& [topic, seek, effects] = key;
    w.sample("dedupctl_replay_would_reapply", {{"topic", topic}, {"seek", seek}, {"side_effects", effects}},
             static_cast<double>(n));
  }
  if (!m.gauges.effects.empty()) { // --effects
    w.family("dedupctl_effects", "gauge",
             "Events in the replayable range by their effect (--effects): applied, not_applied, and of those lost "
             "(marked processed, never applied) and unguarded (applied, no record guards them).");
    for (const auto& [topic, e] : m.gauges.effects) {
      for (const auto& [state, n] : {std::pair{"applied", e.applied}, std::pair{"not_applied", e.not_applied},
                                     std::pair{"lost", e.lost}, std::pair{"unguarded", e.unguarded}}) {
        w.sample("dedupctl_effects", {{"topic", topic}, {"state", state}}, static_cast<double>(n));
      }
    }
  }
  w.family("dedupctl_seconds_until_ttl_gap", "gauge",
           "Seconds until the next dedup record lapses while its event stays replayable (0: one has, +Inf: none "
           "will).");
  for (const auto& [topic, seconds] : m.gauges.seconds_until_ttl_gap) {
    w.sample("dedupctl_seconds_until_ttl_gap", {{"topic", topic}}, seconds);
  }
  w.family("dedupctl_ttl_seconds", "gauge", "The dedup records' TTL: declared (flag) or estimated from the records.");
  if (m.ttl.seconds) {
    w.sample("dedupctl_ttl_seconds", {{"source", m.ttl.source}}, *m.ttl.seconds);
  }
  w.family("dedupctl_retention_seconds", "gauge", "The topic's retention.ms in seconds (+Inf: kept forever).");
  for (const auto& [topic, figure] : m.retention) {
    if (figure.seconds) {
      w.sample("dedupctl_retention_seconds", {{"topic", topic}, {"source", figure.source}}, *figure.seconds);
    }
  }
  struct Counter {
    const char* name;
    const char* help;
    std::int64_t TopicCounters::*member;
  };
  for (const Counter& c : {
           Counter{"dedupctl_log_duplicates_total", "Events read whose id and payload an earlier event had.",
                   &TopicCounters::log_duplicates},
           Counter{"dedupctl_id_reuse_total", "Events read whose id an earlier event had with another payload.",
                   &TopicCounters::id_reuse},
           Counter{"dedupctl_semantic_duplicates_total",
                   "Events read whose semantic key an event of another id had within the window.",
                   &TopicCounters::semantic_duplicates},
           Counter{"dedupctl_key_collisions_total", "Events read whose dedup key another event id took first.",
                   &TopicCounters::key_collisions},
       }) {
    w.family(c.name, "counter", c.help);
    for (const auto& [topic, counters] : m.counters) {
      w.sample(c.name, {{"topic", topic}}, static_cast<double>(counters.*c.member));
    }
  }
  w.family("dedupctl_up", "gauge", "1 when the last request to the system succeeded.");
  for (const auto& [system, up] : m.up) {
    w.sample("dedupctl_up", {{"system", system}}, up ? 1 : 0);
  }
  w.family("dedupctl_last_refresh_timestamp_seconds", "gauge",
           "When the last lookup of every record in range completed (epoch seconds).");
  if (m.last_refresh_seconds) {
    w.sample("dedupctl_last_refresh_timestamp_seconds", {}, *m.last_refresh_seconds);
  }
  w.family("dedupctl_lookup_duration_seconds", "histogram", "The time one batch of record lookups took.");
  std::int64_t cumulative = 0;
  const auto& bounds = m.lookup_seconds.bounds();
  const auto& counts = m.lookup_seconds.counts();
  for (std::size_t i = 0; i < counts.size(); ++i) {
    cumulative += counts[i];
    w.sample("dedupctl_lookup_duration_seconds_bucket",
             {{"le", i < bounds.size() ? number(bounds[i]) : std::string("+Inf")}}, static_cast<double>(cumulative));
  }
  w.sample("dedupctl_lookup_duration_seconds_sum", {}, m.lookup_seconds.sum());
  w.sample("dedupctl_lookup_duration_seconds_count", {}, static_cast<double>(m.lookup_seconds.count()));
  w.family("dedupctl_watch_events_held", "gauge", "Events of the range the watcher holds.");
  w.sample("dedupctl_watch_events_held", {}, static_cast<double>(m.events_held));
  w.family("dedupctl_watch_bytes_held", "gauge", "The memory those events take, in bytes.");
  w.sample("dedupctl_watch_bytes_held", {}, static_cast<double>(m.bytes_held));
  return w.finish();
}

} // namespace dedupctl::reports
