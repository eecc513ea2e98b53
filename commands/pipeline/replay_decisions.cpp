// The replay's last steps: each event's decision, the run's counts and examples, the checkpoint,
// and the report of what was done.
#include "commands/pipeline/replay_runner.hpp"
#include "core/replay/repair.hpp"
#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::commands::replay_detail {

// The front chunk, once its claims are settled (or looked at, in a plan): log its decisions, count,
// and checkpoint. Chunks finish in order, so checkpoints only move forward.
void ReplayRunner::finish_front() {
  Chunk& chunk = m_chunks.front();
  auto timer = stage(&ReplayStageTimes::checkpoint);
  for (const auto& row : chunk.rows) {
    core::ReplayPartition& p = partition_of(row);
    ++p.events;
    bool publish = false;
    core::DecisionRecord record = decide(chunk, row, publish);
    (publish ? p.publish : p.skip) += 1;
    m_journal.decide(record);
  }
  m_journal.flush_decisions();
  checkpoint(chunk);
  m_events_total += static_cast<std::int64_t>(chunk.rows.size());
  m_in_flight.finish_oldest();
  if (m_spare_chunks.size() < 2) {
    m_spare_chunks.push_back(std::move(chunk));
  }
  m_chunks.pop_front();
  if (m_request.after_chunk) {
    m_request.after_chunk(m_events_total);
  }
}

// One event's decision (core::decide_replay's table over the facts of its chunk), counted in the run
// and its findings' examples; `publish` says whether it was (or would be) published.
core::DecisionRecord ReplayRunner::decide(const Chunk& chunk, const Chunk::Row& row, bool& publish) {
  core::DecisionFacts facts;
  facts.execute = m_request.execute;
  facts.repair = m_request.repair;
  facts.guard = m_request.guard;
  facts.states = m_request.transitions != nullptr;
  facts.has_id = row.key != SIZE_MAX;
  if (facts.has_id) {
    std::size_t k = row.key;
    facts.first_of_key = row.first && !chunk.in_flight_elsewhere[k];
    facts.claim = chunk.claims[k];
    facts.delivered = facts.execute && chunk.delivered[k];
    facts.found_in_sink = facts.delivered && chunk.found_in_sink[k];
  }
  auto outcome = core::decide_replay(facts);
  publish = outcome.publish;
  core::DecisionRecord record{row.id,     m_topics[row.topic], row.partition,
                              row.offset, outcome.decision,    core::reason_text(outcome.why)};
  switch (outcome.why) {
  case core::DecisionWhy::NoId:
    record.reason = row.no_id_reason.empty() ? std::string_view("no event id") : std::string_view(row.no_id_reason);
    ++m_run.no_id;
    break;
  case core::DecisionWhy::KeyEarlier:
  case core::DecisionWhy::RecordExists:
  case core::DecisionWhy::GuardDrops:
  case core::DecisionWhy::StateDrops:
    ++m_run.skipped_duplicate;
    break;
  case core::DecisionWhy::Unfit:
    record.reason = m_unfit_reason;
    ++m_run.id_unfit;
    m_unfit_examples.add(row.partition, [&] { return example(chunk, row, ""); });
    break;
  case core::DecisionWhy::ClaimedElsewhere:
    ++m_run.skipped_claimed;
    m_claimed_examples.add(row.partition, [&] { return example(chunk, row, ""); });
    break;
  case core::DecisionWhy::NoRecord:
  case core::DecisionWhy::OwnStale:
  case core::DecisionWhy::Lost:
  case core::DecisionWhy::GuardApplies:
  case core::DecisionWhy::StateApplies:
    ++m_run.would_replay;
    break;
  case core::DecisionWhy::NotLost:
    ++m_not_lost;
    break;
  case core::DecisionWhy::RecordChanged:
    ++m_changed;
    m_changed_examples.add(row.partition, [&] { return example(chunk, row, ""); });
    break;
  case core::DecisionWhy::Repaired:
    ++m_records_released;
    ++m_run.replayed;
    break;
  case core::DecisionWhy::RepairedRetried:
    ++m_run.replayed;
    break;
  case core::DecisionWhy::AlreadyInSink:
    ++m_run.found_in_sink;
    ++m_run.replayed;
    break;
  case core::DecisionWhy::Published:
  case core::DecisionWhy::PublishedRetried:
    ++m_run.replayed;
    break;
  case core::DecisionWhy::DeliveryFailed: {
    // The record only views its reason: the text lives in the runner until the next decision.
    m_failed_reason = "delivery failed (" + chunk.first_error +
                      (m_request.repair  ? "); its stale record was released: a seek applies it"
                       : m_request.guard ? "); nothing was claimed: a rerun publishes it"
                                         : "); claim released");
    record.reason = m_failed_reason;
    ++m_run.failed;
    if (!m_request.repair && !m_request.guard) { // a repair and a guard hold no claim to release
      ++m_run.released;
    } else if (facts.claim == core::Claim::Claimed) {
      ++m_records_released;
    }
    m_failed_examples.add(row.partition, [&] { return example(chunk, row, chunk.first_error); });
    auto [it, inserted] = m_held.try_emplace(pack(row), row.offset);
    if (!inserted) {
      it->second = std::min(it->second, row.offset);
    }
    break;
  }
  }
  return record;
}

// Per partition of the chunk, the next offset: after its last event, or held at its first failed
// one; then the checkpoint file (a run).
void ReplayRunner::checkpoint(const Chunk& chunk) {
  std::unordered_map<std::uint64_t, std::int64_t> chunk_next; // partition → next offset, this chunk
  for (const auto& row : chunk.rows) {
    auto [it, inserted] = chunk_next.try_emplace(pack(row), row.offset + 1);
    if (!inserted) {
      it->second = std::max(it->second, row.offset + 1);
    }
  }
  for (auto [packed, next] : chunk_next) {
    const std::string& topic = m_topics[packed >> 32];
    auto partition = static_cast<std::int32_t>(packed & 0xffffffffU);
    auto hold = m_held.find(packed);
    if (hold != m_held.end()) {
      next = std::min(next, hold->second);
    }
    auto current = m_checkpoint.next_offset(topic, partition);
    if (!current || next > *current || hold != m_held.end()) {
      m_checkpoint.set(topic, partition, next);
    }
  }
  for (const auto& row : chunk.rows) { // found in the sink, and now below the checkpoint (not held)
    if (!m_in_sink_unsettled.empty() &&
        row.offset < m_checkpoint.next_offset(m_topics[row.topic], row.partition).value_or(0)) {
      m_in_sink_unsettled.erase(row.id);
    }
  }
  if (m_request.execute && m_journal.keeps_checkpoints()) {
    // Where a resumed run reads the sink back from: before anything a later, unsettled chunk
    // published (whose offsets come after what was delivered before it began). Chunks publish in
    // order, so when the next one has not, none after it has.
    bool next_published = m_chunks.size() > 1 && m_chunks[1].stage >= Chunk::Stage::Published;
    m_checkpoint.sink_position = next_published ? m_chunks[1].start_position : m_sink->position();
    // A resumed run found lines of an interrupted one after the position it read back from; those
    // whose events this checkpoint does not cover (another partition's, not reached yet) must be
    // read back again by a rerun, so the position stays where it was until every one is covered.
    if (!m_in_sink_unsettled.empty()) {
      m_checkpoint.sink_position = m_request.checkpoint->sink_position;
    }
    m_journal.checkpoint(m_checkpoint);
  }
}

core::ReplayPartition& ReplayRunner::partition_of(const Chunk::Row& row) {
  auto [it, inserted] = m_partition_cache.try_emplace(pack(row), nullptr);
  if (inserted) {
    auto& p = m_partitions[{m_topics[row.topic], row.partition}]; // map nodes stay put
    if (p.topic.empty()) {
      p.topic = m_topics[row.topic];
      p.partition = row.partition;
    }
    it->second = &p;
  }
  return *it->second;
}

core::Example ReplayRunner::example(const Chunk& chunk, const Chunk::Row& row, std::string note) const {
  core::Example ex;
  ex.event_id = row.id;
  ex.topic = m_topics[row.topic];
  ex.partition = row.partition;
  ex.offset = row.offset;
  ex.timestamp_ms = row.timestamp_ms;
  ex.dedup_key = row.key == SIZE_MAX ? "" : chunk.keys[row.key];
  ex.note = std::move(note);
  return ex;
}

void ReplayRunner::fill(reports::Report& report, core::SourceInfo info) {
  for (auto& [key, p] : m_partitions) {
    p.next = m_checkpoint.next_offset(p.topic, p.partition);
    m_run.partitions.push_back(p);
  }
  const auto& run = m_run;
  std::int64_t events = m_log.counters().events;
  report.summary = {{"events", events}, {"no_id", run.no_id}, {"id_unfit", run.id_unfit}};
  std::int64_t repair_skips = m_not_lost + m_changed;
  if (m_request.execute) {
    report.summary.insert(report.summary.end(), {{"replayed", run.replayed},
                                                 {"skipped_duplicate", run.skipped_duplicate},
                                                 {"skipped_claimed", run.skipped_claimed},
                                                 {"failed", run.failed},
                                                 {"released", run.released}});
  } else {
    report.summary.insert(report.summary.end(),
                          {{"would_replay", run.would_replay},
                           {"would_skip", run.skipped_duplicate + run.skipped_claimed + repair_skips}});
  }
  if (m_request.repair) { // what a repair left: not lost, or changed since it was read
    report.summary.insert(report.summary.end(), {{"not_lost", m_not_lost}, {"left_changed", m_changed}});
    if (m_request.execute) {
      report.summary.emplace_back("records_released", m_records_released);
    }
  }
  core::ReplaySummary summary;
  summary.window = "[from, to)";
  summary.events = events;
  summary.would_reapply = m_request.execute ? run.replayed : run.would_replay;
  summary.would_skip = run.skipped_duplicate + run.skipped_claimed + repair_skips;
  summary.run = run;
  report.replay = summary;
  report.settings = {
      {"mode", m_request.execute ? "execute" : "plan (nothing was published or claimed)"},
      {"run", m_request.run_id},
      {"id", core::to_string(m_request.identify.id)},
      {"key template", m_request.guard ? m_request.placement.key_template : m_request.key_template.text()},
      {"batch", std::to_string(m_request.batch_size)},
      {"fail on", m_request.fail_on_text}};
  if (!run.sink.empty()) {
    report.settings.emplace_back("sink", run.sink);
  }
  if (m_request.versions) {
    core::LogAnalyzerOptions versions;
    versions.versions = m_request.versions;
    versions.transitions = m_request.transitions;
    add_version_settings(report, m_request.identify, versions);
  }
  std::vector<core::Finding> findings = m_request.placement_findings;
  for (auto& f :
       core::replay_findings(run, m_placement.unfit_keys(), m_failed_examples, m_unfit_examples, m_claimed_examples)) {
    findings.push_back(std::move(f));
  }
  if (m_request.repair) {
    if (auto f = core::repair_changed_finding(m_changed, m_changed_examples)) {
      findings.push_back(std::move(*f));
    }
  }
  for (auto& f : m_placement.findings()) {
    findings.push_back(std::move(f));
  }
  finish_report(report, std::move(info), m_log, std::move(findings), m_request.max_examples, m_request.fail_on,
                m_source.positions());
}

} // namespace dedupctl::commands::replay_detail
