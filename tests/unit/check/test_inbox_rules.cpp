#include "core/check/inbox_rules.hpp"
#include "core/util/errors.hpp"

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

// Names the server would refuse or truncate, and unquoted ones it would fold differently, are usage errors before
// anything is contacted (they were exit 3, as if the server were down).
TEST(InboxNames, TheTableIsSchemaDotTableOfPlainNamesAndColumnsFitPostgres) {
  using dedupctl::core::check_inbox_names;
  // A quoted name keeps its case, as the .NET libraries create their tables ("InboxState").
  for (std::string table : {"processed_events", "billing.processed_events", "Inbox_2$", "_x", "\"InboxState\"",
                            "app.\"Sales_OutboxData\""}) {
    EXPECT_NO_THROW(check_inbox_names(table, {{"--inbox-id-column", "event id"}})) << table;
  }
  for (std::string table : std::vector<std::string>{"", "a;b", "a.b.c", "9x", "a.", ".a", "a b", "\"Quo\"ted\"", "\"\"",
                                                    std::string(64, 'a')}) {
    try {
      check_inbox_names(table, {});
      ADD_FAILURE() << "accepted " << table;
    } catch (const dedupctl::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("invalid --inbox-table '" + table + "'"), std::string::npos) << e.what();
    }
  }
  EXPECT_NO_THROW(check_inbox_names("t", {{"--inbox-status-column", ""}})) << "an optional column may be empty";
  EXPECT_THROW(check_inbox_names("t", {{"--inbox-id-column", std::string(64, 'c')}}), dedupctl::UsageError);
  EXPECT_THROW(check_inbox_names("t", {{"--inbox-id-column", std::string("a\0b", 3)}}), dedupctl::UsageError);
}
