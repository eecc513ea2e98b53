#pragma once

#include "core/identity/key_template.hpp"
#include "core/replay/replay.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

// replay --via a version guard (issue 63): the consumer keeps no dedup record, its handler applies an
// event only when its version is above the projection's. What a replay of the range applies is known
// before it starts: the guard's walk over the range against the projection (VersionAnalyzer, as audit
// --layout version-guard walks it) names each event. A replay publishes exactly those it applies, and
// claims and writes nothing, since the consumer writes the projection itself when it applies them.
namespace dedupctl::core {

// Each event's key for the walk's verdicts: where it is in the log, so that every event is its own.
KeyTemplate guard_replay_key_template();

// An event's verdict in the guard's walk.
enum class GuardVerdict {
  Applies, // above its entity's version in the projection and every version applied before it
  Drops,   // the projection (or a version applied before it) is at or above its own
  Unjudged // no entity or version, or one that does not compare under the order: not published
};

class GuardPlacement final : public ReplayPlacement {
public:
  // `kind`: the projection's store (postgres, redis), as the report names it.
  // `states`: a state guard's (--layout state-guard), whose words the reasons and finding use.
  explicit GuardPlacement(std::string kind, bool states = false) : m_kind(std::move(kind)), m_states(states) {}
  // The walk's verdict of the event at `key` (guard_replay_key_template); Drops unless said.
  void judge(std::string key, GuardVerdict verdict);
  // The walk read the partition up to `end` (exclusive): an event the replay reads at or past it was
  // appended since, and is not judged. Once any partition is named, an event of a partition not named
  // (one a live topic gained after the walk) is not judged either; with none named (a source that
  // names no partitions), everything read was walked.
  void walked(std::string_view topic, std::int32_t partition, std::int64_t end);

  std::string kind() const override { return m_kind; }
  // Applies: Claimed; Drops: Done; Unjudged: Unfit. A run claims the same, and holds nothing.
  void plan(const std::vector<std::string>& keys, std::vector<Claim>& out) override;
  void claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<Claim>& out) override;
  void settle(const std::vector<std::string>&, const std::vector<Claim>&, const std::vector<bool>&) override {}
  std::string unfit_keys() const override;
  // version-guard-replay (state-guard-replay) (info): how many the guard applies, and that the projection is left to
  // the consumer.
  std::vector<Finding> findings() const override;

  std::int64_t applies() const { return static_cast<std::int64_t>(m_applies.size()); }

private:
  std::string m_kind;
  bool m_states = false;
  // Past the walk's end of its partition (a key guard_replay_key_template rendered).
  bool after_walk(std::string_view key) const;

  std::unordered_set<std::string> m_applies, m_unjudged;
  std::map<std::pair<std::string, std::int32_t>, std::int64_t, std::less<>> m_walked_to;
  std::int64_t m_judged = 0;
};

} // namespace dedupctl::core
