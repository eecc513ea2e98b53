#include "reports/metrics.hpp"

#include <gtest/gtest.h>

#include <limits>

using namespace dedupctl;
using reports::MetricsFormat;

namespace {

reports::WatchMetrics sample() {
  reports::WatchMetrics m;
  core::PartitionGauge p{"orders", 3, {}};
  p.states[static_cast<std::size_t>(core::Coverage::Covered)] = 7;
  p.states[static_cast<std::size_t>(core::Coverage::Missing)] = 2;
  m.gauges.partitions.push_back(p);
  m.gauges.would_reapply[{"orders", "@-1h", "external"}] = 2;
  m.gauges.seconds_until_ttl_gap["orders"] = std::numeric_limits<double>::infinity();
  m.ttl = {86400, "flag"};
  m.retention["orders"] = {604800, "broker"};
  m.counters["orders"].log_duplicates = 4;
  m.up = {{"kafka", true}, {"redis", false}};
  m.lookup_seconds.observe(0.0007);
  m.lookup_seconds.observe(3);
  return m;
}

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

} // namespace

TEST(Metrics, PrometheusTextHasEveryStateOfEveryPartitionAndTheFixedNames) {
  auto text = reports::render_metrics(sample(), MetricsFormat::Prometheus);
  EXPECT_TRUE(has_line(text, "dedupctl_events{topic=\"orders\",partition=\"3\",state=\"covered\"} 7")) << text;
  EXPECT_TRUE(has_line(text, "dedupctl_events{topic=\"orders\",partition=\"3\",state=\"missing\"} 2"));
  EXPECT_TRUE(has_line(text, "dedupctl_events{topic=\"orders\",partition=\"3\",state=\"no_id\"} 0"));
  EXPECT_TRUE(
      has_line(text, "dedupctl_replay_would_reapply{topic=\"orders\",seek=\"@-1h\",side_effects=\"external\"} 2"));
  EXPECT_TRUE(has_line(text, "dedupctl_seconds_until_ttl_gap{topic=\"orders\"} +Inf"));
  EXPECT_TRUE(has_line(text, "dedupctl_ttl_seconds{source=\"flag\"} 86400"));
  EXPECT_TRUE(has_line(text, "dedupctl_retention_seconds{topic=\"orders\",source=\"broker\"} 604800"));
  EXPECT_TRUE(has_line(text, "# TYPE dedupctl_log_duplicates_total counter"));
  EXPECT_TRUE(has_line(text, "dedupctl_log_duplicates_total{topic=\"orders\"} 4"));
  EXPECT_TRUE(has_line(text, "dedupctl_up{system=\"redis\"} 0"));
  EXPECT_TRUE(has_line(text, "dedupctl_up{system=\"kafka\"} 1"));
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
}

TEST(Metrics, HistogramBucketsAreCumulative) {
  auto text = reports::render_metrics(sample(), MetricsFormat::Prometheus);
  EXPECT_TRUE(has_line(text, "dedupctl_lookup_duration_seconds_bucket{le=\"0.0005\"} 0")) << text;
  EXPECT_TRUE(has_line(text, "dedupctl_lookup_duration_seconds_bucket{le=\"0.001\"} 1"));
  EXPECT_TRUE(has_line(text, "dedupctl_lookup_duration_seconds_bucket{le=\"2.5\"} 1"));
  EXPECT_TRUE(has_line(text, "dedupctl_lookup_duration_seconds_bucket{le=\"5\"} 2"));
  EXPECT_TRUE(has_line(text, "dedupctl_lookup_duration_seconds_bucket{le=\"+Inf\"} 2"));
  EXPECT_TRUE(has_line(text, "dedupctl_lookup_duration_seconds_count 2"));
}

TEST(Metrics, OpenMetricsNamesCounterFamiliesWithoutTotalAndEndsWithEof) {
  auto text = reports::render_metrics(sample(), MetricsFormat::OpenMetrics);
  EXPECT_TRUE(has_line(text, "# TYPE dedupctl_log_duplicates counter")) << text;
  EXPECT_TRUE(has_line(text, "dedupctl_log_duplicates_total{topic=\"orders\"} 4"));
  EXPECT_TRUE(text.ends_with("\n# EOF\n"));
  EXPECT_EQ(reports::negotiate_metrics_format("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            MetricsFormat::OpenMetrics);
  EXPECT_EQ(reports::negotiate_metrics_format("text/plain"), MetricsFormat::Prometheus);
  EXPECT_EQ(reports::negotiate_metrics_format(""), MetricsFormat::Prometheus);
}

TEST(Metrics, LabelValuesAreEscaped) {
  reports::WatchMetrics m;
  m.counters["a\"b\\c\nd"] = {};
  auto text = reports::render_metrics(m, MetricsFormat::Prometheus);
  EXPECT_NE(text.find("{topic=\"a\\\"b\\\\c\\nd\"}"), std::string::npos) << text;
}

TEST(Metrics, UnknownFiguresAreLeftOutNotZero) {
  reports::WatchMetrics m;
  m.retention["orders"] = {std::nullopt, "unknown"};
  auto text = reports::render_metrics(m, MetricsFormat::Prometheus);
  EXPECT_EQ(text.find("dedupctl_retention_seconds{"), std::string::npos);
  EXPECT_EQ(text.find("dedupctl_ttl_seconds{"), std::string::npos);
  EXPECT_EQ(text.find("\ndedupctl_last_refresh_timestamp_seconds "), std::string::npos);
}
