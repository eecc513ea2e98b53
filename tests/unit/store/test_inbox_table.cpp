#include "core/audit/coverage.hpp"
#include "core/store/inbox_table.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dedupctl::core {
namespace {

constexpr std::int64_t k_now = 1'000'000'000;

// The rows' states as the coverage rules see them: processed_at from the table, the remaining TTL
// from the inbox retention (remaining_ms), so `pttl_ms` below is what classify() uses.
std::vector<RecordState> states_of(const InboxTable& table, const std::vector<std::string>& ids, Span retention) {
  std::vector<RecordState> out;
  table.states(ids, out);
  CoveragePolicy policy;
  policy.now_ms = k_now;
  policy.ttl = retention;
  for (auto& state : out) {
    if (state.kind == RecordState::Kind::Present) {
      EXPECT_FALSE(state.pttl_ms) << "an inbox row has no remaining TTL of its own";
      state.pttl_ms = remaining_ms(state, policy);
    }
  }
  return out;
}

TEST(InboxTable, PresentRowsGetTheirRemainingRetentionAndStatus) {
  InboxTable table;
  table.insert("a", k_now - 60'000, "");
  table.insert("b", k_now - 10'000, "processing");
  table.insert("c", std::nullopt, "done");
  auto out = states_of(table, {"a", "x", "b", "c"}, Span::finite(120'000));
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].kind, RecordState::Kind::Present);
  EXPECT_EQ(out[0].pttl_ms, 60'000);
  EXPECT_EQ(out[1].kind, RecordState::Kind::Absent);
  EXPECT_EQ(out[2].pttl_ms, 110'000);
  EXPECT_EQ(out[2].value, "processing");
  EXPECT_EQ(out[3].kind, RecordState::Kind::Present);
  EXPECT_FALSE(out[3].pttl_ms) << "no processed_at: no remaining TTL to compute";
  EXPECT_EQ(out[3].value, "done");
}

TEST(InboxTable, RowsPastTheirRetentionHaveZeroLeftAndUnknownRetentionMeansNoTtl) {
  InboxTable table;
  table.insert("old", k_now - 500'000, "");
  EXPECT_EQ(states_of(table, {"old"}, Span::finite(120'000))[0].pttl_ms, 0);
  EXPECT_FALSE(states_of(table, {"old"}, Span::unknown())[0].pttl_ms);
  EXPECT_FALSE(states_of(table, {"old"}, Span::infinite())[0].pttl_ms);
}

TEST(InboxTable, TheFirstRowOfAnIdWins) {
  InboxTable table;
  EXPECT_TRUE(table.insert("a", 1, "first"));
  EXPECT_FALSE(table.insert("a", 2, "second"));
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(states_of(table, {"a"}, Span::unknown())[0].value, "first");
}

TEST(InboxTable, IdsWhoseHashesCollideStayApart) {
  InboxTable table([](std::string_view) -> std::uint64_t { return 42; });
  table.insert("a", k_now, "one");
  table.insert("b", k_now, "two");
  table.insert("c", k_now, "three");
  auto out = states_of(table, {"c", "a", "d", "b"}, Span::unknown());
  EXPECT_EQ(out[0].value, "three");
  EXPECT_EQ(out[1].value, "one");
  EXPECT_EQ(out[2].kind, RecordState::Kind::Absent);
  EXPECT_EQ(out[3].value, "two");
  EXPECT_EQ(table.size(), 3u);
}

TEST(InboxTable, IdsAreComparedByteForByte) {
  InboxTable table;
  table.insert("Evt-1", k_now, "");
  table.insert(std::string("a\0b", 3), k_now, "nul");
  auto out = states_of(table, {"evt-1", "Evt-1 ", "Evt-1", std::string("a\0b", 3), "a"}, Span::unknown());
  EXPECT_EQ(out[0].kind, RecordState::Kind::Absent);
  EXPECT_EQ(out[1].kind, RecordState::Kind::Absent);
  EXPECT_EQ(out[2].kind, RecordState::Kind::Present);
  EXPECT_EQ(out[3].value, "nul");
  EXPECT_EQ(out[4].kind, RecordState::Kind::Absent);
}

TEST(InboxTable, ClearForgetsEveryRow) {
  InboxTable table;
  table.insert("a", k_now, "x");
  table.clear();
  EXPECT_EQ(table.size(), 0u);
  EXPECT_EQ(states_of(table, {"a"}, Span::unknown())[0].kind, RecordState::Kind::Absent);
  table.insert("a", k_now, "y");
  EXPECT_EQ(states_of(table, {"a"}, Span::unknown())[0].value, "y");
}

TEST(InboxTable, StatusesStayValidWhileTheTableGrows) {
  InboxTable table;
  for (int i = 0; i < 5000; ++i) {
    table.insert("id-" + std::to_string(i), k_now, "status-" + std::to_string(i % 300));
  }
  auto out = states_of(table, {"id-7", "id-4999"}, Span::unknown());
  EXPECT_EQ(out[0].value, "status-7");
  EXPECT_EQ(out[1].value, "status-199");
  EXPECT_EQ(table.size(), 5000u);
}

} // namespace
} // namespace dedupctl::core

namespace dedupctl::core {
namespace {

TEST(InboxIdFits, UuidsInEveryFormPostgresAcceptsAndIntegersInTheirRange) {
  EXPECT_TRUE(inbox_id_fits("uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"));
  EXPECT_TRUE(inbox_id_fits("uuid", "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11"));
  EXPECT_TRUE(inbox_id_fits("uuid", "{a0eebc999c0b4ef8bb6d6bb9bd380a11}"));
  EXPECT_TRUE(inbox_id_fits("uuid", "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11"));
  EXPECT_FALSE(inbox_id_fits("uuid", "order-42"));
  EXPECT_FALSE(inbox_id_fits("uuid", "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11"));
  EXPECT_FALSE(inbox_id_fits("uuid", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1")); // 31 digits
  EXPECT_TRUE(inbox_id_fits("integer", "2147483647"));
  EXPECT_FALSE(inbox_id_fits("integer", "2147483648"));
  EXPECT_TRUE(inbox_id_fits("smallint", "-32768"));
  EXPECT_FALSE(inbox_id_fits("smallint", "32768"));
  EXPECT_TRUE(inbox_id_fits("bigint", "+42"));
  EXPECT_FALSE(inbox_id_fits("bigint", "42x"));
  EXPECT_TRUE(inbox_id_fits("text", "anything at all"));
}

// char(n) and varchar(n) hold n characters (code points, not bytes); char(n) drops trailing blanks
// first, as PostgreSQL does when it stores one. A longer id could never have been written.
TEST(InboxIdFits, CharacterColumnsHoldUpToTheirDeclaredLength) {
  std::string uuid = "0a0b0c0d-0000-4000-8000-000000000001";
  EXPECT_TRUE(inbox_id_fits("character(36)", uuid));
  EXPECT_TRUE(inbox_id_fits("character(36)", "e-1"));
  EXPECT_FALSE(inbox_id_fits("character(36)", uuid + "x"));
  EXPECT_TRUE(inbox_id_fits("character(36)", uuid + "   "));
  EXPECT_TRUE(inbox_id_fits("character(1)", "x"));
  EXPECT_FALSE(inbox_id_fits("character(1)", "xy"));
  EXPECT_TRUE(inbox_id_fits("character varying(3)", "\xc3\xa9t\xc3\xa9")); // été: three characters, five bytes
  EXPECT_FALSE(inbox_id_fits("character varying(3)", "e-10"));
  EXPECT_TRUE(inbox_id_fits("character varying(3)", "ab "));
  EXPECT_TRUE(inbox_id_fits("character varying", "any length at all"));
  EXPECT_TRUE(inbox_id_fits("bpchar", "any length at all"));
}

} // namespace
} // namespace dedupctl::core
