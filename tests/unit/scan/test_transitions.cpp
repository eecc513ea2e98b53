// A state-transition guard's table and its walk over one entity's events (issue 63).
#include "core/scan/transitions.hpp"
#include "core/util/errors.hpp"
#include "tests/support/transitions.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dedupctl::core {
namespace {

// An order's life: placed, paid, shipped, delivered; cancelled from pending or paid.
TransitionTable orders() { return TransitionTable::parse(dedupctl::testing::k_order_transitions, "orders.toml"); }

TEST(Transitions, EachTypeMovesFromItsStatesToOne) {
  auto table = orders();
  EXPECT_EQ(table.size(), 5u);
  ASSERT_NE(table.of("OrderCancelled"), nullptr);
  EXPECT_EQ(table.of("OrderCancelled")->from, (std::vector<std::string>{"pending", "paid"}));
  EXPECT_EQ(table.of("OrderCancelled")->to, "cancelled");
  EXPECT_TRUE(table.of("OrderPlaced")->creates());
  EXPECT_EQ(table.of("OrderRefunded"), nullptr);
}

// "At or past" follows the transitions, branches included: a cancelled order is past pending but not
// past shipped, and a delivered one is past paid but not cancelled.
TEST(Transitions, AStateIsAtOrPastTheStatesThatLeadToIt) {
  auto table = orders();
  EXPECT_TRUE(table.at_or_past("paid", "paid"));
  EXPECT_TRUE(table.at_or_past("delivered", "paid"));
  EXPECT_TRUE(table.at_or_past("cancelled", "pending"));
  EXPECT_FALSE(table.at_or_past("pending", "paid"));
  EXPECT_FALSE(table.at_or_past("cancelled", "shipped"));
  EXPECT_FALSE(table.at_or_past("delivered", "cancelled"));
  EXPECT_FALSE(table.at_or_past("lost", "paid")) << "a state the table does not know follows nothing";
}

TEST(Transitions, TheGuardAppliesFromItsStatesAndCreatesOnlyWithoutARow) {
  auto table = orders();
  EXPECT_TRUE(TransitionTable::applies(*table.of("OrderPaid"), "pending"));
  EXPECT_FALSE(TransitionTable::applies(*table.of("OrderPaid"), "paid"));
  EXPECT_FALSE(TransitionTable::applies(*table.of("OrderPaid"), std::nullopt));
  EXPECT_TRUE(TransitionTable::applies(*table.of("OrderPlaced"), std::nullopt));
  EXPECT_FALSE(TransitionTable::applies(*table.of("OrderPlaced"), "pending"));
}

// A projection restored to "pending": its payment is not in (not covered) and a replay applies it and
// the shipment after it; the placement before it is covered and skipped.
TEST(Transitions, AReplayFromAProjectionBehindAppliesWhatFollowsItsState) {
  auto table = orders();
  auto v = walk_states(table, "pending", {"OrderPlaced", "OrderPaid", "OrderShipped"});
  ASSERT_EQ(v.size(), 3u);
  EXPECT_TRUE(v[0].covered);
  EXPECT_FALSE(v[0].applied);
  EXPECT_FALSE(v[1].covered);
  EXPECT_TRUE(v[1].applied);
  EXPECT_FALSE(v[2].covered);
  EXPECT_TRUE(v[2].applied);
  for (const auto& e : v) {
    EXPECT_TRUE(e.known);
    EXPECT_FALSE(e.gap);
  }
}

// Without a row only the creating event applies, and what follows it then; a projection at its end
// is covered for every event and applies nothing.
TEST(Transitions, NoRowAppliesFromTheCreationAndAnEntityAtItsEndAppliesNothing) {
  auto table = orders();
  auto none = walk_states(table, std::nullopt, {"OrderPlaced", "OrderPaid"});
  EXPECT_TRUE(none[0].applied && none[1].applied);
  EXPECT_FALSE(none[0].covered || none[1].covered);
  auto done = walk_states(table, "delivered", {"OrderPlaced", "OrderPaid", "OrderShipped", "OrderDelivered"});
  for (const auto& e : done) {
    EXPECT_TRUE(e.covered);
    EXPECT_FALSE(e.applied);
  }
}

// The guard drops a change whose from state the entity is not in yet: shipped before paid reaches it.
// That is no gap, since the log has the payment; a delivery whose shipment the log lacks is one.
TEST(Transitions, AChangeBeforeItsStateIsDroppedAndOneWhoseStateTheLogLacksIsAGap) {
  auto table = orders();
  auto v = walk_states(table, std::nullopt, {"OrderPlaced", "OrderShipped", "OrderPaid"});
  EXPECT_TRUE(v[0].applied);
  EXPECT_FALSE(v[1].applied) << "pending, not paid: the guard drops the shipment";
  EXPECT_TRUE(v[2].applied);
  for (const auto& e : v) {
    EXPECT_FALSE(e.gap);
  }
  auto lacking = walk_states(table, std::nullopt, {"OrderPlaced", "OrderPaid", "OrderDelivered"});
  EXPECT_FALSE(lacking[1].gap);
  EXPECT_TRUE(lacking[2].gap) << "shipped: no event of the range moves the order there";
  EXPECT_FALSE(lacking[2].applied);
}

// The entity's first event in the range is not judged a gap (its earlier life lies before the range),
// and an event of a type the table lacks is said unknown and skipped by the walk.
TEST(Transitions, TheFirstEventInTheRangeIsNoGapAndAnUnknownTypeIsNotJudged) {
  auto table = orders();
  auto v = walk_states(table, "paid", {"OrderShipped", "OrderRefunded", "OrderDelivered"});
  EXPECT_FALSE(v[0].gap);
  EXPECT_FALSE(v[1].known);
  EXPECT_FALSE(v[1].applied);
  EXPECT_TRUE(v[2].known);
  EXPECT_FALSE(v[2].gap);
  EXPECT_TRUE(v[0].applied && v[2].applied);
}

// A table that is not one names the file, the line and what to write.
TEST(Transitions, ABadTableIsAUsageErrorNamingItsLine) {
  struct Case {
    const char* toml;
    const char* says;
  };
  for (const auto& c : std::vector<Case>{
           {"[OrderPaid]\nfrom = [\"pending\"]\n", "orders.toml:1: [OrderPaid] needs to = \"STATE\""},
           {"[OrderPaid]\nfrom = \"pending\"\nto = \"paid\"\n", "orders.toml:2: [OrderPaid] from must be"},
           {"[OrderPaid]\nto = \"paid\"\nnext = \"x\"\n", "orders.toml:3: [OrderPaid] takes from and to, not 'next'"},
           {"OrderPaid = \"paid\"\n", "orders.toml:1: 'OrderPaid' must be a table of its transition"},
           {"[OrderPaid\n", "transitions=orders.toml:1:"},
           {"", "no transition in it"},
       }) {
    try {
      TransitionTable::parse(c.toml, "orders.toml");
      ADD_FAILURE() << "accepted: " << c.toml;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
    }
  }
}

// A replay delivers only its window: an event before it is not applied again and leaves the state
// where the projection has it; the table names the states it can judge.
TEST(Transitions, OnlyTheWindowIsDeliveredAndAStateTheTableLacksIsNotKnown) {
  auto table = orders();
  const std::vector<std::uint8_t> window{0, 1, 1};
  auto v = walk_states(table, std::nullopt, {"OrderPlaced", "OrderPaid", "OrderShipped"}, window);
  EXPECT_FALSE(v[0].applied) << "before the window: not delivered";
  EXPECT_FALSE(v[1].applied) << "no row: the payment has nothing to move from";
  EXPECT_FALSE(v[2].applied);
  auto behind = walk_states(table, "pending", {"OrderPlaced", "OrderPaid", "OrderShipped"}, window);
  EXPECT_TRUE(behind[1].applied && behind[2].applied);
  EXPECT_TRUE(table.knows("pending"));
  EXPECT_TRUE(table.knows("cancelled"));
  EXPECT_FALSE(table.knows("archived"));
}

} // namespace
} // namespace dedupctl::core
