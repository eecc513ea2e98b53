#include "core/finding.hpp"
#include "core/util/errors.hpp"
#include "core/util/flat_map.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <vector>

using namespace dedupctl;
using namespace dedupctl::core;

namespace {
Finding finding(std::string id, Severity severity) {
  Finding f;
  f.id = std::move(id);
  f.severity = severity;
  return f;
}
} // namespace

TEST(FailOn, ThresholdsDecideTheExitCode) {
  std::vector<Finding> warnings{finding("semantic-duplicate", Severity::Warning),
                                finding("log-duplicate", Severity::Info)};
  EXPECT_EQ(exit_code_for(warnings, parse_fail_on("error")), 0);
  EXPECT_EQ(exit_code_for(warnings, parse_fail_on("warning")), 1);
  EXPECT_EQ(exit_code_for(warnings, parse_fail_on("info")), 1);
  EXPECT_EQ(exit_code_for(warnings, parse_fail_on("none")), 0);
  EXPECT_EQ(exit_code_for({finding("id-reuse", Severity::Error)}, parse_fail_on("error")), 1);
  EXPECT_EQ(exit_code_for({finding("id-reuse", Severity::Error)}, parse_fail_on("none")), 0);
  EXPECT_EQ(exit_code_for({}, parse_fail_on("info")), 0);
  EXPECT_THROW(parse_fail_on("fatal"), UsageError);
}

TEST(Findings, SortedBySeverityThenId) {
  std::vector<Finding> findings{finding("log-duplicate", Severity::Info),
                                finding("semantic-duplicate", Severity::Warning),
                                finding("missing-event-id", Severity::Warning), finding("id-reuse", Severity::Error)};
  sort_findings(findings);
  EXPECT_EQ(findings[0].id, "id-reuse");
  EXPECT_EQ(findings[1].id, "missing-event-id");
  EXPECT_EQ(findings[2].id, "semantic-duplicate");
  EXPECT_EQ(findings[3].id, "log-duplicate");
}

TEST(FindingBuilder, NothingCountedBuildsNothing) {
  FindingBuilder builder(2);
  EXPECT_FALSE(builder.build("x", Severity::Info, "t", "a").has_value());
  builder.add(3, [] { return Example{}; });
  builder.add(1, [] { return Example{}; });
  builder.add(3, [] { return Example{}; });
  auto built = builder.build("x", Severity::Info, "t", "a");
  ASSERT_TRUE(built.has_value());
  EXPECT_EQ(built->count, 3);
  EXPECT_EQ(built->examples.size(), 2u);
  EXPECT_EQ(built->partitions, (std::vector<std::int32_t>{1, 3}));
}

TEST(FindingBuilder, AddAtKeepsTheLowestSeqsAndMergeAddsUp) {
  FindingBuilder a(2);
  FindingBuilder b(2);
  auto ex = [](std::uint64_t seq) {
    Example e;
    e.seq = seq;
    return e;
  };
  a.add_at(1, 50, [&] { return ex(50); });
  a.add_at(3, 10, [&] { return ex(10); });
  a.add_at(1, 70, [&] { return ex(70); });
  b.add_at(2, 20, [&] { return ex(20); });
  a.merge(b);
  EXPECT_EQ(a.count(), 4);
  EXPECT_EQ(a.partitions(), (std::vector<std::int32_t>{1, 2, 3}));
  ASSERT_EQ(a.examples().size(), 2u);
  EXPECT_EQ(a.examples()[0].seq, 10u);
  EXPECT_EQ(a.examples()[1].seq, 20u);
}
