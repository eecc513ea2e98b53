#include "commands/pipeline/replay.hpp"

#include "commands/pipeline/common.hpp"
#include "core/errors.hpp"
#include "core/fingerprint.hpp"
#include "core/flat_map.hpp"
#include "core/log_analyzer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
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

} // namespace

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
  std::map<std::pair<std::string, std::int32_t>, std::int64_t> held; // partition → first failed offset

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
  core::EventBatch batch;
  std::vector<core::Identity> identities;
  std::vector<std::string> keys;        // unique keys of the batch
  std::vector<std::size_t> first_event; // per key: its first event in the batch
  std::vector<std::size_t> key_of;      // per event: its key, or SIZE_MAX
  std::vector<core::Claim> claims;
  std::vector<bool> delivered;
  std::vector<bool> published;
  core::FlatHashMap<std::uint32_t> key_index; // hash of a key → its index + 1, this batch
  std::string rendered;
  std::int64_t events_total = 0;

  incomplete_on_failure(report, [&] {
    if (request.execute && sink && request.checkpoint && !request.checkpoint->sink_position.empty()) {
      in_sink = read_back(*sink, request.checkpoint->sink_position, request.identify);
    }
    // A fresh run writes its id and the sink's position before it claims anything: killed before its
    // first batch settles, its rerun still knows its claims and what the sink got since.
    if (request.execute && sink && !request.checkpoint && request.save_checkpoint) {
      checkpoint.sink_position = sink->position();
      request.save_checkpoint(checkpoint);
    }
    while (source.next_batch(batch)) {
      // A resumed run skips what its checkpoint says is done.
      if (request.checkpoint) {
        std::erase_if(batch.events, [&](const core::Event& e) {
          auto next = checkpoint.next_offset(e.topic, e.partition);
          return next && e.offset < *next;
        });
      }
      identifier.identify(batch, identities);
      log.observe(batch.events, identities);
      key_of.assign(batch.events.size(), SIZE_MAX);
      // Claims, deliveries and settling go in chunks of --batch events: one transaction, one
      // checkpoint each.
      for (std::size_t begin = 0; begin < batch.events.size(); begin += request.batch_size) {
        std::size_t end = std::min(batch.events.size(), begin + request.batch_size);
        keys.clear();
        first_event.clear();
        key_index = core::FlatHashMap<std::uint32_t>(end - begin);
        for (std::size_t i = begin; i < end; ++i) {
          const auto& event = batch.events[i];
          const auto& identity = identities[i];
          if (!identity.has_id) {
            continue;
          }
          core::KeyValues values{identity.id,
                                 identity.type,
                                 identity.entity,
                                 event.topic,
                                 event.partition,
                                 event.offset,
                                 event.key.value_or(std::string_view{}),
                                 request.consumer,
                                 identity.extra};
          core::render_key(request.key_template, values, rendered);
          // Later events of a key already in the batch are its duplicates.
          bool inserted = false;
          std::uint32_t& slot = key_index.find_or_insert(core::hash64(rendered, 0x4b), inserted);
          if (!inserted && keys[slot - 1] == rendered) {
            key_of[i] = slot - 1;
            continue;
          }
          if (!inserted) { // two keys of one batch with one 64-bit hash: look them all through
            auto found = std::find(keys.begin(), keys.end(), rendered);
            if (found != keys.end()) {
              key_of[i] = static_cast<std::size_t>(found - keys.begin());
              continue;
            }
          } else {
            slot = static_cast<std::uint32_t>(keys.size() + 1);
          }
          key_of[i] = keys.size();
          keys.push_back(rendered);
          first_event.push_back(i);
        }
        if (request.execute) {
          placement.claim(keys, request.run_id, claims);
        } else {
          placement.plan(keys, claims);
          for (std::size_t k = 0; k < keys.size(); ++k) {
            if (claims[k] == core::Claim::Claimed || claims[k] == core::Claim::OwnStale) {
              bool inserted = false;
              planned.find_or_insert(core::hash64(keys[k], 0x91), inserted);
              if (!inserted) {
                claims[k] = core::Claim::Done; // an earlier event of the range takes the key first
              }
            }
          }
        }
        // Publish what was claimed (the key's first event of the batch), unless an interrupted run
        // already did.
        delivered.assign(keys.size(), false);
        published.assign(keys.size(), false);
        for (std::size_t k = 0; k < keys.size(); ++k) {
          bool ours = claims[k] == core::Claim::Claimed || claims[k] == core::Claim::OwnStale;
          if (!ours || !request.execute) {
            continue;
          }
          const auto& event = batch.events[first_event[k]];
          if (in_sink.contains(std::string(identities[first_event[k]].id))) {
            delivered[k] = true; // settled below without publishing again
            ++run.found_in_sink;
            continue;
          }
          sink->publish(event, k);
          published[k] = true;
          delivered[k] = true;
        }
        std::string first_error;
        if (request.execute) {
          for (auto tag : sink->flush(first_error)) {
            delivered[tag] = false;
          }
          placement.settle(keys, claims, delivered);
        }
        // Decisions and counts, in log order.
        for (std::size_t i = begin; i < end; ++i) {
          const auto& event = batch.events[i];
          auto& p = partitions[{std::string(event.topic), event.partition}];
          if (p.topic.empty()) {
            p.topic = std::string(event.topic);
            p.partition = event.partition;
          }
          ++p.events;
          core::DecisionRecord record{
              identities[i].id, event.topic, event.partition, event.offset, core::Decision::SkippedDuplicate, ""};
          std::string reason;
          bool publish = false;
          if (key_of[i] == SIZE_MAX) {
            record.decision = core::Decision::NoId;
            record.reason = identities[i].no_id_reason.empty() ? "no event id" : identities[i].no_id_reason;
            ++run.no_id;
          } else {
            std::size_t k = key_of[i];
            bool first = first_event[k] == i;
            core::Claim claim = claims[k];
            bool ours = claim == core::Claim::Claimed || claim == core::Claim::OwnStale;
            if (!first) {
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
                claimed_examples.add(event.partition, [&] { return core::example_of(event, identities[i], keys[k]); });
              } else {
                ++run.skipped_duplicate;
              }
            } else if (!request.execute) {
              record.decision = core::Decision::WouldReplay;
              record.reason = claim == core::Claim::OwnStale ? "this run's unfinished claim" : "no dedup record";
              ++run.would_replay;
              publish = true;
            } else if (delivered[k]) {
              record.decision = core::Decision::Replayed;
              record.reason = published[k] ? (claim == core::Claim::OwnStale ? "published; this run's "
                                                                               "unfinished claim retried"
                                                                             : "published")
                                           : "already in the sink from the interrupted run";
              ++run.replayed;
              publish = true;
            } else {
              record.decision = core::Decision::Failed;
              reason = "delivery failed (" + first_error + "); claim released";
              record.reason = reason;
              ++run.failed;
              ++run.released;
              failed_examples.add(event.partition,
                                  [&] { return core::example_of(event, identities[i], keys[k], first_error); });
              auto [it, inserted] = held.try_emplace({std::string(event.topic), event.partition}, event.offset);
              if (!inserted) {
                it->second = std::min(it->second, event.offset);
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
        for (std::size_t i = begin; i < end; ++i) {
          const auto& event = batch.events[i];
          auto hold = held.find({std::string(event.topic), event.partition});
          std::int64_t next = event.offset + 1;
          if (hold != held.end()) {
            next = std::min(next, hold->second);
          }
          auto current = checkpoint.next_offset(event.topic, event.partition);
          if (!current || next > *current || hold != held.end()) {
            checkpoint.set(event.topic, event.partition, next);
          }
        }
        if (request.execute && request.save_checkpoint) {
          checkpoint.sink_position = sink->position();
          request.save_checkpoint(checkpoint);
        }
        events_total += static_cast<std::int64_t>(end - begin);
        if (request.after_batch) {
          request.after_batch(events_total);
        }
      }
    }
  });

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
                     {"fail on", request.fail_on_text}};
  if (!run.sink.empty()) {
    report.settings.emplace_back("sink", run.sink);
  }
  finish_report(report, std::move(info), log, std::move(findings), request.max_examples, request.fail_on,
                source.positions());
  return report;
}

} // namespace dedupctl::commands
