#include "core/log_analyzer.hpp"

#include "core/fingerprint.hpp"
#include "core/time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

LogAnalyzer::LogAnalyzer(LogAnalyzerOptions options)
    : m_options(std::move(options)), m_first_payload(m_options.expected_events), m_semantic(m_options.expected_events),
      m_log_duplicate(m_options.max_examples), m_id_reuse(m_options.max_examples),
      m_semantic_duplicate(m_options.max_examples), m_missing_id(m_options.max_examples) {}

void LogAnalyzer::observe(std::span<const Event> events, std::span<const Identity> identities) {
  for (std::size_t i = 0; i < events.size(); ++i) {
    observe(events[i], identities[i]);
  }
}

void LogAnalyzer::observe(const Event& event, const Identity& identity) {
  ++m_counters.events;
  if (!identity.has_id) {
    ++m_counters.no_id;
    m_no_id_binary += identity.binary_payload ? 1 : 0;
    m_missing_id.add(event.partition,
                     [&] { return example_of(event, identity, {}, std::string(identity.no_id_reason)); });
    return;
  }
  bool inserted = false;
  auto payload = static_cast<std::uint32_t>(identity.payload_fingerprint);
  std::uint32_t& first = m_first_payload.find_or_insert(identity.id_hash, inserted);
  if (inserted) {
    first = payload;
  } else {
    auto later = m_reused.find(identity.id_hash);
    bool same = first == payload || (later != m_reused.end() && std::find(later->second.begin(), later->second.end(),
                                                                          payload) != later->second.end());
    if (same) {
      ++m_counters.log_duplicates;
      m_log_duplicate.add(event.partition, [&] { return example_of(event, identity); });
    } else {
      ++m_counters.id_reuse;
      m_reused[identity.id_hash].push_back(payload);
      std::uint32_t original = first;
      m_id_reuse.add(event.partition, [&] {
        return example_of(
            event, identity, {},
            fmt::format("payload {:08x} differs from the first payload {:08x} of this id", payload, original));
      });
    }
    return;
  }
  if (!m_time_base) {
    m_time_base = event.timestamp_ms;
  }
  constexpr std::uint64_t k_id_bits = 24;
  constexpr std::uint64_t k_id_mask = (1ULL << k_id_bits) - 1;
  // Clamp into 40 bits centred on the first event seen: timestamps more than ±8.7 years away pile
  // up at the edges.
  std::int64_t relative = std::clamp<std::int64_t>(event.timestamp_ms - *m_time_base + (1LL << 38), 0, (1LL << 40) - 1);
  std::uint64_t id_tag = identity.id_hash & k_id_mask;
  SemanticEntry& entry = m_semantic.find_or_insert(identity.semantic_hash, inserted);
  if (!inserted && (entry & k_id_mask) != id_tag) {
    std::int64_t previous = static_cast<std::int64_t>(entry >> k_id_bits);
    std::int64_t gap = relative - previous;
    if (std::max(gap, -gap) <= m_options.semantic_window_ms) {
      ++m_counters.semantic_duplicates;
      m_semantic_duplicate.add(event.partition, [&] {
        return example_of(event, identity, {},
                          fmt::format("same semantic key as an event with another id {} {}",
                                      format_duration(std::max(gap, -gap)), gap >= 0 ? "earlier" : "later"));
      });
    }
  }
  entry = (static_cast<std::uint64_t>(relative) << k_id_bits) | id_tag;
}

std::vector<Finding> LogAnalyzer::findings() const {
  std::vector<Finding> out;
  auto push = [&](std::optional<Finding> finding) {
    if (finding) {
      out.push_back(std::move(*finding));
    }
  };
  push(m_id_reuse.build(
      "id-reuse", Severity::Error,
      fmt::format("{} events reuse an event id with a different payload", m_id_reuse.count()),
      "A consumer that deduplicates by this id drops these events as duplicates although they carry "
      "different data. Give every event a fresh id (UUID v4/v7) and never derive it from a business key; "
      "check that --id names the event id, not an entity id."));
  push(m_semantic_duplicate.build(
      "semantic-duplicate", Severity::Warning,
      fmt::format("{} events repeat an earlier event's intent under a new event id within {}",
                  m_semantic_duplicate.count(), format_duration(m_options.semantic_window_ms)),
      "A producer retried with a new id, which no consumer-side dedup by event id can catch. Make the "
      "producer keep the id across retries (generate it once, before the first send), or deduplicate on "
      "a business key (--semantic-key) where the handler allows it."));
  std::string binary = m_no_id_binary == 0 ? std::string{}
                                           : fmt::format(" ({} of them have a binary payload that json: specs "
                                                         "cannot read)",
                                                         m_no_id_binary);
  push(m_missing_id.build(
      "missing-event-id", Severity::Warning, fmt::format("{} events carry no event id{}", m_missing_id.count(), binary),
      fmt::format("These events cannot be deduplicated by id and every redelivery re-applies them. Check "
                  "that --id ({}) names where the producer puts the id, or fix the producer.{}",
                  m_options.id_specs,
                  m_no_id_binary == 0 ? ""
                                      : " A binary payload (Avro, Protobuf behind a schema registry) is not "
                                        "read: take the id from a header (--id header:event_id) or the "
                                        "record key (--id key).")));
  push(m_log_duplicate.build(
      "log-duplicate", Severity::Info,
      fmt::format("{} events repeat an earlier event (same id, same payload)", m_log_duplicate.count()),
      "Producer retries: harmless while consumers deduplicate by event id. Enable the idempotent "
      "producer (enable.idempotence=true, acks=all) to stop them at the source."));
  return out;
}

} // namespace dedupctl::core
