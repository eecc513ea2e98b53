#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/util/flat_map.hpp"

#include <cstdint>
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
// guessed). `number` orders numeric and RFC 3339 versions (epoch ms), `text` lexical ones.
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
  std::int64_t gaps = 0;            // version-gap: versions missing inside the range
  std::int64_t unparsed = 0;        // a version that does not parse under the order
  std::int64_t unversioned = 0;     // no entity or no version taken
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

  // Walks the entities (once; later calls return the same).
  const VersionCounters& counters();
  std::vector<Finding> findings();

private:
  struct Seen {
    std::uint32_t entity = 0;
    std::uint32_t topic = 0;
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::int64_t timestamp = -1;
    std::uint64_t seq = 0;
    std::uint64_t id_hash = 0;
    std::uint64_t semantic = 0;
    std::uint32_t id_at = 0, id_len = 0;
    std::uint32_t version_at = 0, version_len = 0;
    long double number = 0;
    bool integral = false;
  };
  static constexpr std::size_t k_short_history = 16; // events of one entity searched linearly
  std::string_view text(std::uint32_t at, std::uint32_t len) const { return {m_text.data() + at, len}; }
  std::uint32_t keep(std::string_view s);
  VersionValue value(const Seen& s) const { return {s.number, text(s.version_at, s.version_len), s.integral}; }
  Example example(const Seen& s, std::string note) const;
  // The span is of_entity itself, or m_merged until the next call.
  std::span<const std::size_t> consumer_order(std::span<const std::size_t> of_entity);
  void walk(std::span<const std::size_t> of_entity);
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
  VersionCounters m_counters;
  FindingBuilder m_regression, m_conflict, m_gap, m_unparsed, m_unversioned;
};

} // namespace dedupctl::core
