#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/scan/transitions.hpp"
#include "core/util/flat_map.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// Idempotency by design (issue 63): a handler that applies an event only when its version is above
// the projection's (`UPDATE … WHERE id = $id AND version < $v`). What the log alone shows of such a
// guard: the changes it drops for good, two changes it cannot tell apart, and versions the log lacks.
namespace dedupctl::core {

// How the handler compares versions: as numbers, as strings (byte order), or as RFC 3339 times.
enum class VersionOrder { Numeric, Lexical, Rfc3339 };
std::string_view to_string(VersionOrder order);
// Throws UsageError naming --version-order for anything else.
VersionOrder parse_version_order(std::string_view text);

// A version as the handler compares it: nullopt when it does not parse under the order (never
// guessed). `number` orders whole numbers of 64 bits and RFC 3339 times (epoch ms); any other numeric
// version (a decimal, a whole number beyond 64 bits) is ordered exactly by its `text`, as a numeric
// column orders it; `text` orders lexical ones.
struct VersionValue {
  long double number = 0;
  std::string_view text;
  bool integral = false; // a whole number: versions between two of them can be counted
};
std::optional<VersionValue> parse_version(std::string_view text, VersionOrder order);
// <0, 0, >0 as the handler's `<` would have it.
int compare_versions(const VersionValue& a, const VersionValue& b, VersionOrder order);

struct VersionCounters {
  std::int64_t checked = 0;         // events with an entity and a version that parsed
  std::int64_t regressions = 0;     // version-regression
  std::int64_t cross_partition = 0; // of them, below an event of another partition
  std::int64_t conflicts = 0;       // version-conflict
  std::int64_t gaps = 0;            // version-gap: versions missing inside the range (transition-gap: events)
  std::int64_t unparsed = 0;        // a version that does not parse under the order
  std::int64_t unversioned = 0;     // no entity or no version taken
};

// The projection as the placement (--layout version-guard): what a guard holds of an event, its
// entity's version in the projection against the event's.
enum class GuardState : std::uint8_t {
  NoId,       // no event id (the audit's first rule)
  Unchecked,  // no entity or no version, or one (the event's or the projection's) that does not parse
  Covered,    // the projection's version is at or above the event's: its change, or a later one, is in
  Missing,    // the projection's is below, and no higher version of the entity is in the range
  Superseded, // the projection's is below, and a higher version of the entity is in the range too
};

// A kept event with its guard's verdict (VersionAnalyzer::guard_event), in read order.
struct GuardEvent {
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  std::int64_t timestamp_ms = -1;
  std::uint64_t seq = 0;
  bool has_id = false;
  std::string_view id, type, entity, version;
  std::optional<std::string_view> projection; // the entity's version there; nullopt: no row (or not looked up)
  GuardState state = GuardState::Unchecked;
  // A replay of the window applies it: its version is above the projection's and above every version a
  // delivery before it in the consumer's order applied.
  bool applied = false;
};

// Reads every event of the range with its entity and version, then, per entity, walks its events in
// the order the consumer sees them: within a partition log order; across partitions timestamp order
// (an estimate, so said in the examples). A guard drops an event whose version is below the highest
// applied before it under another id (version-regression); two events with one version and different
// semantic keys are a change the guard cannot tell from a retry (version-conflict, counted after the
// first); whole versions missing between two the range has are a version-gap. A repeat of an event id
// is a redelivery (log-duplicate or id-reuse say so), not a change. Keeps about 80 bytes and the id,
// entity and version text an event: the range's versioned events, until findings().
class VersionAnalyzer {
public:
  VersionAnalyzer(VersionOrder order, std::size_t max_examples);

  void observe(std::span<const Event> events, std::span<const Identity> identities);
  void observe(const Event& event, const Identity& identity);

  // --layout version-guard: every event is kept (versioned or not, with or without an id), so that
  // the guard's verdicts can be handed to the audit in read order. Call before the first observe.
  void keep_every_event() { m_keep_all = true; }
  // --layout state-guard: the guard moves an entity between states by its events' types (`table`, which
  // outlives the analyzer) instead of comparing versions. An event is checked when it has an entity and a
  // type the table names; the projection's value is the entity's state; the log's finding is
  // transition-gap (an event that moves from states no other event of its entity in the range reaches),
  // in place of the version findings. Call before the first observe.
  void use_transitions(const TransitionTable* table) { m_states = table; }
  bool states() const { return m_states != nullptr; }
  // Room for the range's `events` (LogAnalyzerOptions::expected_events), so that what is kept of them
  // is not copied again as it grows. Call before the first observe.
  void reserve(std::size_t events);
  // The entity's version in the projection (nullopt: no row), as the placement's lookup found it;
  // for an entity already observed (others are ignored). The first answer for an entity stands.
  void set_projection(std::string_view entity, std::optional<std::string_view> version);
  // The kept events (every event with keep_every_event), and each one's verdict once decide_guard ran:
  // `in_window[i]`, whether kept event i is in the replay window, decides which of them a replay applies.
  std::size_t kept() const { return m_seen.size(); }
  void decide_guard(std::span<const std::uint8_t> in_window);
  GuardEvent guard_event(std::size_t i) const;

  // One entity's versioned events in the order its consumer meets them (trace), each with `applied`
  // set where a guard that met them in that order from nothing would apply it (its version above every
  // one before it) and `state` Superseded where a higher version came first (the guard drops it).
  std::vector<GuardEvent> history(std::string_view entity);

  // Walks the entities (once; later calls return the same).
  const VersionCounters& counters();
  std::vector<Finding> findings();

private:
  static constexpr std::uint32_t k_no_entity = 0xffffffff; // a kept event the walk skips
  // 80 bytes: the 8-byte fields first, no padding between them.
  struct Seen {
    std::int64_t offset = 0;
    std::int64_t timestamp = -1;
    std::uint64_t seq = 0;
    std::uint64_t id_hash = 0;
    std::uint64_t semantic = 0;
    // The version as a whole number (integral) or an RFC 3339 time's epoch ms; any other numeric version
    // (a decimal, or beyond 64 bits) compares by its text.
    std::int64_t whole = 0;
    std::uint32_t entity = 0;
    std::uint32_t topic = 0;
    std::int32_t partition = 0;
    std::uint32_t id_at = 0, id_len = 0; // the version's text follows the id's in m_text
    std::uint32_t version_len = 0;
    std::uint16_t type = 0; // kept with keep_every_event: an index into m_types
    bool has_id = true;     // false for a kept event without one
    bool parsed = true;     // false for a kept event without a version that parses
    bool integral = false;
    std::uint32_t version_at() const { return id_at + id_len; }
  };
  static_assert(sizeof(Seen) == 80, "a kept event's size is what docs/benchmarks.md's RSS figures assume");
  static constexpr std::size_t k_short_history = 16; // events of one entity searched linearly
  std::string_view text(std::uint32_t at, std::uint32_t len) const { return {m_text.data() + at, len}; }
  std::uint32_t keep(std::string_view s);
  VersionValue value(const Seen& s) const;
  Example example(const Seen& s, std::string note) const;
  // The span is of_entity itself, or m_merged until the next call.
  std::span<const std::size_t> consumer_order(std::span<const std::size_t> of_entity);
  void walk(std::span<const std::size_t> of_entity);
  void decide(std::span<const std::size_t> of_entity, std::span<const std::uint8_t> in_window);
  void decide_states(std::span<const std::size_t> of_entity, std::span<const std::uint8_t> in_window);
  void walk_states(std::span<const std::size_t> of_entity); // transition-gap
  std::span<const std::size_t> state_walk_input(std::span<const std::size_t> of_entity,
                                                std::span<const std::uint8_t> in_window);
  void observe_state(const Event& event, const Identity& identity, std::uint64_t entity_hash);
  void unchecked(const Event& event, const Identity& identity, const std::function<std::string()>& why);
  std::uint32_t entity_index(std::string_view entity, std::uint64_t hash);
  void observe(const Event& event, const Identity& identity, std::uint64_t entity_hash);
  std::vector<Finding> state_findings();
  // Each entity's events (in read order) to `fn`, grouped by a counting sort.
  template <typename Fn> void for_each_entity(Fn&& fn);
  void keep_unversioned(const Event& event, const Identity& identity);
  Seen seen_of(const Event& event, const Identity& identity); // its coordinates, id and version kept
  std::uint32_t topic_index(std::string_view topic);
  std::uint16_t type_index(std::string_view type);
  void gaps(std::span<const std::size_t> of_entity);
  void evaluate();

  VersionOrder m_order;
  std::string m_text; // ids, entities and versions, back to back
  std::vector<std::string> m_topics;
  // An entity's index by the 64-bit hash of its text: no string is made for an entity already seen
  // (a 2^-64 merge of two entities is as likely as one of two ids, which the log analyzer accepts).
  FlatHashMap<std::uint32_t> m_entity_of;
  std::vector<std::string> m_entities;
  std::vector<Seen> m_seen;
  bool m_evaluated = false;
  std::vector<std::size_t> m_merged, m_few_firsts; // the walk's scratch, reused entity after entity
  std::vector<std::uint64_t> m_few_ids;
  std::vector<std::uint64_t> m_entity_hashes;                     // observe's, a batch's entities
  std::vector<std::pair<std::int64_t, std::size_t>> m_by_version; // gaps' scratch
  VersionCounters m_counters;
  bool m_keep_all = false;
  const TransitionTable* m_states = nullptr;  // --layout state-guard
  std::vector<std::string_view> m_walk_types; // walk_states' scratch
  std::vector<std::uint8_t> m_walk_window;
  std::vector<std::string> m_types; // kept events' types
  // Each entity's version in the projection: unset (not looked up), no row, or the text in m_text.
  struct Projection {
    bool known = false, present = false;
    std::uint32_t at = 0, len = 0;
  };
  std::vector<Projection> m_projection;
  std::vector<std::uint8_t> m_guard; // a kept event's GuardState, | 0x80 when a replay applies it
  FindingBuilder m_regression, m_conflict, m_gap, m_unparsed, m_unversioned;
};

} // namespace dedupctl::core
