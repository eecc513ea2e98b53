#include "commands/pipeline/audit.hpp"
#include "core/util/errors.hpp"
#include "tests/unit/fakes.hpp"
#include "tests/unit/render_helpers.hpp"

#include <gtest/gtest.h>

#include <map>

using namespace dedupctl;
using namespace dedupctl::commands;
using dedupctl::testing::FakeDedupStore;
using dedupctl::testing::FakeEventSource;
using dedupctl::testing::with_header_id;

namespace {

constexpr std::int64_t k_hour = 3'600'000;
constexpr std::int64_t k_now = 1000 * k_hour;

using dedupctl::testing::summary;

} // namespace

TEST(AuditPipeline, LooksUpOneBatchAtATimeAndClassifies) {
  FakeEventSource source({with_header_id(0, 0, k_now - 48 * k_hour, "a", "{}"),
                          with_header_id(0, 1, k_now - 10 * 60'000, "b", "{}"),
                          with_header_id(0, 2, k_now - 10 * 60'000, "c", "{}")},
                         2);
  FakeDedupStore store;
  store.records["dedup:c"] = {50 * 60'000, "done"};
  AuditRequest request;
  request.audit.key_template = core::KeyTemplate::parse("dedup:{event_id}");
  request.audit.ttl = core::declared_ttl(core::Span::finite(k_hour));
  request.audit.policy.retention = core::Span::finite(7 * 24 * k_hour);
  auto report = run_audit(request, source, store, core::SourceInfo{}, k_now);
  EXPECT_TRUE(report.complete);
  EXPECT_EQ(store.batch_sizes, (std::vector<std::size_t>{2, 1}));
  EXPECT_EQ(summary(report, "expired"), 1);
  EXPECT_EQ(summary(report, "missing"), 1);
  EXPECT_EQ(summary(report, "expiring"), 1);
  EXPECT_EQ(report.exit_code, 1);
  ASSERT_TRUE(report.placement.has_value());
  EXPECT_EQ(report.placement->key_template, "dedup:{event_id}");
}

TEST(AuditPipeline, AStoreThatFailsMidwayGivesAnIncompleteReport) {
  FakeEventSource source({with_header_id(0, 0, k_now, "a", "{}"), with_header_id(0, 1, k_now, "b", "{}"),
                          with_header_id(0, 2, k_now, "c", "{}")},
                         1);
  FakeDedupStore store;
  store.fail_on_batch = 1;
  AuditRequest request;
  request.audit.ttl = core::declared_ttl(core::Span::finite(k_hour));
  auto report = run_audit(request, source, store, core::SourceInfo{}, k_now);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_NE(report.error->find("fake:6379"), std::string::npos);
}
