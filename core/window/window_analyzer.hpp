#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/identity/identify.hpp"
#include "core/side_effect.hpp"
#include "core/store/layout.hpp"
#include "core/util/flat_map.hpp"
#include "core/window/window.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

// The consumer's in-process window, simulated over the log (docs/windows.md): one pass over the
// events in log order, the window empty at the range's start as after a restart, each delivery
// decided as the consumer's code decides it, against what the consumer has applied so far:
// - a repeat of an applied id that the window lets through is re-applied: a window miss;
// - an id the window calls seen although it was never applied is dropped: a Bloom false positive,
//   never applied at all.
// One window a partition (scope=partition) is exact, insertion order being log order. One window
// for all of a consumer's partitions (scope=consumer) over several partitions depends on how the
// consumer interleaved them, which the log does not keep: the counts are then bounds, low and high.
namespace dedupctl::core {

// A count that is exact (low == high) or bounded.
struct WindowCount {
  std::int64_t low = 0;
  std::int64_t high = 0;
};

struct WindowSummary {
  WindowSpec spec;
  std::optional<BloomShape> bloom; // the filter's size and hashes, as the library sized it
  bool exact = true;               // false: scope=consumer over several partitions (bounds)
  std::int64_t windows = 0;        // windows simulated: partitions, or 1 for a consumer
  std::int64_t events = 0;         // events with an id the window decided
  // In the order read (exact when `exact`): events applied, and repeats skipped as duplicates.
  std::int64_t applied = 0;
  std::int64_t caught = 0;
  WindowCount window_misses;   // repeats of an applied id, re-applied
  WindowCount false_positives; // events dropped before their id was ever applied
};

// What the window did with one delivery (a trace's occurrences[].window): applied a new id, skipped a
// repeat of an applied one, applied a repeat again (a window miss), or dropped an id never applied
// (a Bloom false positive).
enum class WindowCall { Applied, Skipped, Reapplied, Dropped };
std::string_view to_string(WindowCall call); // applied, skipped, re-applied, dropped

// The window in words, for a verdict: "the lru window of 1000 ids a partition".
std::string describe(const WindowSpec& spec);

struct WindowResult {
  WindowSummary summary;
  std::vector<Finding> findings; // window-miss, bloom-false-positive
};

class WindowAnalyzer {
public:
  // `side_effects`: a window miss of an external type (or an unknown one) is an error, else a warning.
  WindowAnalyzer(WindowSpec spec, std::size_t max_examples, std::map<std::string, SideEffect> side_effects);
  ~WindowAnalyzer();

  // One event, in log order within its partition, with the key the consumer's window holds (the
  // rendered dedup key); events without an id are not decided.
  // `key_hash` is hash64(key). Returns what the window did with it (scope=consumer: in the order read).
  WindowCall observe(const Event& event, const Identity& identity, std::string_view key, std::uint64_t key_hash);
  // Asks the CPU for what observing that event will read (its window's index, the applied ids), a
  // few events ahead: the windows of many partitions do not stay in the cache.
  void prefetch(const Event& event, std::uint64_t key_hash);

  WindowResult finish();

private:
  struct Scope;
  struct Decision {
    bool skipped = false;
    bool miss = false;
    bool false_positive = false;
  };
  Scope& scope_of(const Event& event);
  static Decision decide(Scope& scope, std::string_view key, std::uint64_t hash);
  void record(const Decision& decision, const Event& event, const Identity& identity, std::string_view key);
  bool observe_bounds(std::string_view key, std::uint64_t hash); // true: the key came before
  std::int64_t false_positive_high() const;
  bool external(std::string_view type) const;

  WindowSpec m_spec;
  std::map<std::string, SideEffect> m_side_effects;
  // One window a partition; and, for scope=consumer, one for all of them in the order read.
  std::map<std::pair<std::string, std::int32_t>, std::unique_ptr<Scope>> m_partitions;
  std::unique_ptr<Scope> m_consumer;
  std::pair<const void*, std::int32_t> m_last_key{nullptr, -1};
  Scope* m_last = nullptr;
  WindowSummary m_summary;
  std::int64_t m_partition_misses = 0; // scope=consumer: the misses of the windows a partition (the low bound)
  std::int64_t m_repeats = 0;          // events whose key came before (the misses' high bound)
  // scope=consumer, lru-bloom: each key's hashes and events, for the false positives' high bound.
  std::unordered_map<std::uint64_t, std::pair<BloomHashes, std::int64_t>> m_keys;
  FlatHashMap<std::uint8_t> m_seen_keys;
  bool m_external_miss = false;
  bool m_external_repeat = false;
  FindingBuilder m_misses;
  FindingBuilder m_false_positives;
};

} // namespace dedupctl::core
