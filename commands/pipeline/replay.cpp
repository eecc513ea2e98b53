#include "commands/pipeline/replay.hpp"

#include "commands/pipeline/common.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/flat_map.hpp"
#include "core/log_analyzer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <unordered_map>
#include <unordered_set>

namespace dedupctl::commands {

namespace {

// Event ids an interrupted run published after its last checkpoint.
std::unordered_set<std::string> read_back(core::ReplaySink& sink, const std::string& position,
                                          const core::IdentifyOptions& identify) {
  std::unordered_set<std::string> ids;
  auto tail = sink.read_after(position);
  core::Identifier identifier(identify);
  core::EventBatch batch;
  std::vector<core::Identity> identities;
  while (tail->next_batch(batch)) {
    identifier.identify(batch, identities);
    for (const auto& identity : identities) {
      if (identity.has_id) {
        ids.emplace(identity.id);
      }
    }
  }
  return ids;
}

// One chunk of --batch events from claim to settle. It outlives its source batch, so it keeps
// what the decisions and examples need.
struct Chunk {
  std::uint64_t seq = 0;
  struct Row {
    std::string id;
    std::uint32_t topic = 0; // index into the run's topics
    std::int32_t partition = 0;
    std::int64_t offset = 0;
    std::int64_t timestamp_ms = -1;
    std::size_t key = SIZE_MAX; // index into keys; SIZE_MAX without an id
    bool first = false;         // the key's first event in the chunk
    std::string no_id_reason;
  };
  std::vector<Row> rows;
  std::vector<std::string> keys;
  std::vector<core::Claim> claims;
  std::vector<bool> in_flight_elsewhere; // the key belongs to an earlier unsettled chunk
  std::vector<bool> published;
  std::vector<bool> delivered;
  std::vector<bool> found_in_sink;
  std::size_t outstanding = 0; // publishes without a delivery report
  std::string first_error;
  std::string start_position; // the sink's position before this chunk published anything
  bool ready = false;         // claimed and published: only then may it settle
};

// Adds the time until it goes out of scope to one stage of ReplayStageTimes (none when not asked).
class StageTimer {
public:
  explicit StageTimer(double* slot) : m_slot(slot) {
    if (m_slot) {
      m_start = std::chrono::steady_clock::now();
    }
  }
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;
  ~StageTimer() {
    if (m_slot) {
      *m_slot += std::chrono::duration<double>(std::chrono::steady_clock::now() - m_start).count();
    }
  }

private:
  double* m_slot;
  std::chrono::steady_clock::time_point m_start;
};

} // namespace

std::string ReplayStageTimes::describe() const {
  return fmt::format("read {:.2f} s, prepare {:.2f} s, claim {:.2f} s, publish {:.2f} s, wait for deliveries {:.2f} s, "
                     "settle {:.2f} s, decisions and checkpoints {:.2f} s",
                     read, prepare, claim, publish, wait, settle, checkpoint);
}

reports::Report run_replay(const ReplayRequest& request, core::EventSource& source, core::ReplayPlacement& placement,
                           core::ReplaySink* sink, core::SourceInfo info, std::int64_t now_ms) {
  reports::Report report;
  report.command = "replay";
  report.generated_at_ms = now_ms;
  report.fail_on = request.fail_on_text;
  report.placement = request.placement;

  core::ReplayRun run;
  run.execute = request.execute;
  run.run_id = request.run_id;
  run.sink = sink ? sink->describe() : "";
  run.resumed = request.checkpoint.has_value();
  core::Checkpoint checkpoint = request.checkpoint.value_or(core::Checkpoint{});
  checkpoint.run_id = request.run_id;
  checkpoint.sink = run.sink;
  bool publishing = request.execute && sink;

  std::vector<std::string> topics;
  auto topic_index = [&](std::string_view topic) {
    for (std::size_t t = 0; t < topics.size(); ++t) {
      if (topics[t] == topic) {
        return static_cast<std::uint32_t>(t);
      }
    }
    topics.emplace_back(topic);
    return static_cast<std::uint32_t>(topics.size() - 1);
  };
  std::map<std::pair<std::string, std::int32_t>, core::ReplayPartition> partitions;
  for (const auto& range : info.partitions) {
    auto& p = partitions[{range.topic, range.partition}];
    p.topic = range.topic;
    p.partition = range.partition;
    p.from = range.from;
    p.to = range.to;
    if (auto next = checkpoint.next_offset(range.topic, range.partition)) {
      p.from = std::max(range.from, *next);
    }
  }
  // A partition as (topic index << 32 | partition).
  auto pack = [](const auto& row) {
    return (static_cast<std::uint64_t>(row.topic) << 32) | static_cast<std::uint32_t>(row.partition);
  };
  std::unordered_map<std::uint64_t, std::int64_t> held;       // partition → first failed offset
  std::unordered_map<std::uint64_t, std::int64_t> chunk_next; // partition → next offset, this chunk
  std::unordered_map<std::uint64_t, core::ReplayPartition*> partition_cache;

  auto partition_of = [&](const auto& row) -> core::ReplayPartition& {
    auto [it, inserted] = partition_cache.try_emplace(pack(row), nullptr);
    if (inserted) {
      auto& p = partitions[{topics[row.topic], row.partition}]; // map nodes stay put
      if (p.topic.empty()) {
        p.topic = topics[row.topic];
        p.partition = row.partition;
      }
      it->second = &p;
    }
    return *it->second;
  };

  auto stage_slot = [&](double ReplayStageTimes::*member) { return request.times ? &(request.times->*member) : nullptr; };
  auto stage = [&](double ReplayStageTimes::*member) { return StageTimer(stage_slot(member)); };
  core::IdentifyOptions identify = request.identify;
  identify.extra = request.key_template.fields();
  core::LogAnalyzerOptions log_options;
  log_options.max_examples = request.max_examples;
  log_options.id_specs = core::to_string(request.identify.id);
  core::LogAnalyzer log(log_options);
  core::Identifier identifier(identify);
  core::FindingBuilder failed_examples(request.max_examples), claimed_examples(request.max_examples);
  core::FlatHashMap<std::uint8_t> planned; // a plan: keys already planned for publishing in this range

  std::unordered_set<std::string> in_sink;
  // Claimed keys of unsettled chunks, as hash → count; a hit is confirmed against the chunks' keys.
  core::FlatHashMap<std::uint32_t> in_flight_keys;
  auto key_hash = [](const std::string& key) { return core::hash64(key, 0x1f); };
  std::deque<Chunk> chunks;
  // Whether an unsettled chunk (not the one being built) claimed `key` for this run.
  auto in_flight = [&](const std::string& key) {
    const std::uint32_t* count = in_flight_keys.find(key_hash(key));
    if (!count || *count == 0) {
      return false;
    }
    for (std::size_t c = 0; c + 1 < chunks.size(); ++c) {
      const Chunk& other = chunks[c];
      for (std::size_t k = 0; k < other.keys.size(); ++k) {
        bool ours = (other.claims[k] == core::Claim::Claimed || other.claims[k] == core::Claim::OwnStale) &&
                    !other.in_flight_elsewhere[k];
        if (ours && other.keys[k] == key) {
          return true;
        }
      }
    }
    return false; // another key with the same hash
  };
  std::uint64_t next_seq = 0;
  std::int64_t events_total = 0;
  std::vector<core::Delivery> deliveries;
  std::size_t max_in_flight = publishing ? std::max<std::size_t>(1, placement.max_in_flight()) : 1;

  auto example = [&](const Chunk& chunk, const Chunk::Row& row, std::string note) {
    core::Example ex;
    ex.event_id = row.id;
    ex.topic = topics[row.topic];
    ex.partition = row.partition;
    ex.offset = row.offset;
    ex.timestamp_ms = row.timestamp_ms;
    ex.dedup_key = row.key == SIZE_MAX ? "" : chunk.keys[row.key];
    ex.note = std::move(note);
    return ex;
  };

  // The front chunk, once every publish of it has a report: settle its claims, log its decisions,
  // count, and checkpoint. Chunks settle in order, so checkpoints only move forward.
  auto settle_front = [&] {
    Chunk& chunk = chunks.front();
    if (request.execute) {
      auto timer = stage(&ReplayStageTimes::settle);
      placement.settle(chunk.keys, chunk.claims, chunk.delivered);
    }
    auto timer = stage(&ReplayStageTimes::checkpoint);
    for (std::size_t k = 0; k < chunk.keys.size(); ++k) {
      bool ours = chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale;
      if (ours && !chunk.in_flight_elsewhere[k]) {
        bool inserted = false;
        std::uint32_t& count = in_flight_keys.find_or_insert(key_hash(chunk.keys[k]), inserted);
        count = count > 0 ? count - 1 : 0;
      }
    }
    for (const auto& row : chunk.rows) {
      core::ReplayPartition& p = partition_of(row);
      ++p.events;
      core::DecisionRecord record{
          row.id, topics[row.topic], row.partition, row.offset, core::Decision::SkippedDuplicate, ""};
      std::string reason;
      bool publish = false;
      if (row.key == SIZE_MAX) {
        record.decision = core::Decision::NoId;
        record.reason = row.no_id_reason.empty() ? "no event id" : row.no_id_reason;
        ++run.no_id;
      } else {
        std::size_t k = row.key;
        core::Claim claim = chunk.claims[k];
        bool ours = (claim == core::Claim::Claimed || claim == core::Claim::OwnStale) && !chunk.in_flight_elsewhere[k];
        if (!row.first || chunk.in_flight_elsewhere[k]) {
          record.decision = request.execute ? core::Decision::SkippedDuplicate : core::Decision::WouldSkip;
          record.reason = "its key came earlier in the range";
          ++run.skipped_duplicate;
        } else if (!ours) {
          bool other = claim == core::Claim::HeldByOther;
          record.decision = !request.execute ? core::Decision::WouldSkip
                            : other          ? core::Decision::SkippedClaimed
                                             : core::Decision::SkippedDuplicate;
          record.reason = other ? "claimed in progress by another run or the consumer" : "a dedup record exists";
          if (other) {
            ++run.skipped_claimed;
            claimed_examples.add(row.partition, [&] { return example(chunk, row, ""); });
          } else {
            ++run.skipped_duplicate;
          }
        } else if (!request.execute) {
          record.decision = core::Decision::WouldReplay;
          record.reason = claim == core::Claim::OwnStale ? "this run's unfinished claim" : "no dedup record";
          ++run.would_replay;
          publish = true;
        } else if (chunk.delivered[k]) {
          record.decision = core::Decision::Replayed;
          record.reason = chunk.found_in_sink[k]           ? "already in the sink from the interrupted run"
                          : claim == core::Claim::OwnStale ? "published; this run's unfinished claim retried"
                                                           : "published";
          run.found_in_sink += chunk.found_in_sink[k] ? 1 : 0;
          ++run.replayed;
          publish = true;
        } else {
          record.decision = core::Decision::Failed;
          reason = "delivery failed (" + chunk.first_error + "); claim released";
          record.reason = reason;
          ++run.failed;
          ++run.released;
          failed_examples.add(row.partition, [&] { return example(chunk, row, chunk.first_error); });
          auto [it, inserted] = held.try_emplace(pack(row), row.offset);
          if (!inserted) {
            it->second = std::min(it->second, row.offset);
          }
        }
      }
      (publish ? p.publish : p.skip) += 1;
      if (request.decide) {
        request.decide(record);
      }
    }
    if (request.flush_decisions) {
      request.flush_decisions();
    }
    // Per partition of the chunk, the next offset: after its last event, or held at its first
    // failed one.
    chunk_next.clear();
    for (const auto& row : chunk.rows) {
      auto [it, inserted] = chunk_next.try_emplace(pack(row), row.offset + 1);
      if (!inserted) {
        it->second = std::max(it->second, row.offset + 1);
      }
    }
    for (auto [packed, next] : chunk_next) {
      const std::string& topic = topics[packed >> 32];
      auto partition = static_cast<std::int32_t>(packed & 0xffffffffU);
      auto hold = held.find(packed);
      if (hold != held.end()) {
        next = std::min(next, hold->second);
      }
      auto current = checkpoint.next_offset(topic, partition);
      if (!current || next > *current || hold != held.end()) {
        checkpoint.set(topic, partition, next);
      }
    }
    if (request.execute && request.save_checkpoint) {
      // Where a resumed run reads the sink back from: before anything a later, unsettled chunk
      // published (whose offsets come after what was delivered before it began).
      checkpoint.sink_position = chunks.size() > 1 ? chunks[1].start_position : sink->position();
      request.save_checkpoint(checkpoint);
    }
    events_total += static_cast<std::int64_t>(chunk.rows.size());
    chunks.pop_front();
    if (request.after_batch) {
      request.after_batch(events_total);
    }
  };

  // Takes the delivery reports in and settles the chunks that are complete; with `wait`, blocks
  // until at least the front chunk is.
  auto drain = [&](bool wait) {
    while (!chunks.empty()) {
      if (chunks.front().outstanding == 0) {
        settle_front();
        continue;
      }
      deliveries.clear();
      {
        auto timer = stage(wait ? &ReplayStageTimes::wait : &ReplayStageTimes::publish);
        sink->poll(deliveries, wait ? 100 : 0);
      }
      for (const auto& d : deliveries) {
        std::uint64_t seq = d.tag >> 32;
        auto k = static_cast<std::size_t>(d.tag & 0xffffffffULL);
        if (seq < chunks.front().seq || seq - chunks.front().seq >= chunks.size()) {
          continue; // not ours (cannot happen)
        }
        Chunk& chunk = chunks[seq - chunks.front().seq];
        --chunk.outstanding;
        if (!d.ok) {
          chunk.delivered[k] = false;
          if (chunk.first_error.empty()) {
            chunk.first_error = d.error;
          }
        }
      }
      if (!wait && chunks.front().outstanding > 0) {
        return;
      }
    }
  };

  core::EventBatch batch;
  std::vector<core::Identity> identities;
  core::FlatHashMap<std::uint32_t> key_index; // hash of a key → its index + 1, this chunk
  std::vector<std::string> to_claim;
  std::vector<std::size_t> claim_of;
  std::vector<core::Claim> claimed;
  std::string rendered;

  incomplete_on_failure(report, [&] {
    if (publishing && request.checkpoint && !request.checkpoint->sink_position.empty()) {
      in_sink = read_back(*sink, request.checkpoint->sink_position, request.identify);
    }
    // A fresh run writes its id and the sink's position before it claims anything: killed before its
    // first batch settles, its rerun still knows its claims and what the sink got since.
    if (publishing && !request.checkpoint && request.save_checkpoint) {
      checkpoint.sink_position = sink->position();
      request.save_checkpoint(checkpoint);
    }
    // Interrupted (SIGINT/SIGTERM) or with the source gone, what is in flight is still delivered,
    // settled and checkpointed before the run ends incomplete.
    auto finish_in_flight = [&] {
      while (publishing && !chunks.empty()) {
        drain(true);
      }
    };
    auto next_batch = [&] {
      try {
        auto timer = stage(&ReplayStageTimes::read);
        return source.next_batch(batch);
      } catch (const UnreachableError&) {
        finish_in_flight();
        throw;
      }
    };
    try {
      while (next_batch()) {
        // A resumed run skips what its checkpoint says is done.
        if (request.checkpoint) {
          std::erase_if(batch.events, [&](const core::Event& e) {
            auto next = request.checkpoint->next_offset(e.topic, e.partition);
            return next && e.offset < *next;
          });
        }
        std::optional<StageTimer> timer;
        timer.emplace(stage_slot(&ReplayStageTimes::prepare));
        identifier.identify(batch, identities);
        log.observe(batch.events, identities);
        // Claims, deliveries and settling go in chunks of --batch events: one transaction, one
        // checkpoint each.
        for (std::size_t begin = 0; begin < batch.events.size(); begin += request.batch_size) {
          std::size_t end = std::min(batch.events.size(), begin + request.batch_size);
          timer.emplace(stage_slot(&ReplayStageTimes::prepare));
          Chunk& chunk = chunks.emplace_back();
          chunk.seq = next_seq++;
          key_index = core::FlatHashMap<std::uint32_t>(end - begin);
          for (std::size_t i = begin; i < end; ++i) {
            const auto& event = batch.events[i];
            const auto& identity = identities[i];
            Chunk::Row& row = chunk.rows.emplace_back();
            row.topic = topic_index(event.topic);
            row.partition = event.partition;
            row.offset = event.offset;
            row.timestamp_ms = event.timestamp_ms;
            if (!identity.has_id) {
              row.no_id_reason = std::string(identity.no_id_reason);
              continue;
            }
            row.id = std::string(identity.id);
            core::render_event_key(request.key_template, event, identity, request.consumer, rendered);
            // Later events of a key already in the chunk are its duplicates.
            bool inserted = false;
            std::uint32_t& slot = key_index.find_or_insert(core::hash64(rendered, 0x4b), inserted);
            if (!inserted && chunk.keys[slot - 1] == rendered) {
              row.key = slot - 1;
              continue;
            }
            if (!inserted) { // two keys of one chunk with one 64-bit hash: look them all through
              auto found = std::find(chunk.keys.begin(), chunk.keys.end(), rendered);
              if (found != chunk.keys.end()) {
                row.key = static_cast<std::size_t>(found - chunk.keys.begin());
                continue;
              }
            } else {
              slot = static_cast<std::uint32_t>(chunk.keys.size() + 1);
            }
            row.key = chunk.keys.size();
            row.first = true;
            chunk.keys.push_back(rendered);
          }
          // A key an earlier, unsettled chunk of this run claimed is not asked again: the store
          // would answer with this run's own claim.
          std::size_t n = chunk.keys.size();
          chunk.in_flight_elsewhere.assign(n, false);
          chunk.claims.assign(n, core::Claim::Done);
          bool any_in_flight = false;
          for (std::size_t k = 0; k < n; ++k) {
            chunk.in_flight_elsewhere[k] = in_flight(chunk.keys[k]);
            any_in_flight |= chunk.in_flight_elsewhere[k];
          }
          // Usually no key is: the chunk's keys are asked as they are, without a copy.
          to_claim.clear();
          claim_of.clear();
          if (any_in_flight) {
            for (std::size_t k = 0; k < n; ++k) {
              if (!chunk.in_flight_elsewhere[k]) {
                to_claim.push_back(chunk.keys[k]);
                claim_of.push_back(k);
              }
            }
          }
          const std::vector<std::string>& asked = any_in_flight ? to_claim : chunk.keys;
          timer.emplace(stage_slot(&ReplayStageTimes::claim));
          if (request.execute) {
            placement.claim(asked, request.run_id, claimed);
          } else {
            placement.plan(asked, claimed);
          }
          for (std::size_t c = 0; c < asked.size(); ++c) {
            chunk.claims[any_in_flight ? claim_of[c] : c] = claimed[c];
          }
          if (!request.execute) {
            for (std::size_t k = 0; k < n; ++k) {
              if (chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale) {
                bool first_time = false;
                planned.find_or_insert(core::hash64(chunk.keys[k], 0x91), first_time);
                if (!first_time) {
                  chunk.claims[k] = core::Claim::Done; // an earlier event of the range takes the key first
                }
              }
            }
          }
          // Publish what was claimed (the key's first event of the chunk), unless an interrupted run
          // already did.
          timer.emplace(stage_slot(&ReplayStageTimes::publish));
          if (publishing) {
            chunk.start_position = sink->position();
          }
          chunk.published.assign(n, false);
          chunk.delivered.assign(n, false);
          chunk.found_in_sink.assign(n, false);
          for (std::size_t i = begin; i < end; ++i) {
            const Chunk::Row& row = chunk.rows[i - begin];
            if (row.key == SIZE_MAX || !row.first || !request.execute) {
              continue;
            }
            std::size_t k = row.key;
            bool ours = (chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale) &&
                        !chunk.in_flight_elsewhere[k];
            if (!ours) {
              continue;
            }
            bool inserted = false;
            ++in_flight_keys.find_or_insert(key_hash(chunk.keys[k]), inserted);
            chunk.delivered[k] = true;
            if (in_sink.contains(row.id)) {
              chunk.found_in_sink[k] = true; // settled below without publishing again
              continue;
            }
            sink->publish(batch.events[i], (chunk.seq << 32) | k);
            chunk.published[k] = true;
            ++chunk.outstanding;
          }
          chunk.ready = true;
          timer.reset();
          if (!publishing) {
            settle_front();
            continue;
          }
          drain(false);
          while (chunks.size() >= max_in_flight) {
            drain(true);
          }
        }
      }
    } catch (const InterruptedError&) {
      // Wherever SIGINT/SIGTERM caught the run: a chunk still being built claimed nothing and is
      // dropped (its events stay beyond the checkpoint); the rest is delivered and settled.
      while (!chunks.empty() && !chunks.back().ready) {
        chunks.pop_back();
      }
      finish_in_flight();
      throw;
    }
    finish_in_flight();
  });
  // A failure leaves chunks unsettled: their claims stay this run's (a rerun with the checkpoint
  // retries them), their publishes are read back from the sink on resume.

  for (auto& [key, p] : partitions) {
    p.next = checkpoint.next_offset(p.topic, p.partition);
    run.partitions.push_back(p);
  }
  report.summary = {{"events", log.counters().events}, {"no_id", run.no_id}};
  if (request.execute) {
    report.summary.insert(report.summary.end(), {{"replayed", run.replayed},
                                                 {"skipped_duplicate", run.skipped_duplicate},
                                                 {"skipped_claimed", run.skipped_claimed},
                                                 {"failed", run.failed},
                                                 {"released", run.released}});
  } else {
    report.summary.insert(report.summary.end(), {{"would_replay", run.would_replay},
                                                 {"would_skip", run.skipped_duplicate + run.skipped_claimed}});
  }
  core::ReplaySummary summary;
  summary.window = "[from, to)";
  summary.events = log.counters().events;
  summary.would_reapply = request.execute ? run.replayed : run.would_replay;
  summary.would_skip = run.skipped_duplicate + run.skipped_claimed;
  summary.run = run;
  report.replay = summary;

  std::vector<core::Finding> findings = request.placement_findings;
  if (auto f = failed_examples.build(
          "replay-failed", core::Severity::Error,
          fmt::format("{} events could not be delivered to {}; their claims were released", run.failed, run.sink),
          "Rerun with the same --checkpoint: it resumes at the first failed offset of each partition and publishes "
          "the failed events then; events delivered meanwhile are skipped as duplicates.")) {
    findings.push_back(std::move(*f));
  }
  if (auto f = claimed_examples.build(
          "replay-skipped-claimed", core::Severity::Warning,
          fmt::format("{} events were skipped because another run or the consumer holds their claim",
                      run.skipped_claimed),
          "If that claim is stale (its process died), it stays until its lease expires; rerun after the lease, or "
          "check the consumer.")) {
    findings.push_back(std::move(*f));
  }
  report.settings = {{"mode", request.execute ? "execute" : "plan (nothing was published or claimed)"},
                     {"run", request.run_id},
                     {"id", core::to_string(request.identify.id)},
                     {"key template", request.key_template.text()},
                     {"batch", std::to_string(request.batch_size)},
                     {"fail on", request.fail_on_text}};
  if (!run.sink.empty()) {
    report.settings.emplace_back("sink", run.sink);
  }
  finish_report(report, std::move(info), log, std::move(findings), request.max_examples, request.fail_on,
                source.positions());
  return report;
}

} // namespace dedupctl::commands
