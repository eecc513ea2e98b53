#include "commands/pipeline/replay.hpp"

#include "commands/pipeline/replay_runner.hpp"
#include "core/replay/repair.hpp"
#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace dedupctl::commands {

namespace replay_detail {

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

ReplayRunner::ReplayRunner(const ReplayRequest& request, core::EventSource& source, core::ReplayPlacement& placement,
                           core::ReplaySink* sink, const core::SourceInfo& info)
    : m_request(request), m_journal(request.journal ? *request.journal : m_no_journal), m_source(source),
      m_placement(placement), m_sink(sink), m_publishing(request.execute && sink),
      m_max_in_flight(m_publishing ? std::max<std::size_t>(1, placement.max_in_flight()) : 1),
      m_checkpoint(request.checkpoint.value_or(core::Checkpoint{})), m_identify([&] {
        core::IdentifyOptions identify = request.identify;
        core::KeyTemplate last = request.key_template; // each template's fields indexed after those before it
        for (const auto& second : request.second_key_templates) {
          last = core::after_fields_of(last, second);
        }
        identify.extra = last.fields();
        return identify;
      }()),
      m_log([&] {
        core::LogAnalyzerOptions options;
        options.max_examples = request.max_examples;
        options.id_specs = core::to_string(request.identify.id);
        options.semantic_archive = request.semantic_archive;
        options.id_archive = request.id_archive;
        if (auto expected = expected_events(info)) { // sized up front, as scan's and audit's
          options.expected_events = expected;
        }
        return options;
      }()),
      m_identifier(m_identify), m_failed_examples(request.max_examples), m_claimed_examples(request.max_examples),
      m_unfit_examples(request.max_examples), m_changed_examples(request.max_examples),
      m_unfit_reason(request.guard ? placement.unfit_keys()
                                   : "the placement cannot hold this id (" + placement.unfit_keys() + ")"),
      m_settles_apart(m_publishing && m_max_in_flight > 1 && placement.settles_apart()),
      m_worker(m_publishing && m_max_in_flight > 1), m_settle_worker(m_settles_apart) {
  m_run.execute = request.execute;
  for (const auto& second : request.second_key_templates) {
    m_second_templates.push_back(
        core::after_fields_of(m_second_templates.empty() ? request.key_template : m_second_templates.back(), second));
  }
  m_run.run_id = request.run_id;
  m_run.sink = sink ? sink->describe() : "";
  m_run.resumed = request.checkpoint.has_value();
  m_checkpoint.run_id = request.run_id;
  m_checkpoint.sink = m_run.sink;
  for (const auto& range : info.partitions) {
    auto& p = m_partitions[{range.topic, range.partition}];
    p.topic = range.topic;
    p.partition = range.partition;
    p.from = range.from;
    p.to = range.to;
    if (auto next = m_checkpoint.next_offset(range.topic, range.partition)) {
      p.from = std::max(range.from, *next);
    }
  }
}

void ReplayRunner::run() {
  if (m_publishing && m_request.checkpoint && !m_request.checkpoint->sink_position.empty()) {
    try {
      m_in_sink = read_back(*m_sink, m_request.checkpoint->sink_position, m_request.identify);
      m_in_sink_unsettled = m_in_sink;
    } catch (const UnreachableError& e) {
      throw UnreachableError(fmt::format("a rerun from a checkpoint reads what was published to {} since it, so that "
                                         "no event goes there twice: {}",
                                         m_sink->describe(), e.what()));
    }
  }
  // A fresh run writes its id and the sink's position before it claims anything: killed before its
  // first chunk settles, its rerun still knows its claims and what the sink got since.
  if (m_publishing && !m_request.checkpoint && m_journal.keeps_checkpoints()) {
    m_checkpoint.sink_position = m_sink->position();
    m_journal.checkpoint(m_checkpoint);
  }
  try {
    for (;;) {
      std::shared_ptr<core::EventBatch> batch = free_batch();
      if (m_sink_refusal || !read(*batch)) {
        break;
      }
      drop_checkpointed(*batch);
      {
        auto timer = stage(&ReplayStageTimes::prepare);
        m_identifier.identify(*batch, m_identities);
        m_log.observe(batch->events, m_identities);
      }
      // Claims, deliveries and settling go in chunks of --batch events: one transaction, one
      // checkpoint each.
      for (std::size_t begin = 0; begin < batch->events.size() && !m_sink_refusal; begin += m_request.batch_size) {
        cut_chunk(batch, begin, std::min(batch->events.size(), begin + m_request.batch_size));
        Chunk& chunk = m_chunks.back();
        if (!m_request.execute) {
          plan(chunk);
          continue;
        }
        claim(chunk);
        advance();
        while (m_chunks.size() >= m_max_in_flight) {
          wait_for_front();
          advance();
        }
      }
    }
    finish_in_flight();
    if (m_sink_refusal) {
      throw UnreachableError(*m_sink_refusal);
    }
  } catch (const InterruptedError&) {
    // Wherever SIGINT/SIGTERM caught the run, the claims that went through are delivered and
    // settled; nothing claimed is left behind.
    resolve_claims();
    finish_in_flight();
    throw;
  }
  // A failure leaves chunks unsettled: their claims stay this run's (a rerun with the checkpoint
  // retries them), their publishes are read back from the sink on resume.
}

std::shared_ptr<core::EventBatch> ReplayRunner::free_batch() {
  for (const auto& b : m_batches) {
    if (b.use_count() == 1) {
      return b;
    }
  }
  return m_batches.emplace_back(std::make_shared<core::EventBatch>());
}

// The next source batch. With the source gone, what is in flight is still delivered, settled and
// checkpointed before the run ends incomplete.
bool ReplayRunner::read(core::EventBatch& batch) {
  try {
    auto timer = stage(&ReplayStageTimes::read);
    return m_source.next_batch(batch);
  } catch (const UnreachableError&) {
    resolve_claims();
    finish_in_flight();
    throw;
  }
}

// A resumed run skips what its checkpoint says is done.
void ReplayRunner::drop_checkpointed(core::EventBatch& batch) const {
  if (!m_request.checkpoint) {
    return;
  }
  std::erase_if(batch.events, [&](const core::Event& e) {
    auto next = m_request.checkpoint->next_offset(e.topic, e.partition);
    return next && e.offset < *next;
  });
}

std::uint32_t ReplayRunner::topic_index(std::string_view topic) {
  for (std::size_t t = 0; t < m_topics.size(); ++t) {
    if (m_topics[t] == topic) {
      return static_cast<std::uint32_t>(t);
    }
  }
  m_topics.emplace_back(topic);
  return static_cast<std::uint32_t>(m_topics.size() - 1);
}

// A new chunk at the back of the queue: events [begin, end) of the source batch, their keys, and which of
// them an earlier chunk in flight already has.
void ReplayRunner::cut_chunk(const std::shared_ptr<core::EventBatch>& batch, std::size_t begin, std::size_t end) {
  auto timer = stage(&ReplayStageTimes::prepare);
  if (m_spare_chunks.empty()) {
    m_chunks.emplace_back();
  } else {
    m_chunks.push_back(std::move(m_spare_chunks.back()));
    m_spare_chunks.pop_back();
    m_chunks.back().reuse();
  }
  Chunk& chunk = m_chunks.back();
  chunk.seq = m_next_seq++;
  chunk.batch = batch;
  chunk.begin = begin;
  chunk.index.clear(end - begin);
  chunk.rows.resize(end - begin);
  for (std::size_t i = begin; i < end; ++i) {
    add_row(chunk, chunk.rows[i - begin], batch->events[i], m_identities[i]);
  }
  chunk.keys.resize(chunk.key_count);
  mark_in_flight(chunk);
}

// One event as a row of the chunk. Later events of a key already in the chunk are its duplicates.
void ReplayRunner::add_row(Chunk& chunk, Chunk::Row& row, const core::Event& event, const core::Identity& identity) {
  row.topic = topic_index(event.topic);
  row.partition = event.partition;
  row.offset = event.offset;
  row.timestamp_ms = event.timestamp_ms;
  row.key = SIZE_MAX;
  row.first = false;
  row.no_id_reason.clear();
  row.id.clear();
  if (!identity.has_id) {
    row.no_id_reason.assign(identity.no_id_reason);
    return;
  }
  row.id.assign(identity.id);
  core::render_event_key(m_request.key_template, event, identity, m_request.consumer, m_rendered);
  std::uint64_t hash = core::hash64(m_rendered, 0x4b);
  bool inserted = false;
  std::uint32_t& slot = chunk.index.find_or_insert(hash, inserted);
  if (!inserted && chunk.keys[slot - 1] == m_rendered) {
    row.key = slot - 1;
    return;
  }
  auto built = chunk.keys.begin() + static_cast<std::ptrdiff_t>(chunk.key_count);
  if (!inserted) { // two keys of one chunk with one 64-bit hash: look them all through
    auto found = std::find(chunk.keys.begin(), built, m_rendered);
    if (found != built) {
      row.key = static_cast<std::size_t>(found - chunk.keys.begin());
      return;
    }
  } else {
    slot = static_cast<std::uint32_t>(chunk.key_count + 1);
  }
  row.key = chunk.key_count;
  row.first = true;
  if (chunk.key_count < chunk.keys.size()) {
    chunk.keys[chunk.key_count].assign(m_rendered);
  } else {
    chunk.keys.push_back(m_rendered);
  }
  ++chunk.key_count;
  chunk.hashes.push_back(hash);
  for (const auto& second : m_second_templates) {
    core::render_event_key(second, event, identity, m_request.consumer, m_rendered);
    chunk.second_keys.push_back(m_rendered);
  }
}

// A key an earlier chunk still in flight has is not asked again. Usually none is: the chunk's keys
// are then asked as they are, without a copy.
void ReplayRunner::mark_in_flight(Chunk& chunk) {
  std::size_t n = chunk.keys.size();
  chunk.in_flight_elsewhere.assign(n, false);
  chunk.claims.assign(n, core::Claim::Done);
  chunk.asked_all = true;
  for (std::size_t k = 0; k < n; ++k) {
    chunk.in_flight_elsewhere[k] = m_in_flight.has(chunk.keys[k], chunk.hashes[k]);
    chunk.asked_all = chunk.asked_all && !chunk.in_flight_elsewhere[k];
  }
  m_in_flight.add(chunk.seq, chunk.keys, chunk.hashes, chunk.index);
  if (!chunk.asked_all) {
    for (std::size_t k = 0; k < n; ++k) {
      if (!chunk.in_flight_elsewhere[k]) {
        chunk.asked.push_back(chunk.keys[k]);
        for (std::size_t s = 0; s < m_second_templates.size(); ++s) {
          chunk.asked_second.push_back(chunk.second_keys[k * m_second_templates.size() + s]);
        }
        chunk.asked_of.push_back(k);
      }
    }
  }
}

} // namespace replay_detail

std::string ReplayStageTimes::describe() const {
  return fmt::format("read {:.2f} s, prepare {:.2f} s, claim {:.2f} s, publish {:.2f} s, wait for deliveries {:.2f} s, "
                     "settle {:.2f} s, decisions and checkpoints {:.2f} s",
                     read, prepare, claim, publish, wait, settle, checkpoint);
}

reports::Report run_replay(const ReplayRequest& request, core::EventSource& source, core::ReplayPlacement& placement,
                           core::ReplaySink* sink, core::SourceInfo info, std::int64_t now_ms) {
  reports::Report report = start_report("replay", now_ms, request.fail_on_text);
  report.placement = request.placement;
  replay_detail::ReplayRunner runner(request, source, placement, sink, info);
  incomplete_on_failure(report, [&] { runner.run(); });
  runner.fill(report, std::move(info));
  return report;
}

} // namespace dedupctl::commands
