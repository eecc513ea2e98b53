#pragma once

// The replay protocol's runner (docs/design.md "Replay protocol"), shared by the files that hold its
// steps: replay.cpp (the run: reading and preparing chunks), replay_claims.cpp (claiming, or a
// plan's look; publishing, deliveries, settling), replay_decisions.cpp (each event's decision,
// the counts, the checkpoint, the report). Internal to commands/pipeline/.
#include "commands/pipeline/common.hpp"
#include "commands/pipeline/in_flight_keys.hpp"
#include "commands/pipeline/replay.hpp"
#include "commands/pipeline/serial_worker.hpp"
#include "core/replay/decision.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/util/flat_map.hpp"

#include <atomic>
#include <chrono>
#include <deque>
#include <exception>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace dedupctl::commands::replay_detail {

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
  std::vector<std::string> second_keys;   // per key, its event's second keys (ReplayRequest::second_key_templates)
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

inline bool is_ready(const std::future<void>& done) {
  return done.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

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
  // The second keys' templates, rendered from the same extra values as the keys.
  std::vector<core::KeyTemplate> m_second_templates;
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

} // namespace dedupctl::commands::replay_detail
