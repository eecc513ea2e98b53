#include "reports/report.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace dedupctl::reports;
using dedupctl::testing::rendered;
using dedupctl::testing::sample;

TEST(MarkdownReport, HasHeadingsTablesAndFindings) {
  auto text = rendered(sample(), Format::Markdown);
  EXPECT_NE(text.find("# dedupctl scan\n"), std::string::npos);
  EXPECT_NE(text.find("| orders[0] | 100 | 1000 | 100 | 1000 | 900 | 900 |"), std::string::npos) << text;
  EXPECT_NE(text.find("### error `id-reuse`: 1 events reuse"), std::string::npos) << text;
}

namespace {

// An audit of a window, then Redis: what the window did, and each tier's own counts.
Report window_and_tiers() {
  Report report = sample();
  report.command = "audit";
  dedupctl::core::WindowSummary w;
  w.spec.capacity = 100;
  w.events = 10;
  w.applied = 7;
  w.caught = 1;
  w.window_misses = {1, 1};
  w.false_positives = {0, 2};
  w.exact = false;
  report.window = w;
  TierReport memory;
  memory.placement.store = "memory:";
  memory.placement.layout = "lru";
  memory.survives_restart = false;
  memory.counts = {{"covered", 3}, {"in_progress", 0}};
  memory.held_by_others = 5;
  TierReport redis;
  redis.placement.store = "redis://cache:6379";
  redis.placement.layout = "plain";
  redis.placement.ttl.span = dedupctl::core::Span::finite(3600000);
  redis.counts = {{"covered", 6}, {"in_progress", 1}};
  report.tiers = {memory, redis};
  return report;
}

} // namespace

TEST(MarkdownReport, ListsTheWindowAndTheTiersInLookupOrder) {
  auto text = rendered(window_and_tiers(), Format::Markdown);
  EXPECT_NE(text.find("## Window\n\n"), std::string::npos) << text;
  EXPECT_NE(text.find("(bounds: several partitions share it)"), std::string::npos) << text;
  EXPECT_NE(text.find("| false positives (dropped) | 0 to 2 |"), std::string::npos) << text;
  EXPECT_NE(text.find("| tier | store | layout | ttl | covered | in progress | held elsewhere |"), std::string::npos)
      << text;
  auto memory = text.find("| 1 | memory: | lru | until restart | 3 | 0 | 5 |");
  auto redis = text.find("| 2 | redis://cache:6379 | plain | 1h | 6 | 1 | 0 |");
  ASSERT_NE(memory, std::string::npos) << text;
  ASSERT_NE(redis, std::string::npos) << text;
  EXPECT_LT(memory, redis);
}

TEST(HtmlReport, ListsTheWindowAndTheTiers) {
  auto page = rendered(window_and_tiers(), Format::Html);
  EXPECT_NE(page.find("<table id=\"window\">"), std::string::npos) << page;
  EXPECT_NE(page.find("<table id=\"tiers\"><tr><th>tier</th><th>store</th>"), std::string::npos) << page;
  EXPECT_NE(page.find("<td>2</td><td>redis://cache:6379</td><td>plain</td><td>1h</td><td class=\"num\">6</td>"),
            std::string::npos)
      << page;
}

TEST(MarkdownReport, OneStoreHasNoTiersTable) {
  auto text = rendered(sample(), Format::Markdown);
  EXPECT_EQ(text.find("## Tiers"), std::string::npos);
  EXPECT_EQ(text.find("## Window"), std::string::npos);
}
