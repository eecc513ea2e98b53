#include "core/inbox_rules.hpp"

#include <gtest/gtest.h>

namespace dedupctl::core {
namespace {

TEST(InboxRules, AMissingUniqueConstraintNamesTheColumnsItShouldCover) {
  auto scoped = inbox_without_unique_constraint("processed_events", "event_id", "consumer_name");
  EXPECT_EQ(scoped.id, "inbox-without-unique-constraint");
  EXPECT_EQ(scoped.severity, Severity::Error);
  EXPECT_EQ(scoped.title, "the inbox processed_events has no primary key or unique index over (consumer_name, "
                          "event_id)");
  EXPECT_EQ(inbox_without_unique_constraint("inbox", "id", "").title,
            "the inbox inbox has no primary key or unique index over id");
}

TEST(InboxRules, IdsUnderSeveralConsumersAreCountedOnlyWhenThereAreAny) {
  EXPECT_FALSE(inbox_ids_shared(0));
  auto shared = inbox_ids_shared(3);
  ASSERT_TRUE(shared);
  EXPECT_EQ(shared->id, "namespace-shared");
  EXPECT_EQ(shared->count, 3);
  EXPECT_NE(shared->advice.find("--consumer"), std::string::npos);
}

} // namespace
} // namespace dedupctl::core
