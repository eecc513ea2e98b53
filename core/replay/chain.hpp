#pragma once

#include "core/replay/replay.hpp"
#include "core/store/dedup_store.hpp"

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

// replay --via a chain of tiers (--via repeated, docs/windows.md "Tiers"): the consumer asks every
// tier, so an event any of them holds is skipped as the consumer would skip it; the replay's claims go
// to one tier, the first that survives a restart and can hold a claim. The other tiers are only read,
// each by its own key (the runner's second keys, `readers` of them an event, in order), and never
// written: what a replay records is its own, in the tier that claims.
namespace dedupctl::core {

class ChainPlacement final : public ReplayPlacement {
public:
  struct Reader {
    std::string name;  // "tier 3 (postgresql://db/app)"
    DedupStore* store; // looked up, never written
    // What a replay finds on its record (judge_record as the tier's layout reads it): Done or
    // HeldByOther hold the event; Claimed (absent, expired, a lease run out) does not.
    std::function<Claim(const RecordState&)> judge;
  };

  // `claims_name`: the claiming tier's ("tier 2 (redis://cache:6379)").
  ChainPlacement(ReplayPlacement& claims, std::string claims_name, std::vector<Reader> readers)
      : m_claims(claims), m_claims_name(std::move(claims_name)), m_readers(std::move(readers)) {}

  std::string kind() const override { return m_claims.kind(); }
  bool wants_second_keys() const override { return true; }
  // Every reader's key of each event, reader after reader: keys[k * readers + r].
  void second_keys(const std::vector<std::string>& keys) override { m_reader_keys = keys; }
  void plan(const std::vector<std::string>& keys, std::vector<Claim>& out) override;
  // Claims, in the claiming tier, only the keys no reader holds.
  void claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<Claim>& out) override;
  // Settles the claiming tier's own claims only; a chunk whose every event a reader held never reached
  // it (nothing was claimed, no transaction opened) and is not settled there.
  void settle(const std::vector<std::string>& keys, const std::vector<Claim>& claims,
              const std::vector<bool>& delivered) override;
  std::size_t max_in_flight() const override { return m_claims.max_in_flight(); }
  bool settles_apart() const override { return m_claims.settles_apart(); }
  std::string unfit_keys() const override { return m_claims.unfit_keys(); }
  // The claiming tier's, then `replay-via-chain` (info): which tier claims, and the keys each reader
  // held, which were skipped.
  std::vector<Finding> findings() const override;

  // Events skipped because a reader held them, per reader.
  const std::vector<std::int64_t>& held_by_readers() const { return m_held; }

private:
  // Per key, what the readers hold: the first reader's Done or HeldByOther, else Claimed (none).
  void look(std::size_t keys, std::vector<Claim>& held);

  ReplayPlacement& m_claims;
  std::string m_claims_name;
  std::vector<Reader> m_readers;
  std::vector<std::string> m_reader_keys;
  std::vector<std::int64_t> m_held = std::vector<std::int64_t>(m_readers.size(), 0);
  // Scratch, reused chunk after chunk.
  std::vector<std::string> m_asked;
  std::vector<RecordState> m_states;
  std::vector<Claim> m_held_claims, m_answers;
  std::vector<std::size_t> m_asked_of;
  // Per chunk claimed and not settled yet, in order: whether the claiming tier was asked. Settling
  // may run on a thread of its own (settles_apart).
  std::mutex m_pending_mutex;
  std::deque<bool> m_pending;
};

} // namespace dedupctl::core
