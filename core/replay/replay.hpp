#pragma once

#include "core/audit/coverage.hpp"
#include "core/event.hpp"
#include "core/finding.hpp"
#include "core/replay_summary.hpp"
#include "core/store/layout.hpp"

#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

// The replay protocol (docs/design.md "Replay protocol") in pure parts: what a claim can find, the
// decisions logged per event, the checkpoint file, the in-memory window, and the interfaces of a
// placement that claims and of a sink that publishes. Connectors implement them; the pipeline
// (commands/pipeline/replay) runs them.
namespace dedupctl::core {

// What claiming (or, in a plan, looking at) a dedup key finds.
enum class Claim {
  Claimed,     // ours now: publish
  Done,        // a record exists: a duplicate, skip
  HeldByOther, // another run's or the consumer's in-progress claim: skip and report
  OwnStale,    // this run's claim from before an interruption: ours again (retried)
  Unfit,       // the placement cannot hold the key (an inbox's uuid column, an id that is not one): never
               // published, as the consumer could not record it either
  NotLost,     // --repair-lost: its effect exists, or no record marks it processed: left as it is
  Changed,     // --repair-lost: its record changed between the read and the release: left alone
};

// An in-progress value from the consumer or another replay run.
Claim plan_claim(const RecordState& record, const std::vector<std::string>& in_progress_values);

// What a JSON layout's library does on finding `record` (read by the layout) when it claims at
// `now_ms` (Powertools' _put_in_progress_record), and so what replay --via does: Done for a
// completed record before its expiration, HeldByOther for a claim within its lease (or without one,
// where the library waits for the key to expire, and a record the library fails on), OwnStale for
// this run's claim (`own_claim`), and Claimed for the rest (absent, expired, a lease run out, a
// value the library takes over), which the library takes over under KEY:lock.
Claim claim_found(const RecordState& record, bool own_claim, std::int64_t now_ms);

// What a replay finds on `record` as `layout` reads it: claim_found for a JSON layout (the library's
// own judgement), plan_claim against the consumer's in-progress markers otherwise.
Claim judge_record(const RecordLayout& layout, const RecordState& record,
                   const std::vector<std::string>& in_progress_values, std::int64_t now_ms);

enum class Decision {
  Replayed,
  SkippedDuplicate,
  SkippedClaimed,
  Failed,
  NoId,
  IdUnfit,
  WouldReplay,
  WouldSkip,
  SkippedNotLost, // --repair-lost
  SkippedChanged, // --repair-lost
};
std::string_view to_string(Decision decision); // replayed, skipped-duplicate, …

// One line of --decisions.
struct DecisionRecord {
  std::string_view event_id;
  std::string_view topic;
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  Decision decision = Decision::Replayed;
  std::string_view reason;
};
std::string format_decision(const DecisionRecord& record); // one NDJSON line, without the newline

// --checkpoint: the run id (whose claims a rerun may retry), the next offset to replay per
// partition, and where the sink was at that point (what an interrupted run may have published
// after it is read back on resume).
struct CheckpointPartition {
  std::string topic;
  std::int32_t partition = 0;
  std::int64_t next_offset = 0;
};
struct Checkpoint {
  std::string run_id;
  std::string sink;          // the sink's description: a checkpoint of another sink is refused
  std::string sink_position; // opaque to all but the sink
  std::vector<CheckpointPartition> partitions;
  std::optional<std::int64_t> next_offset(std::string_view topic, std::int32_t partition) const;
  void set(std::string_view topic, std::int32_t partition, std::int64_t next_offset);
};
std::string format_checkpoint(const Checkpoint& checkpoint);
// False with `error` (naming the line) when the text is not a checkpoint.
bool parse_checkpoint(std::string_view text, Checkpoint& checkpoint, std::string& error);

// The memory: placement: the last `capacity` keys exactly (LRU), and every key evicted from it in a
// Bloom filter of `bloom_bits` bits. A key the filter wrongly thinks it saw is skipped (rate about
// false_positive_rate()); nothing survives the process, so a rerun may publish again.
class MemoryWindow {
public:
  MemoryWindow(std::size_t capacity, std::size_t bloom_bits);
  // True when the key was seen (exactly, or probably); otherwise remembers it.
  bool seen_or_add(std::string_view key);
  // Forgets a key still in the exact window (a failed delivery); evicted keys cannot be forgotten.
  void forget(std::string_view key);
  double false_positive_rate() const;
  std::size_t capacity() const { return m_capacity; }
  std::size_t bloom_bits() const { return m_bits.size() * 64; }

private:
  bool bloom_has(std::uint64_t hash) const;
  void bloom_add(std::uint64_t hash);

  std::size_t m_capacity;
  std::list<std::string> m_order; // most recent first
  std::unordered_map<std::string_view, std::list<std::string>::iterator> m_index;
  std::vector<std::uint64_t> m_bits;
  std::size_t m_bloom_keys = 0;
  static constexpr int k_hashes = 7;
};

// The findings of a replay: `replay-failed` (error), `replay-id-unfit` and `replay-skipped-claimed`
// (warnings), from the run's counts and the examples kept of each. `unfit_keys` says what the
// placement cannot hold.
std::vector<Finding> replay_findings(const ReplayRun& run, std::string_view unfit_keys, const FindingBuilder& failed,
                                     const FindingBuilder& unfit, const FindingBuilder& claimed);

// Notes on the placement a replay routes through: `replay-without-dedup` (--no-dedup, a warning),
// and `memory-placement` (info: what the window remembers, exactly and in its Bloom filter).
Finding no_dedup_finding();
Finding memory_placement_finding(std::size_t capacity, std::size_t bloom_bits);

// A placement as replay uses it: look (plan) or claim, then settle after delivery. Abstract because
// a replay routes through Redis (connectors/redis), an inbox (connectors/postgres), the memory window
// or no dedup at all (below); in unit tests FakePlacement (tests/unit/fakes.hpp) stands in.
class ReplayPlacement {
public:
  virtual ~ReplayPlacement() = default;
  virtual std::string kind() const = 0;
  // What each key holds now; changes nothing.
  virtual void plan(const std::vector<std::string>& keys, std::vector<Claim>& out) = 0;
  // Claims the keys for `run_id` atomically, one chunk (--batch events). Throws UnreachableError.
  virtual void claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<Claim>& out) = 0;
  // Ends the chunk: the claimed keys (Claimed or OwnStale) marked done where `delivered`, released
  // where not. Throws UnreachableError (then nothing of the chunk is marked done).
  virtual void settle(const std::vector<std::string>& keys, const std::vector<Claim>& claims,
                      const std::vector<bool>& delivered) = 0;
  // Chunks that may be claimed before the earlier ones are settled (a transaction per chunk on
  // one connection: 1).
  virtual std::size_t max_in_flight() const { return 8; }
  // Whether settle may run while claim does, on another thread (a connection each): then a chunk
  // whose deliveries are in settles at once instead of after the later chunks' claims.
  virtual bool settles_apart() const { return false; }
  // What keys it answers Claim::Unfit for cannot be ("the inbox's id column is uuid"); empty when
  // it holds any key.
  virtual std::string unfit_keys() const { return ""; }
  // A placement that reads second keys per event (replay --repair-lost: the effect's; a chain: each
  // reading tier's) is given them right before each plan() or claim(): key after key, each key's
  // second keys in the order of ReplayRequest::second_key_templates.
  virtual bool wants_second_keys() const { return false; }
  virtual void second_keys(const std::vector<std::string>& keys) { (void)keys; }
  // What it found of itself over the run, for the report (a repair's effects lookup that never
  // matched).
  virtual std::vector<Finding> findings() const { return {}; }
};

// memory: as a placement. A plan runs the window too (it holds nothing before the run).
class MemoryPlacement final : public ReplayPlacement {
public:
  MemoryPlacement(std::size_t capacity, std::size_t bloom_bits) : m_window(capacity, bloom_bits) {}
  std::string kind() const override { return "memory"; }
  void plan(const std::vector<std::string>& keys, std::vector<Claim>& out) override;
  void claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<Claim>& out) override;
  void settle(const std::vector<std::string>& keys, const std::vector<Claim>& claims,
              const std::vector<bool>& delivered) override;
  const MemoryWindow& window() const { return m_window; }

private:
  MemoryWindow m_window;
};

// --no-dedup: every event is published; nothing is claimed or remembered.
class NoDedupPlacement final : public ReplayPlacement {
public:
  std::string kind() const override { return "none"; }
  void plan(const std::vector<std::string>& keys, std::vector<Claim>& out) override {
    out.assign(keys.size(), Claim::Claimed);
  }
  void claim(const std::vector<std::string>& keys, const std::string&, std::vector<Claim>& out) override {
    out.assign(keys.size(), Claim::Claimed);
  }
  void settle(const std::vector<std::string>&, const std::vector<Claim>&, const std::vector<bool>&) override {}
};

// A delivery report of one published event.
struct Delivery {
  std::uint64_t tag = 0;
  bool ok = true;
  // The sink refuses every record, not only this one (the principal may not write to the topic, the
  // producer failed for good); `error` says why and what to do, for the run's report. A flag, not a
  // second string: a run holds a report for every record in flight, twice (the sink's list and the
  // runner's), and a string is 32 bytes more each.
  bool refuses_all = false;
  std::string error; // when not ok
};

// Where replayed events go. Publishing does not wait: deliveries are reported by poll(), so the
// next chunk is claimed and published while the last one is still on its way. Abstract because a
// replay writes to a topic (connectors/kafka) or a file (connectors/file); in unit tests FakeSink
// (tests/unit/fakes.hpp) stands in.
class ReplaySink {
public:
  virtual ~ReplaySink() = default;
  virtual std::string describe() const = 0; // kafka:TOPIC, file:PATH
  // May take the event's headers over (a Kafka sink takes a Kafka message's parsed headers): the
  // event's header views are not to be read after it. Throws UnreachableError when the sink refuses
  // every record (as a Delivery's refusal says); an event it cannot take alone (too large) comes
  // back as a failed Delivery, as if the broker had refused it.
  virtual void publish(const Event& event, std::uint64_t tag) = 0;
  // Appends the deliveries reported since the last call; waits up to timeout_ms when there are
  // none yet but publishes are outstanding (0: only what is already there).
  virtual void poll(std::vector<Delivery>& out, int timeout_ms) = 0;
  // Where the sink ends after the deliveries reported so far, for the checkpoint.
  virtual std::string position() = 0;
  // What was published after `position`: read back on resume, because an interrupted run may
  // have published events whose claims it never settled.
  virtual std::unique_ptr<EventSource> read_after(const std::string& position) = 0;
};

} // namespace dedupctl::core
