#include "core/scan/log_analyzer.hpp"

#include "core/util/fingerprint.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::core {

namespace {
// How far a partition's events may run behind its latest time and still find their key in memory.
constexpr std::int64_t k_clock_slack_ms = 60'000;
} // namespace

LogAnalyzer::LogAnalyzer(LogAnalyzerOptions options)
    : m_options(std::move(options)), m_tally(m_options.max_examples),
      m_first_payload(m_options.id_archive ? std::min(m_options.expected_events, m_options.id_table_limit)
                                           : m_options.expected_events),
      m_semantic(m_options.semantic_archive ? std::min(m_options.expected_events, m_options.semantic_table_limit)
                                            : m_options.expected_events),
      m_semantic_archive(m_options.semantic_archive), m_id_archive(m_options.id_archive),
      m_id_limit(std::max<std::size_t>(m_options.id_table_limit, 16)),
      m_semantic_limit(std::max<std::size_t>(m_options.semantic_table_limit, 16)) {
  if (m_options.versions) {
    m_versions = std::make_unique<VersionAnalyzer>(*m_options.versions, m_options.max_examples);
    if (m_options.keep_every_event) {
      m_versions->keep_every_event();
    }
    if (m_options.transitions) {
      m_versions->use_transitions(m_options.transitions.get());
    }
    m_versions->reserve(m_options.expected_events);
  }
}

std::vector<Finding> LogAnalyzer::findings() const {
  std::vector<Finding> out = log_findings(m_tally, m_options);
  for (auto& f : version_findings()) {
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> LogAnalyzer::version_findings() const {
  return m_versions ? m_versions->findings() : std::vector<Finding>{};
}

// The id table is full: every id in it goes to the archive as one run (sorted by order key), and
// the table starts empty at the same capacity. When the archive cannot keep them, the table keeps
// them and grows from now on. The run (16 bytes an id) lives only while it is written: held from
// one spill to the next it was the largest thing a long range added to the peak (16.8 MB of a 4M
// audit's; tests/bench/audit-redis/growth).
void LogAnalyzer::spill_ids() {
  std::vector<KeyArchive::Entry> run;
  run.reserve(m_first_payload.size());
  m_first_payload.extract_if([](std::uint64_t, std::uint32_t) { return true; }, run);
  if (!m_id_archive->archive(run)) {
    for (const auto& entry : run) {
      bool inserted = false;
      m_first_payload.find_or_insert(FlatHashMap<std::uint32_t>::key_of_order(entry.key), inserted) =
          static_cast<std::uint32_t>(entry.value);
    }
    m_id_archive = nullptr;
    return;
  }
  m_ids_archived = true;
}

std::uint32_t LogAnalyzer::first_payload(std::uint64_t id_hash, std::uint32_t payload, bool& inserted) {
  if (!m_ids_archived) { // nothing to ask elsewhere: one probe
    std::uint32_t& first = m_first_payload.find_or_insert(id_hash, inserted);
    if (!inserted) {
      return first;
    }
    first = payload;
  } else {
    if (const std::uint32_t* held = m_first_payload.find(id_hash)) {
      inserted = false;
      return *held;
    }
    auto archived = m_options.id_archive->latest(
        FlatHashMap<std::uint32_t>::order_key(FlatHashMap<std::uint32_t>::stored(id_hash)));
    if (archived) {
      inserted = false;
      return static_cast<std::uint32_t>(*archived);
    }
    m_first_payload.find_or_insert(id_hash, inserted) = payload;
  }
  if (m_id_archive && m_first_payload.size() >= m_id_limit) {
    spill_ids();
  }
  return payload;
}

// Notes the event's time on its partition's clock.
void LogAnalyzer::tick(const Event& event, std::int64_t relative) {
  if (m_clock_topic >= m_clocks.size() || event.topic != m_clocks[m_clock_topic].topic) {
    auto it =
        std::find_if(m_clocks.begin(), m_clocks.end(), [&](const TopicClocks& t) { return t.topic == event.topic; });
    if (it == m_clocks.end()) {
      it = m_clocks.insert(it, TopicClocks{std::string(event.topic), {}});
    }
    m_clock_topic = static_cast<std::size_t>(it - m_clocks.begin());
  }
  auto& partitions = m_clocks[m_clock_topic].partitions;
  auto p = static_cast<std::size_t>(std::max(event.partition, 0));
  if (p >= partitions.size()) {
    partitions.resize(p + 1);
  }
  Clock& clock = partitions[p];
  clock.latest = clock.generation == 0 ? relative : std::max(clock.latest, relative);
  clock.generation = m_generation;
}

// The semantic table is full: the keys whose latest event is older than the window (and the slack)
// before the earliest clock of the partitions that had events since the last sweep go to the
// archive. When that would free less than a quarter of the table, or the archive cannot keep them,
// the table grows instead.
void LogAnalyzer::sweep() {
  std::int64_t earliest = INT64_MAX;
  for (const auto& topic : m_clocks) {
    for (const auto& clock : topic.partitions) {
      if (clock.generation == m_generation) {
        earliest = std::min(earliest, clock.latest);
      }
    }
  }
  ++m_generation; // every partition's next event marks it active again
  std::int64_t below = earliest - m_options.semantic_window_ms - k_clock_slack_ms;
  auto old = [&](std::uint64_t /*key*/, SemanticEntry entry) {
    return static_cast<std::int64_t>(entry >> SemanticStamp::k_id_bits) < below;
  };
  std::size_t old_keys = 0;
  m_semantic.for_each([&](std::uint64_t key, SemanticEntry entry) { old_keys += old(key, entry) ? 1 : 0; });
  if (old_keys * 4 < m_semantic.size()) {
    m_semantic_limit *= 2;
    return;
  }
  std::vector<KeyArchive::Entry> run; // as an id spill's, only while it is written
  run.reserve(old_keys);
  m_semantic.extract_if(old, run);
  if (!m_semantic_archive->archive(run)) {
    for (const auto& entry : run) { // back in, and everything stays in memory from now on
      bool inserted = false;
      m_semantic.find_or_insert(FlatHashMap<SemanticEntry>::key_of_order(entry.key), inserted) = entry.value;
    }
    m_semantic_archive = nullptr;
    return;
  }
  m_archived_below = std::max(m_archived_below, below);
}

std::int64_t SemanticStamp::relative(std::int64_t timestamp_ms, std::int64_t base_ms) {
  // Clamp into 40 bits centred on the first event seen: timestamps more than ±8.7 years away pile
  // up at the edges.
  return std::clamp<std::int64_t>(timestamp_ms - base_ms + (1LL << 38), 0, (1LL << 40) - 1);
}

std::string semantic_note(std::int64_t gap_ms) {
  return fmt::format("same semantic key as an event with another id {} {}", format_duration(std::max(gap_ms, -gap_ms)),
                     gap_ms >= 0 ? "earlier" : "later");
}

std::string reuse_note(std::uint32_t payload, std::uint32_t first_payload) {
  return fmt::format("payload {:08x} differs from the first payload {:08x} of this id", payload, first_payload);
}

void LogAnalyzer::observe(std::span<const Event> events, std::span<const Identity> identities) {
  if (m_versions) {
    m_versions->observe(events, identities); // a batch at a time: it looks its entities up ahead
  }
  // The id table and the semantic table are probed at random: their slots are asked for a few events
  // ahead, so that each probe waits for less than a whole cache miss.
  constexpr std::size_t k_ahead = 8;
  auto ask_ahead = [&](std::size_t i) {
    if (i < identities.size() && identities[i].has_id) {
      m_first_payload.prefetch(identities[i].id_hash);
      m_semantic.prefetch(identities[i].semantic_hash);
    }
  };
  for (std::size_t i = 0; i < k_ahead; ++i) {
    ask_ahead(i);
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    ask_ahead(i + k_ahead);
    observe_log(events[i], identities[i]);
  }
}

void LogAnalyzer::observe(const Event& event, const Identity& identity) {
  if (m_versions) {
    m_versions->observe(event, identity);
  }
  observe_log(event, identity);
}

void LogAnalyzer::observe_log(const Event& event, const Identity& identity) {
  LogCounters& counters = m_tally.counters;
  ++counters.events;
  if (!identity.has_id) {
    ++counters.no_id;
    m_tally.no_id_binary += identity.binary_payload ? 1 : 0;
    m_tally.missing_id.add(event.partition,
                           [&] { return example_of(event, identity, {}, std::string(identity.no_id_reason)); });
    return;
  }
  bool inserted = false;
  auto payload = static_cast<std::uint32_t>(identity.payload_fingerprint);
  std::uint32_t first = first_payload(identity.id_hash, payload, inserted);
  if (!inserted) {
    auto later = m_reused.find(identity.id_hash);
    bool same = first == payload || (later != m_reused.end() && std::find(later->second.begin(), later->second.end(),
                                                                          payload) != later->second.end());
    if (same) {
      ++counters.log_duplicates;
      m_tally.log_duplicate.add(event.partition, [&] { return example_of(event, identity); });
    } else {
      ++counters.id_reuse;
      m_reused[identity.id_hash].push_back(payload);
      std::uint32_t original = first;
      m_tally.id_reuse.add(event.partition,
                           [&] { return example_of(event, identity, {}, reuse_note(payload, original)); });
    }
    return;
  }
  if (!m_time_base) {
    m_time_base = event.timestamp_ms;
  }
  constexpr std::uint64_t k_id_bits = SemanticStamp::k_id_bits;
  constexpr std::uint64_t k_id_mask = SemanticStamp::k_id_mask;
  std::int64_t relative = SemanticStamp::relative(event.timestamp_ms, *m_time_base);
  std::uint64_t id_tag = identity.id_hash & k_id_mask;
  if (m_semantic_archive) {
    tick(event, relative);
    if (m_semantic.size() >= m_semantic_limit) {
      sweep();
    }
  }
  SemanticEntry& entry = m_semantic.find_or_insert(identity.semantic_hash, inserted);
  std::optional<SemanticEntry> latest;
  if (!inserted) {
    latest = entry;
  } else if (relative - m_options.semantic_window_ms < m_archived_below) {
    // Absent here, but an archived entry of the key may be within the window.
    latest = m_options.semantic_archive->latest(
        FlatHashMap<SemanticEntry>::order_key(FlatHashMap<SemanticEntry>::stored(identity.semantic_hash)));
  }
  if (latest && (*latest & k_id_mask) != id_tag) {
    std::int64_t previous = static_cast<std::int64_t>(*latest >> k_id_bits);
    std::int64_t gap = relative - previous;
    if (std::max(gap, -gap) <= m_options.semantic_window_ms) {
      ++counters.semantic_duplicates;
      m_tally.semantic_duplicate.add(event.partition,
                                     [&] { return example_of(event, identity, {}, semantic_note(gap)); });
    }
  }
  entry = (static_cast<std::uint64_t>(relative) << k_id_bits) | id_tag;
}

std::vector<Finding> log_findings(const LogTally& tally, const LogAnalyzerOptions& options) {
  std::vector<Finding> out;
  auto push = [&](std::optional<Finding> finding) {
    if (finding) {
      out.push_back(std::move(*finding));
    }
  };
  push(tally.id_reuse.build(
      "id-reuse", Severity::Error,
      fmt::format("{} events reuse an event id with a different payload", tally.id_reuse.count()),
      "A consumer that deduplicates by this id drops these events as duplicates although they carry "
      "different data. Give every event a fresh id (UUID v4/v7) and never derive it from a business key; "
      "check that --id names the event id, not an entity id."));
  push(tally.semantic_duplicate.build(
      "semantic-duplicate", Severity::Warning,
      fmt::format("{} events repeat an earlier event's intent under a new event id within {}",
                  tally.semantic_duplicate.count(), format_duration(options.semantic_window_ms)),
      "A producer retried with a new id, which no consumer-side dedup by event id can catch. Make the "
      "producer keep the id across retries (generate it once, before the first send), or deduplicate on "
      "a business key (--semantic-key) where the handler allows it."));
  std::string binary = tally.no_id_binary == 0 ? std::string{}
                                               : fmt::format(" ({} of them have a binary payload that json: specs "
                                                             "cannot read)",
                                                             tally.no_id_binary);
  push(tally.missing_id.build(
      "missing-event-id", Severity::Warning,
      fmt::format("{} events carry no event id{}", tally.missing_id.count(), binary),
      fmt::format("These events cannot be deduplicated by id and every redelivery re-applies them. Check "
                  "that --id ({}) names where the producer puts the id, or fix the producer.{}",
                  options.id_specs,
                  tally.no_id_binary == 0 ? ""
                                          : " A binary payload (Avro, Protobuf, JSON Schema behind a schema "
                                            "registry) is read through --registry URL (or --schemas DIR); the "
                                            "examples say why these were not. Or take the id from a header "
                                            "(--id header:event_id) or the record key (--id key).")));
  push(tally.log_duplicate.build(
      "log-duplicate", Severity::Info,
      fmt::format("{} events repeat an earlier event (same id, same payload)", tally.log_duplicate.count()),
      "Producer retries: harmless while consumers deduplicate by event id. Enable the idempotent "
      "producer (enable.idempotence=true, acks=all) to stop them at the source."));
  return out;
}

} // namespace dedupctl::core
