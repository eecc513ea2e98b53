#include "commands/pipeline/replay.hpp"

#include "commands/pipeline/common.hpp"
#include "commands/pipeline/serial_worker.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/flat_map.hpp"
#include "core/log_analyzer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
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
  // Building → Claiming (sent to the placement) → Published (its claims back, its events handed
  // to the sink) → Settling (every delivery reported, settle sent) → finished and dropped.
  enum class Stage { Building, Claiming, Published, Settling };
  Stage stage = Stage::Building;
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
  std::vector<std::uint64_t> hashes;    // per key, its hash in `index`
  core::FlatHashMap<std::uint32_t> index; // a key's hash → its index + 1 (the first key of that hash)
  std::vector<core::Claim> claims;
  std::vector<bool> in_flight_elsewhere; // the key belongs to an earlier unsettled chunk
  // What goes to the placement: the keys not in flight elsewhere (all of `keys` when asked_all), and
  // its answers, in that order.
  bool asked_all = true;
  std::vector<std::string> asked;
  std::vector<std::size_t> asked_of;
  std::vector<core::Claim> answers;
  std::future<void> claim_done;
  std::future<void> settle_done;
  bool claimed_nothing = false; // its claim was interrupted before it sent anything
  std::vector<bool> published;
  std::vector<bool> delivered;
  std::vector<bool> found_in_sink;
  std::size_t outstanding = 0; // publishes without a delivery report
  std::string first_error;
  std::string start_position; // the sink's position before this chunk published anything
  std::shared_ptr<core::EventBatch> batch; // the source batch its events are in, until published
  std::size_t begin = 0;                   // rows[j] is batch->events[begin + j]
};

bool is_ready(const std::future<void>& done) {
  return done.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

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
  core::FindingBuilder failed_examples(request.max_examples), claimed_examples(request.max_examples),
      unfit_examples(request.max_examples);
  const std::string unfit_reason = "the placement cannot hold this id (" + placement.unfit_keys() + ")";
  core::FlatHashMap<std::uint8_t> planned; // a plan: keys already planned for publishing in this range

  std::unordered_set<std::string> in_sink;
  std::deque<Chunk> chunks;
  // Whether an earlier chunk still in flight (not the one being built, at the back) has `key`. Its
  // event came earlier in the range, so this one is its duplicate whatever the earlier claim found;
  // asking the store again would only meet this run's own claim.
  auto in_flight = [&](const std::string& key, std::uint64_t hash) {
    for (std::size_t c = 0; c + 1 < chunks.size(); ++c) {
      const Chunk& other = chunks[c];
      const std::uint32_t* slot = other.index.find(hash);
      if (slot && (other.keys[*slot - 1] == key ||
                   std::find(other.keys.begin(), other.keys.end(), key) != other.keys.end())) {
        return true;
      }
    }
    return false;
  };
  std::uint64_t next_seq = 0;
  std::int64_t events_total = 0;
  std::int64_t published_total = 0; // handed to the sink by this run
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

  // The front chunk, once its claims are settled (or looked at, in a plan): log its decisions, count,
  // and checkpoint. Chunks finish in order, so checkpoints only move forward.
  auto finish_front = [&] {
    Chunk& chunk = chunks.front();
    auto timer = stage(&ReplayStageTimes::checkpoint);
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
        } else if (claim == core::Claim::Unfit) {
          record.decision = core::Decision::IdUnfit;
          record.reason = unfit_reason;
          ++run.id_unfit;
          unfit_examples.add(row.partition, [&] { return example(chunk, row, ""); });
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
      // published (whose offsets come after what was delivered before it began). Chunks publish in
      // order, so when the next one has not, none after it has.
      bool next_published = chunks.size() > 1 && chunks[1].stage >= Chunk::Stage::Published;
      checkpoint.sink_position = next_published ? chunks[1].start_position : sink->position();
      request.save_checkpoint(checkpoint);
    }
    events_total += static_cast<std::int64_t>(chunk.rows.size());
    chunks.pop_front();
    if (request.after_batch) {
      request.after_batch(events_total);
    }
  };

  // Once a claim is interrupted, the later ones claim nothing either (a placement sees the stop flag
  // itself; this holds it for any placement), so the chunks that claimed nothing are the last. Once
  // a call fails, the later ones do nothing: the run ends at the first failure, in order, and what
  // was queued behind it stays as a rerun expects to find it (claimed by this run, unsettled).
  std::atomic<bool> claims_interrupted{false};
  std::exception_ptr placement_failure; // the first; only the worker's jobs touch it

  // The placement's calls run on a worker of their own, in order, so that its round trips overlap
  // reading, preparing and publishing; inline when batches must not overlap (one transaction per
  // batch on one connection) and in a plan. Declared after `chunks` and the flags above: it goes
  // first, so no job outlives what it works on.
  SerialWorker worker(publishing && max_in_flight > 1);
  auto placement_call = [&](std::function<void()> call, bool is_claim) {
    return worker.submit([&, call = std::move(call), is_claim] {
      if (placement_failure) {
        std::rethrow_exception(placement_failure); // whichever future is read first says why
      }
      if (is_claim && claims_interrupted) {
        throw InterruptedError("interrupted");
      }
      try {
        call();
      } catch (const InterruptedError&) {
        claims_interrupted = claims_interrupted || is_claim;
        throw;
      } catch (...) {
        placement_failure = std::current_exception();
        throw;
      }
    });
  };

  // Takes delivery reports in, waiting up to `timeout_ms` for the first.
  auto take_deliveries = [&](int timeout_ms) {
    deliveries.clear();
    {
      auto timer = stage(timeout_ms > 0 ? &ReplayStageTimes::wait : &ReplayStageTimes::publish);
      sink->poll(deliveries, timeout_ms);
    }
    for (const auto& d : deliveries) {
      std::uint64_t seq = d.tag >> 32;
      auto k = static_cast<std::size_t>(d.tag & 0xffffffffULL);
      if (chunks.empty() || seq < chunks.front().seq || seq - chunks.front().seq >= chunks.size()) {
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
  };

  // A chunk whose claims are back: publish what was claimed (the key's first event of the chunk),
  // unless an interrupted run already did.
  auto publish_chunk = [&](Chunk& chunk) {
    auto timer = stage(&ReplayStageTimes::publish);
    std::size_t n = chunk.keys.size();
    for (std::size_t c = 0; c < chunk.answers.size(); ++c) {
      chunk.claims[chunk.asked_all ? c : chunk.asked_of[c]] = chunk.answers[c];
    }
    chunk.start_position = sink->position();
    chunk.published.assign(n, false);
    chunk.delivered.assign(n, false);
    chunk.found_in_sink.assign(n, false);
    for (std::size_t j = 0; j < chunk.rows.size(); ++j) {
      const Chunk::Row& row = chunk.rows[j];
      if (row.key == SIZE_MAX || !row.first) {
        continue;
      }
      std::size_t k = row.key;
      bool ours = (chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale) &&
                  !chunk.in_flight_elsewhere[k];
      if (!ours) {
        continue;
      }
      chunk.delivered[k] = true;
      if (in_sink.contains(row.id)) {
        chunk.found_in_sink[k] = true; // settled without publishing again
        continue;
      }
      if (request.pace) {
        request.pace(++published_total);
      }
      sink->publish(chunk.batch->events[chunk.begin + j], (chunk.seq << 32) | k);
      chunk.published[k] = true;
      ++chunk.outstanding;
    }
    chunk.batch.reset(); // its events are in the sink's hands now
    chunk.stage = Chunk::Stage::Published;
  };

  // Moves every chunk as far as it can go without waiting: claims back → published (in order),
  // deliveries in, fully delivered → settle sent (in order), settled front → finished.
  auto advance = [&] {
    for (auto& chunk : chunks) {
      if (chunk.stage != Chunk::Stage::Claiming) {
        continue;
      }
      if (!is_ready(chunk.claim_done)) {
        break;
      }
      try {
        chunk.claim_done.get(); // rethrows what the claim threw
      } catch (const InterruptedError&) {
        chunk.claimed_nothing = true;
        throw;
      }
      publish_chunk(chunk);
    }
    take_deliveries(0);
    for (auto& chunk : chunks) {
      if (chunk.stage == Chunk::Stage::Settling) {
        continue;
      }
      if (chunk.stage != Chunk::Stage::Published || chunk.outstanding > 0) {
        break;
      }
      chunk.settle_done = placement_call(
          [&placement, &chunk] { placement.settle(chunk.keys, chunk.claims, chunk.delivered); }, false);
      chunk.stage = Chunk::Stage::Settling;
    }
    while (!chunks.empty() && chunks.front().stage == Chunk::Stage::Settling && is_ready(chunks.front().settle_done)) {
      chunks.front().settle_done.get(); // rethrows what settling threw
      finish_front();
    }
  };
  // Blocks until the front chunk can move on: its claims, its deliveries, or its settling.
  auto wait_for_front = [&] {
    Chunk& front = chunks.front();
    if (front.stage == Chunk::Stage::Claiming) {
      auto timer = stage(&ReplayStageTimes::claim);
      front.claim_done.wait();
    } else if (front.stage == Chunk::Stage::Settling) {
      auto timer = stage(&ReplayStageTimes::settle);
      front.settle_done.wait();
    } else if (front.outstanding > 0) {
      take_deliveries(100);
    }
  };
  // Interrupted: the claims still out are waited for. A chunk whose claim went through is
  // published and settled like any; one whose claim was interrupted claimed nothing and is dropped
  // with its events (they stay beyond the checkpoint), as is a chunk still being built.
  auto resolve_claims = [&] {
    for (auto& chunk : chunks) {
      if (chunk.stage != Chunk::Stage::Claiming || chunk.claimed_nothing) {
        continue;
      }
      try {
        chunk.claim_done.get();
        publish_chunk(chunk);
      } catch (const InterruptedError&) {
        chunk.claimed_nothing = true;
      }
    }
    while (!chunks.empty() && (chunks.back().stage == Chunk::Stage::Building || chunks.back().claimed_nothing)) {
      chunks.pop_back();
    }
  };

  // Source batches stay alive until every chunk cut from them is published: a pool of them, one
  // read into while chunks of the others wait for their claims.
  std::vector<std::shared_ptr<core::EventBatch>> batches;
  auto free_batch = [&] {
    for (const auto& b : batches) {
      if (b.use_count() == 1) {
        return b;
      }
    }
    return batches.emplace_back(std::make_shared<core::EventBatch>());
  };
  std::vector<core::Identity> identities;
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
        advance();
        if (!chunks.empty()) {
          wait_for_front();
        }
      }
    };
    auto next_batch = [&](core::EventBatch& batch) {
      try {
        auto timer = stage(&ReplayStageTimes::read);
        return source.next_batch(batch);
      } catch (const UnreachableError&) {
        resolve_claims();
        finish_in_flight();
        throw;
      }
    };
    try {
      for (;;) {
        std::shared_ptr<core::EventBatch> batch = free_batch();
        if (!next_batch(*batch)) {
          break;
        }
        // A resumed run skips what its checkpoint says is done.
        if (request.checkpoint) {
          std::erase_if(batch->events, [&](const core::Event& e) {
            auto next = request.checkpoint->next_offset(e.topic, e.partition);
            return next && e.offset < *next;
          });
        }
        std::optional<StageTimer> timer;
        timer.emplace(stage_slot(&ReplayStageTimes::prepare));
        identifier.identify(*batch, identities);
        log.observe(batch->events, identities);
        // Claims, deliveries and settling go in chunks of --batch events: one transaction, one
        // checkpoint each.
        for (std::size_t begin = 0; begin < batch->events.size(); begin += request.batch_size) {
          std::size_t end = std::min(batch->events.size(), begin + request.batch_size);
          timer.emplace(stage_slot(&ReplayStageTimes::prepare));
          Chunk& chunk = chunks.emplace_back();
          chunk.seq = next_seq++;
          chunk.batch = batch;
          chunk.begin = begin;
          chunk.index = core::FlatHashMap<std::uint32_t>(end - begin);
          for (std::size_t i = begin; i < end; ++i) {
            const auto& event = batch->events[i];
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
            std::uint64_t hash = core::hash64(rendered, 0x4b);
            bool inserted = false;
            std::uint32_t& slot = chunk.index.find_or_insert(hash, inserted);
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
            chunk.hashes.push_back(hash);
          }
          // A key an earlier chunk still in flight has is not asked again.
          std::size_t n = chunk.keys.size();
          chunk.in_flight_elsewhere.assign(n, false);
          chunk.claims.assign(n, core::Claim::Done);
          chunk.asked_all = true;
          for (std::size_t k = 0; k < n; ++k) {
            chunk.in_flight_elsewhere[k] = in_flight(chunk.keys[k], chunk.hashes[k]);
            chunk.asked_all = chunk.asked_all && !chunk.in_flight_elsewhere[k];
          }
          // Usually none is: the chunk's keys are asked as they are, without a copy.
          if (!chunk.asked_all) {
            for (std::size_t k = 0; k < n; ++k) {
              if (!chunk.in_flight_elsewhere[k]) {
                chunk.asked.push_back(chunk.keys[k]);
                chunk.asked_of.push_back(k);
              }
            }
          }
          const std::vector<std::string>& asked = chunk.asked_all ? chunk.keys : chunk.asked;
          if (!request.execute) {
            timer.emplace(stage_slot(&ReplayStageTimes::claim));
            placement.plan(asked, chunk.answers);
            for (std::size_t c = 0; c < asked.size(); ++c) {
              chunk.claims[chunk.asked_all ? c : chunk.asked_of[c]] = chunk.answers[c];
            }
            for (std::size_t k = 0; k < n; ++k) {
              if (chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale) {
                bool first_time = false;
                planned.find_or_insert(core::hash64(chunk.keys[k], 0x91), first_time);
                if (!first_time) {
                  chunk.claims[k] = core::Claim::Done; // an earlier event of the range takes the key first
                }
              }
            }
            chunk.batch.reset();
            timer.reset();
            finish_front();
            continue;
          }
          timer.reset();
          chunk.claim_done = placement_call(
              [&placement, &chunk, &request] {
                placement.claim(chunk.asked_all ? chunk.keys : chunk.asked, request.run_id, chunk.answers);
              },
              true);
          chunk.stage = Chunk::Stage::Claiming;
          advance();
          while (chunks.size() >= max_in_flight) {
            wait_for_front();
            advance();
          }
        }
      }
      finish_in_flight();
    } catch (const InterruptedError&) {
      // Wherever SIGINT/SIGTERM caught the run, the claims that went through are delivered and
      // settled; nothing claimed is left behind.
      resolve_claims();
      finish_in_flight();
      throw;
    }
  });
  // A failure leaves chunks unsettled: their claims stay this run's (a rerun with the checkpoint
  // retries them), their publishes are read back from the sink on resume.

  for (auto& [key, p] : partitions) {
    p.next = checkpoint.next_offset(p.topic, p.partition);
    run.partitions.push_back(p);
  }
  report.summary = {{"events", log.counters().events}, {"no_id", run.no_id}, {"id_unfit", run.id_unfit}};
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
  if (auto f = unfit_examples.build(
          "replay-id-unfit", core::Severity::Warning,
          fmt::format("{} events have ids the placement cannot hold ({}); they were not published", run.id_unfit,
                      placement.unfit_keys()),
          "The consumer could not record these ids either: find what produces them. Replay them with --no-dedup "
          "only after checking them by hand.")) {
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
