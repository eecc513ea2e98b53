#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// A state-transition guard (issue 63, the coming --layout state-guard): the handler applies an event
// only when its entity is in one of the states its type moves from, and moves it on, as the guides
// write it (`UPDATE orders SET status = 'paid' WHERE id = $1 AND status = 'pending'`). The table of
// allowed transitions, per event type, is a TOML file:
//
//   [OrderPlaced]          # no `from`: the entity's first event, whose insert creates its row
//   to = "pending"
//   [OrderPaid]
//   from = ["pending"]
//   to = "paid"
//
// Pure: the walk below is what the guard does to one entity's events, in the consumer's order.
namespace dedupctl::core {

struct Transition {
  std::vector<std::string> from; // empty: it creates the entity (applied only where there is no row)
  std::string to;
  bool creates() const { return from.empty(); }
};

class TransitionTable {
public:
  // Throws UsageError naming `path`, the line and what to write instead.
  static TransitionTable parse(std::string_view toml, std::string_view path);

  const Transition* of(std::string_view type) const;
  // Whether `state` is `target` or follows it through the table's transitions: the change that moved
  // the entity to `target` is in (or a later one).
  bool at_or_past(std::string_view state, std::string_view target) const;
  // Whether the guard applies `t` to an entity in `state` (nullopt: no row).
  static bool applies(const Transition& t, std::optional<std::string_view> state);
  // Whether `state` is one the table names (as a from or a to): the guard can judge an entity in it.
  bool knows(std::string_view state) const;
  std::size_t size() const { return m_by_type.size(); }

private:
  std::map<std::string, Transition, std::less<>> m_by_type;
  std::map<std::string, std::vector<std::string>, std::less<>> m_next; // a state → the states one step on
  std::set<std::string, std::less<>> m_states;                         // every state named
};

// One event of an entity as the guard judges it.
struct StateVerdict {
  bool known = false;   // its type is in the table (otherwise nothing else is said)
  bool covered = false; // the projection's state is at or past the event's `to`
  bool applied = false; // a replay of the entity's events, from the projection's state, applies it
  bool gap = false;     // transition-gap: it moves from states none of which another event of the entity in
                        // the range moves it to (the entity's first event in the range is not judged: its
                        // life before the range is not in it)
};

// The entity's events (their types, in the consumer's order) against its state in the projection
// (nullopt: no row), one verdict an event. `in_window` (empty: all of them), whether a replay delivers
// event i: one it does not deliver is never applied, and leaves the replay's state as it is.
std::vector<StateVerdict> walk_states(const TransitionTable& table, std::optional<std::string_view> projection,
                                      const std::vector<std::string_view>& types,
                                      std::span<const std::uint8_t> in_window = {});

} // namespace dedupctl::core
