#include "core/window/window_analyzer.hpp"

#include "core/util/fingerprint.hpp"
#include "core/util/flat_map.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

struct WindowAnalyzer::Scope {
  explicit Scope(const WindowSpec& spec) : window(spec) {}
  IdWindow window;
  FlatHashMap<std::uint8_t> applied; // the keys this window's consumer applied
};

WindowAnalyzer::WindowAnalyzer(WindowSpec spec, std::size_t max_examples,
                               std::map<std::string, SideEffect> side_effects)
    : m_spec(spec), m_side_effects(std::move(side_effects)), m_misses(max_examples), m_false_positives(max_examples) {
  m_summary.spec = spec;
  if (spec.scope == WindowScope::Consumer) {
    m_consumer = std::make_unique<Scope>(spec);
    m_summary.bloom = m_consumer->window.bloom_shape();
  } else if (spec.has_bloom()) {
    m_summary.bloom = bloom_with_estimates(spec.bloom_impl, spec.bloom_items, spec.bloom_fp);
  }
}

WindowAnalyzer::~WindowAnalyzer() = default;

WindowAnalyzer::Scope& WindowAnalyzer::scope_of(const Event& event) {
  std::pair<const void*, std::int32_t> key{event.topic.data(), event.partition};
  if (m_last != nullptr && key == m_last_key) {
    return *m_last;
  }
  auto& slot = m_partitions[{std::string(event.topic), event.partition}];
  if (!slot) {
    slot = std::make_unique<Scope>(m_spec);
  }
  m_last_key = key;
  m_last = slot.get();
  return *slot;
}

WindowAnalyzer::Decision WindowAnalyzer::decide(Scope& scope, std::string_view key, std::uint64_t hash) {
  Decision decision;
  decision.skipped = scope.window.seen(key, hash);
  if (decision.skipped) {
    decision.false_positive = scope.applied.find(hash) == nullptr;
  } else {
    bool inserted = false;
    scope.applied.find_or_insert(hash, inserted);
    decision.miss = !inserted;
  }
  return decision;
}

bool WindowAnalyzer::external(std::string_view type) const {
  auto effect = m_side_effects.find(std::string(type));
  return effect == m_side_effects.end() || effect->second == SideEffect::External;
}

void WindowAnalyzer::record(const Decision& decision, const Event& event, const Identity& identity,
                            std::string_view key) {
  ++m_summary.events;
  m_summary.applied += decision.skipped ? 0 : 1;
  m_summary.caught += decision.skipped && !decision.false_positive ? 1 : 0;
  auto example = [&](std::string note) {
    return [&event, &identity, key, note = std::move(note)] { return example_of(event, identity, key, note); };
  };
  if (decision.miss) {
    m_external_miss = m_external_miss || external(identity.type);
    m_misses.add(event.partition, example("applied again: the window no longer held its id"));
  }
  if (decision.false_positive) {
    m_false_positives.add(event.partition,
                          example("dropped: the Bloom filter said seen before its id was ever applied"));
  }
}

void WindowAnalyzer::prefetch(const Event& event, std::uint64_t key_hash) {
  Scope& scope = scope_of(event);
  scope.window.prefetch(key_hash);
  scope.applied.prefetch(key_hash);
}

std::string_view to_string(WindowCall call) {
  switch (call) {
  case WindowCall::Applied:
    return "applied";
  case WindowCall::Skipped:
    return "skipped";
  case WindowCall::Reapplied:
    return "re-applied";
  case WindowCall::Dropped:
    return "dropped";
  }
  return "applied";
}

std::string describe(const WindowSpec& spec) {
  std::string scope = spec.scope == WindowScope::Consumer ? "one for all of the consumer's partitions" : "a partition";
  switch (spec.kind) {
  case WindowKind::LruBloom:
    return fmt::format("the lru-bloom window (an LRU of {} ids, then a Bloom filter sized for {} ids at {}, {})",
                       spec.capacity, spec.bloom_items, spec.bloom_fp, scope);
  case WindowKind::BloomExact:
    return fmt::format("the bloom-exact window (a Bloom filter sized for {} ids at {}, then a set of {} ids, {})",
                       spec.bloom_items, spec.bloom_fp, spec.capacity, scope);
  default:
    return fmt::format("the lru window of {} ids ({})", spec.capacity, scope);
  }
}

namespace {

WindowCall call_of(bool skipped, bool miss, bool false_positive) {
  if (false_positive) {
    return WindowCall::Dropped;
  }
  if (skipped) {
    return WindowCall::Skipped;
  }
  return miss ? WindowCall::Reapplied : WindowCall::Applied;
}

} // namespace

WindowCall WindowAnalyzer::observe(const Event& event, const Identity& identity, std::string_view key,
                                   std::uint64_t hash) {
  Decision in_partition = decide(scope_of(event), key, hash);
  if (!m_consumer) {
    record(in_partition, event, identity, key);
    return call_of(in_partition.skipped, in_partition.miss, in_partition.false_positive);
  }
  m_partition_misses += in_partition.miss ? 1 : 0;
  Decision decision = decide(*m_consumer, key, hash);
  record(decision, event, identity, key);
  if (observe_bounds(key, hash) && external(identity.type)) {
    m_external_repeat = true; // in some interleaving it may be missed
  }
  return call_of(decision.skipped, decision.miss, decision.false_positive);
}

bool WindowAnalyzer::observe_bounds(std::string_view key, std::uint64_t hash) {
  bool inserted = false;
  m_seen_keys.find_or_insert(hash, inserted);
  bool repeat = !inserted;
  m_repeats += repeat ? 1 : 0;
  if (m_spec.kind == WindowKind::LruBloom) {
    auto [it, fresh] = m_keys.try_emplace(hash);
    if (fresh) {
      it->second.first = BloomFilter(*m_summary.bloom).hash(key);
    }
    ++it->second.second;
  }
  return repeat;
}

// An id is dropped only if the filter says "maybe" for it, and the filter never holds more than the
// other ids of the range: the events of ids the filter of all the others says "maybe" for bound the
// false positives from above, in any interleaving. A bit counted twice or more stays set without the
// id's own add.
std::int64_t WindowAnalyzer::false_positive_high() const {
  if (m_keys.empty()) {
    return 0;
  }
  BloomFilter hasher(*m_summary.bloom);
  std::vector<std::uint32_t> counts(m_summary.bloom->bits, 0);
  std::vector<std::uint64_t> at;
  for (const auto& [hash, entry] : m_keys) {
    hasher.locations(entry.first, at);
    for (auto bit : at) {
      ++counts[bit];
    }
  }
  std::int64_t high = 0;
  for (const auto& [hash, entry] : m_keys) {
    hasher.locations(entry.first, at);
    bool maybe = std::all_of(at.begin(), at.end(), [&](std::uint64_t bit) { return counts[bit] >= 2; });
    high += maybe ? entry.second : 0;
  }
  return high;
}

WindowResult WindowAnalyzer::finish() {
  WindowResult result;
  WindowSummary& summary = m_summary;
  summary.windows = m_consumer ? 1 : static_cast<std::int64_t>(m_partitions.size());
  summary.exact = !m_consumer || m_partitions.size() <= 1;
  if (summary.exact) {
    summary.window_misses = {m_misses.count(), m_misses.count()};
    summary.false_positives = {m_false_positives.count(), m_false_positives.count()};
  } else {
    bool bloom_first = m_spec.kind == WindowKind::LruBloom; // a Bloom that holds every applied id misses none
    summary.window_misses = {bloom_first ? 0 : m_partition_misses, bloom_first ? 0 : m_repeats};
    summary.false_positives = {0, bloom_first ? false_positive_high() : 0};
  }
  auto counted = [&](const WindowCount& count, std::string_view what) {
    return summary.exact ? fmt::format("{} {}", count.high, what)
                         : fmt::format("between {} and {} {} (the consumer's interleaving of its {} partitions "
                                       "decides; the examples are in the order read)",
                                       count.low, count.high, what, m_partitions.size());
  };
  if (summary.window_misses.high > 0) {
    Finding f = m_misses.build("", Severity::Warning, "", "").value_or(Finding{});
    f.id = "window-miss";
    f.severity = m_external_miss || (!summary.exact && m_external_repeat) ? Severity::Error : Severity::Warning;
    f.count = summary.window_misses.high;
    f.title = counted(summary.window_misses,
                      fmt::format("redeliveries came further apart than the {} window of {} ids holds, and were "
                                  "applied again",
                                  to_string(m_spec.kind), m_spec.capacity));
    f.advice = "Size the window to the furthest redelivery the log shows, or keep a durable record (Redis with a "
               "TTL, an inbox table) behind it: a window protects only what it still holds.";
    result.findings.push_back(std::move(f));
  }
  if (summary.false_positives.high > 0) {
    Finding f = m_false_positives.build("", Severity::Error, "", "").value_or(Finding{});
    f.id = "bloom-false-positive";
    f.severity = Severity::Error;
    f.count = summary.false_positives.high;
    f.title = counted(summary.false_positives,
                      "events were dropped as seen by the Bloom filter before their ids were ever applied");
    f.advice = fmt::format("A Bloom filter's \"maybe\" is not \"seen\": these events were never applied. Size it for "
                           "the ids it really holds (it was sized for {} at {}), or decide a \"maybe\" with an "
                           "exact lookup (bloom-exact, or a durable record).",
                           m_spec.bloom_items, m_spec.bloom_fp);
    result.findings.push_back(std::move(f));
  }
  result.summary = summary;
  return result;
}

} // namespace dedupctl::core
