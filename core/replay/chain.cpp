#include "core/replay/chain.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace dedupctl::core {

void ChainPlacement::look(std::size_t keys, std::vector<Claim>& held) {
  held.assign(keys, Claim::Claimed);
  std::size_t readers = m_readers.size();
  if (m_reader_keys.size() != keys * readers) {
    throw std::logic_error("a chain's readers were not given a key an event each");
  }
  for (std::size_t r = 0; r < readers; ++r) {
    m_asked.clear();
    m_asked_of.clear();
    for (std::size_t k = 0; k < keys; ++k) {
      if (held[k] == Claim::Claimed) { // a reader before this one holds it: not asked again
        m_asked.push_back(m_reader_keys[k * readers + r]);
        m_asked_of.push_back(k);
      }
    }
    if (m_asked.empty()) {
      continue;
    }
    m_readers[r].store->lookup(m_asked, m_states);
    for (std::size_t a = 0; a < m_asked.size(); ++a) {
      Claim found = m_readers[r].judge(m_states[a]);
      if (found == Claim::Done || found == Claim::HeldByOther) {
        held[m_asked_of[a]] = found;
        ++m_held[r];
      }
    }
  }
}

void ChainPlacement::plan(const std::vector<std::string>& keys, std::vector<Claim>& out) {
  look(keys.size(), m_held_claims);
  m_claims.plan(keys, out);
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (m_held_claims[k] != Claim::Claimed && (out[k] == Claim::Claimed || out[k] == Claim::OwnStale)) {
      out[k] = m_held_claims[k];
    }
  }
}

void ChainPlacement::claim(const std::vector<std::string>& keys, const std::string& run_id, std::vector<Claim>& out) {
  look(keys.size(), m_held_claims);
  m_asked.clear();
  m_asked_of.clear();
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (m_held_claims[k] == Claim::Claimed) {
      m_asked.push_back(keys[k]);
      m_asked_of.push_back(k);
    }
  }
  out = m_held_claims; // what a reader holds is skipped, never claimed
  {
    std::lock_guard lock(m_pending_mutex);
    m_pending.push_back(!m_asked.empty());
  }
  if (m_asked.empty()) {
    return;
  }
  m_claims.claim(m_asked, run_id, m_answers);
  for (std::size_t a = 0; a < m_asked.size(); ++a) {
    out[m_asked_of[a]] = m_answers[a];
  }
}

void ChainPlacement::settle(const std::vector<std::string>& keys, const std::vector<Claim>& claims,
                            const std::vector<bool>& delivered) {
  bool asked = true;
  {
    std::lock_guard lock(m_pending_mutex);
    if (!m_pending.empty()) {
      asked = m_pending.front();
      m_pending.pop_front();
    }
  }
  if (asked) {
    m_claims.settle(keys, claims, delivered); // the readers' are Done or HeldByOther: not the tier's to settle
  }
}

std::vector<Finding> ChainPlacement::findings() const {
  std::vector<Finding> out = m_claims.findings();
  Finding f;
  f.id = "replay-via-chain";
  f.severity = Severity::Info;
  std::string held;
  for (std::size_t r = 0; r < m_readers.size(); ++r) {
    held += fmt::format("{}{} held {}", held.empty() ? "" : ", ", m_readers[r].name, m_held[r]);
    f.count += m_held[r];
  }
  f.title = fmt::format("the replay claims in {}; the other tiers are only read, and their keys were skipped: {}",
                        m_claims_name, held);
  f.advice = "An event any tier holds is skipped, as the consumer skips it; the replay's own records are written to "
             "the claiming tier only. A window in memory holds nothing across a replay and is not asked.";
  out.push_back(std::move(f));
  return out;
}

} // namespace dedupctl::core
