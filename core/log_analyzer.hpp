#pragma once

#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/flat_map.hpp"
#include "core/identify.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace dedupctl::core {

inline constexpr std::int64_t k_default_semantic_window_ms = 5 * 60 * 1000;

struct LogAnalyzerOptions {
  std::int64_t semantic_window_ms = k_default_semantic_window_ms;
  std::size_t max_examples = 5;
  std::string id_specs = "header:event_id,json:/event_id"; // for advice
  std::size_t expected_events = 1024;                      // sizes the tables up front
};

// Each counter counts events beyond the first of their group (report-v1 "summary").
struct LogCounters {
  std::int64_t events = 0;
  std::int64_t no_id = 0;
  std::int64_t log_duplicates = 0;
  std::int64_t id_reuse = 0;
  std::int64_t semantic_duplicates = 0;
};

// What the log alone shows: producer retries, reused ids, retries under new ids, events without
// ids. Keeps fingerprints only, never payloads: per id its 64-bit hash and 32 bits of its first
// payload's fingerprint (12 bytes a slot); per semantic key its hash, the latest timestamp
// (40 bits: ms within ±8.7 years of the first event seen) and 24 bits of the latest id's hash (16 bytes).
// A truncated fingerprint can make two different values look equal with probability 2⁻³² (a reuse
// counted as a retry) or 2⁻²⁴ (a semantic duplicate missed); exact counts are otherwise unaffected.
//
// An event whose id was seen before is a log duplicate when its payload matches any earlier
// payload of that id, otherwise an id reuse; either way it is not also a semantic duplicate.
// A semantic duplicate is an event whose semantic key matches the latest earlier event of that key
// under a different id, within the window of its timestamp.
class LogAnalyzer {
public:
  explicit LogAnalyzer(LogAnalyzerOptions options);

  void observe(std::span<const Event> events, std::span<const Identity> identities);
  void observe(const Event& event, const Identity& identity);

  const LogCounters& counters() const { return m_counters; }
  std::vector<Finding> findings() const;

private:
  // (timestamp - m_time_base) << 24 | (id_hash & 0xffffff)
  using SemanticEntry = std::uint64_t;

  LogAnalyzerOptions m_options;
  LogCounters m_counters;
  std::int64_t m_no_id_binary = 0;            // of m_counters.no_id: a json: spec met a binary payload
  FlatHashMap<std::uint32_t> m_first_payload; // id → first payload
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> m_reused; // id → later payloads
  std::optional<std::int64_t> m_time_base;
  FlatHashMap<SemanticEntry> m_semantic;
  FindingBuilder m_log_duplicate;
  FindingBuilder m_id_reuse;
  FindingBuilder m_semantic_duplicate;
  FindingBuilder m_missing_id;
};

} // namespace dedupctl::core
