// Whether a layout can read an inbox table by the types of its columns, from the catalog alone.
#include "core/store/inbox_schema.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;

TEST(InboxSchema, ATimeColumnMustHoldTheTimeTheLayoutReads) {
  InboxSchema schema; // processed_at, a timestamp
  std::vector<InboxColumnType> columns{{"event_id", "text", 'S'}, {"processed_at", "timestamp with time zone", 'D'}};
  EXPECT_EQ(inbox_column_type_problem(schema, columns), "");
  columns[1] = {"processed_at", "text", 'S'};
  EXPECT_EQ(inbox_column_type_problem(schema, columns),
            "the column processed_at of processed_events is text, but it is read as a time (timestamp, timestamp with "
            "time zone or date): name the table's time column with --inbox-time-column, or choose the --layout whose "
            "table this is");
  columns[1] = {"processed_at", "time without time zone", 'D'};
  EXPECT_NE(inbox_column_type_problem(schema, columns), "") << "a time of day is no point in time";
  schema.time = InboxSchema::Time::EpochMs;
  columns[1] = {"processed_at", "bigint", 'N'};
  EXPECT_EQ(inbox_column_type_problem(schema, columns), "");
  columns[1] = {"processed_at", "text", 'S'};
  EXPECT_NE(inbox_column_type_problem(schema, columns).find("epoch milliseconds"), std::string::npos);
  schema.time = InboxSchema::Time::TextMs;
  EXPECT_EQ(inbox_column_type_problem(schema, columns), "");
  columns[1] = {"processed_at", "timestamp without time zone", 'D'};
  EXPECT_NE(inbox_column_type_problem(schema, columns), "");
}

TEST(InboxSchema, AnIdColumnMustBeOfATypeAnIdFits) {
  InboxSchema schema;
  for (InboxColumnType fits : std::vector<InboxColumnType>{{"event_id", "text", 'S'},
                                                           {"event_id", "character(36)", 'S'},
                                                           {"event_id", "bigint", 'N'},
                                                           {"event_id", "uuid", 'U'}}) {
    EXPECT_EQ(inbox_column_type_problem(schema, {fits}), "") << fits.type;
  }
  for (InboxColumnType unfit : std::vector<InboxColumnType>{{"event_id", "boolean", 'B'},
                                                            {"event_id", "timestamp with time zone", 'D'},
                                                            {"event_id", "jsonb", 'U'},
                                                            {"event_id", "text[]", 'A'}}) {
    EXPECT_NE(inbox_column_type_problem(schema, {unfit}, "--effects-column")
                  .find("is " + unfit.type + ", which no event id fits"),
              std::string::npos)
        << unfit.type;
  }
  EXPECT_NE(
      inbox_column_type_problem(schema, {{"event_id", "boolean", 'B'}}, "--effects-column").find("--effects-column"),
      std::string::npos);
}

TEST(InboxSchema, AFalseWhenInProgressColumnMustBeBoolean) {
  InboxSchema schema;
  schema.time_column.clear();
  schema.in_progress_column = "Dispatched";
  schema.in_progress_when = InboxSchema::InProgressWhen::False;
  EXPECT_EQ(inbox_column_type_problem(schema, {{"Dispatched", "boolean", 'B'}}), "");
  EXPECT_NE(inbox_column_type_problem(schema, {{"Dispatched", "integer", 'N'}}).find("Dispatched"), std::string::npos);
  schema.in_progress_when = InboxSchema::InProgressWhen::Null;
  EXPECT_EQ(inbox_column_type_problem(schema, {{"Dispatched", "integer", 'N'}}), "") << "NULL tests any type";
}
