#include "commands/pipeline/replay.hpp"

#include "commands/pipeline/common.hpp"
#include "commands/pipeline/in_flight_keys.hpp"
#include "commands/pipeline/serial_worker.hpp"
#include "core/replay/decision.hpp"
#include "core/replay/repair.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"
#include "core/util/flat_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
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
  std::vector<std::string> second_keys;   // per key, its event's second key (ReplayRequest::second_key_template)
  std::vector<std::uint64_t> hashes;      // per key, its hash in `index`
  core::FlatHashMap<std::uint32_t> index; // a key's hash → its index + 1 (the first key of that hash)
  std::vector<core::Claim> claims;
  std::vector<bool> in_flight_elsewhere; // the key belongs to an earlier unsettled chunk
  // What goes to the placement: the keys not in flight elsewhere (all of `keys` when asked_all), and
  // its answers, in that order.
  bool asked_all = true;
  std::vector<std::string> asked;
  std::vector<std::string> asked_second;
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
  std::string start_position;              // the sink's position before this chunk published anything
  std::shared_ptr<core::EventBatch> batch; // the source batch its events are in, until published
  std::size_t begin = 0;                   // rows[j] is batch->events[begin + j]
  std::size_t key_count = 0;               // keys[0, key_count) while it is built; then keys.size()

  // As new, but with the memory of a finished chunk: its rows' ids and its keys are assigned over
  // the strings already there, so a run does not allocate and free two strings an event.
  void reuse() {
    stage = Stage::Building;
    seq = 0;
    hashes.clear();
    claims.clear();
    in_flight_elsewhere.clear();
    asked_all = true;
    asked.clear();
    asked_second.clear();
    second_keys.clear();
    asked_of.clear();
    answers.clear();
    claim_done = {};
    settle_done = {};
    claimed_nothing = false;
    published.clear();
    delivered.clear();
    found_in_sink.clear();
    outstanding = 0;
    first_error.clear();
    start_position.clear();
    batch.reset();
    begin = 0;
    key_count = 0;
  }
};

bool is_ready(const std::future<void>& done) {
  return done.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

} // namespace

std::string ReplayStageTimes::describe() const {
  return fmt::format("read {:.2f} s, prepare {:.2f} s, claim {:.2f} s, publish {:.2f} s, wait for deliveries {:.2f} s, "
                     "settle {:.2f} s, decisions and checkpoints {:.2f} s",
                     read, prepare, claim, publish, wait, settle, checkpoint);
}

namespace {

// One run of run_replay: the protocol of docs/design.md "Replay protocol" as named steps over a queue of
// chunks. Reading cuts source batches into chunks (prepare); each chunk moves Building → Claiming →
// Published → Settling → finished, in order: `advance` moves every chunk as far as it can without
// waiting, `wait_for_front` blocks until the oldest one can move, `finish_front` decides, counts and
// checkpoints it. A plan looks instead of claiming and finishes each chunk at once.
class ReplayRunner {
public:
  ReplayRunner(const ReplayRequest& request, core::EventSource& source, core::ReplayPlacement& placement,
               core::ReplaySink* sink, const core::SourceInfo& info);

  // Reads the whole range (or up to a failure or SIGINT, which it rethrows after settling what is
  // in flight).
  void run();
  // The summary, replay section, findings and settings of what was done.
  void fill(reports::Report& report, core::SourceInfo info);

private:
  // Where each stage's time goes, when -v asked (request.times).
  double* stage_slot(double ReplayStageTimes::*member) const {
    return m_request.times ? &(m_request.times->*member) : nullptr;
  }
  StageTimer stage(double ReplayStageTimes::*member) const { return StageTimer(stage_slot(member)); }

  // Reading.
  std::shared_ptr<core::EventBatch> free_batch();
  bool read(core::EventBatch& batch);
  void drop_checkpointed(core::EventBatch& batch) const;
  // Preparing.
  std::uint32_t topic_index(std::string_view topic);
  void cut_chunk(const std::shared_ptr<core::EventBatch>& batch, std::size_t begin, std::size_t end);
  void add_row(Chunk& chunk, Chunk::Row& row, const core::Event& event, const core::Identity& identity);
  void mark_in_flight(Chunk& chunk);
  // Claiming (or, in a plan, looking).
  void plan(Chunk& chunk);
  void claim(Chunk& chunk);
  void give_second_keys(const Chunk& chunk);
  std::future<void> placement_call(std::function<void()> call, bool is_claim);
  void take_answers(Chunk& chunk);
  // Publishing and deliveries.
  bool ours(const Chunk& chunk, std::size_t k) const;
  void publish(Chunk& chunk);
  void take_deliveries(int timeout_ms);
  // Settling: moving chunks on.
  void advance();
  void wait_for_front();
  void resolve_claims();
  void finish_in_flight();
  // Checkpointing: deciding, counting and saving the front chunk.
  void finish_front();
  core::DecisionRecord decide(const Chunk& chunk, const Chunk::Row& row, bool& publish);
  void checkpoint(const Chunk& chunk);
  core::ReplayPartition& partition_of(const Chunk::Row& row);
  core::Example example(const Chunk& chunk, const Chunk::Row& row, std::string note) const;
  // A partition as (topic index << 32 | partition).
  static std::uint64_t pack(const Chunk::Row& row) {
    return (static_cast<std::uint64_t>(row.topic) << 32) | static_cast<std::uint32_t>(row.partition);
  }

  const ReplayRequest& m_request;
  ReplayJournal m_no_journal; // a null request.journal keeps nothing
  ReplayJournal& m_journal;
  core::EventSource& m_source;
  core::ReplayPlacement& m_placement;
  core::ReplaySink* m_sink;
  bool m_publishing;
  std::size_t m_max_in_flight;
  core::ReplayRun m_run;
  core::Checkpoint m_checkpoint;

  std::vector<std::string> m_topics;
  std::map<std::pair<std::string, std::int32_t>, core::ReplayPartition> m_partitions;
  std::unordered_map<std::uint64_t, core::ReplayPartition*> m_partition_cache;
  std::unordered_map<std::uint64_t, std::int64_t> m_held; // partition → first failed offset

  core::IdentifyOptions m_identify;
  core::LogAnalyzer m_log;
  core::Identifier m_identifier;
  std::vector<core::Identity> m_identities;
  std::string m_rendered;
  // The second keys' template, rendered from the same extra values as the keys.
  std::optional<core::KeyTemplate> m_second_template;
  core::FindingBuilder m_failed_examples, m_claimed_examples, m_unfit_examples, m_changed_examples;
  std::int64_t m_not_lost = 0;         // --repair-lost: events left as they are, not lost
  std::int64_t m_changed = 0;          // --repair-lost: lost, but their record changed before its release
  std::int64_t m_records_released = 0; // --repair-lost, a run: the stale records it released
  std::string m_unfit_reason;
  std::string m_failed_reason;               // the reason a failed delivery's decision record views
  core::FlatHashMap<std::uint8_t> m_planned; // a plan: keys already planned for publishing in this range
  std::unordered_set<std::string> m_in_sink; // ids an interrupted run published after its checkpoint
  // Of those, the ids whose events no checkpoint of this run covers yet: while any is left, a
  // checkpoint keeps the position the sink was read back from, since their lines lie after it.
  std::unordered_set<std::string> m_in_sink_unsettled;

  // Source batches stay alive until every chunk cut from them is published: a pool of them, one
  // read into while chunks of the others wait for their claims.
  std::vector<std::shared_ptr<core::EventBatch>> m_batches;
  std::deque<Chunk> m_chunks;
  std::vector<Chunk> m_spare_chunks; // finished ones, whose memory the next chunks take over
  std::uint64_t m_next_seq = 0;
  InFlightKeys m_in_flight; // the keys of the chunks claimed and not yet settled
  std::int64_t m_events_total = 0;
  std::int64_t m_published_total = 0; // handed to the sink by this run
  std::vector<core::Delivery> m_deliveries;
  // Why the sink refuses every record, once it said so: nothing more is claimed or published, what
  // is in flight is settled (its claims released), and the run ends incomplete with this.
  std::optional<std::string> m_sink_refusal;

  // Once a claim is interrupted, the later ones claim nothing either (a placement sees the stop flag
  // itself; this holds it for any placement), so the chunks that claimed nothing are the last. Once
  // a call fails, the later ones do nothing: the run ends at the first failure, and what was queued
  // behind it stays as a rerun expects to find it (claimed by this run, unsettled). With settles
  // apart, a settle already running on its lane still ends: an earlier chunk, delivered, marked done.
  std::atomic<bool> m_claims_interrupted{false};
  std::mutex m_failure_mutex;
  std::exception_ptr m_placement_failure; // the first, behind m_failure_mutex
  // The placement's calls run on a worker of their own, in order, so that its round trips overlap
  // reading, preparing and publishing; inline when chunks must not overlap (one transaction per
  // chunk on one connection) and in a plan. A placement that settles apart from its claims settles
  // on a second worker: the front chunk's settle does not wait behind the later chunks' claims (a
  // key is never claimed while an earlier chunk that has it is in flight, so the two never meet on
  // one key). Declared last: they go first, so no job outlives what it works on.
  bool m_settles_apart;
  SerialWorker m_worker;
  SerialWorker m_settle_worker;
};

ReplayRunner::ReplayRunner(const ReplayRequest& request, core::EventSource& source, core::ReplayPlacement& placement,
                           core::ReplaySink* sink, const core::SourceInfo& info)
    : m_request(request), m_journal(request.journal ? *request.journal : m_no_journal), m_source(source),
      m_placement(placement), m_sink(sink), m_publishing(request.execute && sink),
      m_max_in_flight(m_publishing ? std::max<std::size_t>(1, placement.max_in_flight()) : 1),
      m_checkpoint(request.checkpoint.value_or(core::Checkpoint{})), m_identify([&] {
        core::IdentifyOptions identify = request.identify;
        identify.extra = request.second_key_template
                             ? core::joint_fields(request.key_template, *request.second_key_template)
                             : request.key_template.fields();
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
      m_unfit_reason("the placement cannot hold this id (" + placement.unfit_keys() + ")"),
      m_settles_apart(m_publishing && m_max_in_flight > 1 && placement.settles_apart()),
      m_worker(m_publishing && m_max_in_flight > 1), m_settle_worker(m_settles_apart) {
  m_run.execute = request.execute;
  if (request.second_key_template) {
    m_second_template = core::after_fields_of(request.key_template, *request.second_key_template);
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
  if (m_request.second_key_template) {
    core::render_event_key(*m_second_template, event, identity, m_request.consumer, m_rendered);
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
        if (!chunk.second_keys.empty()) {
          chunk.asked_second.push_back(chunk.second_keys[k]);
        }
        chunk.asked_of.push_back(k);
      }
    }
  }
}

// A plan looks at the chunk's keys and finishes it at once. A key an earlier event of the range
// would take first is that event's.
void ReplayRunner::plan(Chunk& chunk) {
  {
    auto timer = stage(&ReplayStageTimes::claim);
    give_second_keys(chunk);
    m_placement.plan(chunk.asked_all ? chunk.keys : chunk.asked, chunk.answers);
    take_answers(chunk);
    for (std::size_t k = 0; k < chunk.keys.size(); ++k) {
      if (chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale) {
        bool first_time = false;
        m_planned.find_or_insert(core::hash64(chunk.keys[k], 0x91), first_time);
        if (!first_time) {
          chunk.claims[k] = core::Claim::Done;
        }
      }
    }
    chunk.batch.reset();
  }
  finish_front();
}

// The second keys of what the chunk asks, for a placement that wants them.
void ReplayRunner::give_second_keys(const Chunk& chunk) {
  if (m_placement.wants_second_keys()) {
    m_placement.second_keys(chunk.asked_all ? chunk.second_keys : chunk.asked_second);
  }
}

// A run sends the chunk's claims to the placement's worker.
void ReplayRunner::claim(Chunk& chunk) {
  chunk.claim_done = placement_call(
      [this, &chunk] {
        give_second_keys(chunk);
        m_placement.claim(chunk.asked_all ? chunk.keys : chunk.asked, m_request.run_id, chunk.answers);
      },
      true);
  chunk.stage = Chunk::Stage::Claiming;
}

std::future<void> ReplayRunner::placement_call(std::function<void()> call, bool is_claim) {
  SerialWorker& lane = !is_claim && m_settles_apart ? m_settle_worker : m_worker;
  return lane.submit([this, call = std::move(call), is_claim] {
    {
      std::lock_guard lock(m_failure_mutex);
      if (m_placement_failure) {
        std::rethrow_exception(m_placement_failure); // whichever future is read first says why
      }
    }
    if (is_claim && m_claims_interrupted) {
      throw InterruptedError("interrupted");
    }
    try {
      call();
    } catch (const InterruptedError&) {
      m_claims_interrupted = m_claims_interrupted || is_claim;
      throw;
    } catch (...) {
      std::lock_guard lock(m_failure_mutex);
      if (!m_placement_failure) {
        m_placement_failure = std::current_exception();
      }
      throw;
    }
  });
}

// The placement's answers, in the order asked, as the claims of the chunk's keys.
void ReplayRunner::take_answers(Chunk& chunk) {
  for (std::size_t c = 0; c < chunk.answers.size(); ++c) {
    chunk.claims[chunk.asked_all ? c : chunk.asked_of[c]] = chunk.answers[c];
  }
}

// Whether this run holds the key's claim: it claimed it now, or an interrupted run of it did.
bool ReplayRunner::ours(const Chunk& chunk, std::size_t k) const {
  return (chunk.claims[k] == core::Claim::Claimed || chunk.claims[k] == core::Claim::OwnStale) &&
         !chunk.in_flight_elsewhere[k];
}

// A chunk whose claims are back: publish what was claimed (the key's first event of the chunk),
// unless an interrupted run already did.
void ReplayRunner::publish(Chunk& chunk) {
  auto timer = stage(&ReplayStageTimes::publish);
  std::size_t n = chunk.keys.size();
  take_answers(chunk);
  chunk.start_position = m_sink->position();
  chunk.published.assign(n, false);
  chunk.delivered.assign(n, false);
  chunk.found_in_sink.assign(n, false);
  for (std::size_t j = 0; j < chunk.rows.size(); ++j) {
    const Chunk::Row& row = chunk.rows[j];
    if (row.key == SIZE_MAX || !row.first || !ours(chunk, row.key)) {
      continue;
    }
    std::size_t k = row.key;
    chunk.delivered[k] = true;
    if (m_in_sink.contains(row.id)) {
      chunk.found_in_sink[k] = true; // settled without publishing again
      continue;
    }
    if (!m_sink_refusal) {
      if (m_request.pace) {
        m_request.pace(++m_published_total);
      }
      try {
        m_sink->publish(chunk.batch->events[chunk.begin + j], (chunk.seq << 32) | k);
        chunk.published[k] = true;
        ++chunk.outstanding;
        continue;
      } catch (const UnreachableError& e) {
        m_sink_refusal = e.what();
      }
    }
    // Not published: its claim is released when the chunk settles.
    chunk.delivered[k] = false;
    if (chunk.first_error.empty()) {
      chunk.first_error = *m_sink_refusal;
    }
  }
  chunk.batch.reset(); // its events are in the sink's hands now
  chunk.stage = Chunk::Stage::Published;
}

// Takes delivery reports in, waiting up to `timeout_ms` for the first.
void ReplayRunner::take_deliveries(int timeout_ms) {
  m_deliveries.clear();
  {
    auto timer = stage(timeout_ms > 0 ? &ReplayStageTimes::wait : &ReplayStageTimes::publish);
    m_sink->poll(m_deliveries, timeout_ms);
  }
  for (const auto& d : m_deliveries) {
    std::uint64_t seq = d.tag >> 32;
    auto k = static_cast<std::size_t>(d.tag & 0xffffffffULL);
    if (m_chunks.empty() || seq < m_chunks.front().seq || seq - m_chunks.front().seq >= m_chunks.size()) {
      continue; // not ours (cannot happen)
    }
    Chunk& chunk = m_chunks[seq - m_chunks.front().seq];
    --chunk.outstanding;
    if (!d.ok) {
      chunk.delivered[k] = false;
      if (chunk.first_error.empty()) {
        chunk.first_error = d.error;
      }
      if (d.refuses_all && !m_sink_refusal) {
        m_sink_refusal = d.error;
      }
    }
  }
}

// Moves every chunk as far as it can go without waiting: claims back → published (in order),
// deliveries in, fully delivered → settle sent (in order), settled front → finished.
void ReplayRunner::advance() {
  for (auto& chunk : m_chunks) {
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
    publish(chunk);
  }
  take_deliveries(0);
  for (auto& chunk : m_chunks) {
    if (chunk.stage == Chunk::Stage::Settling) {
      continue;
    }
    if (chunk.stage != Chunk::Stage::Published || chunk.outstanding > 0) {
      break;
    }
    chunk.settle_done =
        placement_call([this, &chunk] { m_placement.settle(chunk.keys, chunk.claims, chunk.delivered); }, false);
    chunk.stage = Chunk::Stage::Settling;
  }
  while (!m_chunks.empty() && m_chunks.front().stage == Chunk::Stage::Settling &&
         is_ready(m_chunks.front().settle_done)) {
    m_chunks.front().settle_done.get(); // rethrows what settling threw
    finish_front();
  }
}

// Blocks until the front chunk can move on: its claims, its deliveries, or its settling.
void ReplayRunner::wait_for_front() {
  Chunk& front = m_chunks.front();
  if (front.stage == Chunk::Stage::Claiming) {
    auto timer = stage(&ReplayStageTimes::claim);
    front.claim_done.wait();
  } else if (front.stage == Chunk::Stage::Settling) {
    auto timer = stage(&ReplayStageTimes::settle);
    front.settle_done.wait();
  } else if (front.outstanding > 0) {
    take_deliveries(100);
  }
}

// Interrupted: the claims still out are waited for. A chunk whose claim went through is published
// and settled like any; one whose claim was interrupted claimed nothing and is dropped with its
// events (they stay beyond the checkpoint), as is a chunk still being built.
void ReplayRunner::resolve_claims() {
  for (auto& chunk : m_chunks) {
    if (chunk.stage != Chunk::Stage::Claiming || chunk.claimed_nothing) {
      continue;
    }
    try {
      chunk.claim_done.get();
      publish(chunk);
    } catch (const InterruptedError&) {
      chunk.claimed_nothing = true;
    }
  }
  while (!m_chunks.empty() && (m_chunks.back().stage == Chunk::Stage::Building || m_chunks.back().claimed_nothing)) {
    m_in_flight.drop_newest(m_chunks.back().seq);
    m_chunks.pop_back();
  }
}

// Every chunk in flight delivered, settled and checkpointed.
void ReplayRunner::finish_in_flight() {
  while (m_publishing && !m_chunks.empty()) {
    advance();
    if (!m_chunks.empty()) {
      wait_for_front();
    }
  }
}

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
                      (m_request.repair ? "); its stale record was released: a seek applies it" : "); claim released");
    record.reason = m_failed_reason;
    ++m_run.failed;
    if (!m_request.repair) { // a repair holds no claim to release
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
  report.settings = {{"mode", m_request.execute ? "execute" : "plan (nothing was published or claimed)"},
                     {"run", m_request.run_id},
                     {"id", core::to_string(m_request.identify.id)},
                     {"key template", m_request.key_template.text()},
                     {"batch", std::to_string(m_request.batch_size)},
                     {"fail on", m_request.fail_on_text}};
  if (!run.sink.empty()) {
    report.settings.emplace_back("sink", run.sink);
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

} // namespace

reports::Report run_replay(const ReplayRequest& request, core::EventSource& source, core::ReplayPlacement& placement,
                           core::ReplaySink* sink, core::SourceInfo info, std::int64_t now_ms) {
  reports::Report report = start_report("replay", now_ms, request.fail_on_text);
  report.placement = request.placement;
  ReplayRunner runner(request, source, placement, sink, info);
  incomplete_on_failure(report, [&] { runner.run(); });
  runner.fill(report, std::move(info));
  return report;
}

} // namespace dedupctl::commands
