#include "core/replay/repair.hpp"

#include "core/audit/effects.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

Claim repair_claim(Claim found, bool effect_present) {
  return found == Claim::Done && !effect_present ? Claim::Claimed : Claim::NotLost;
}

void RepairPlacement::judge(const std::vector<std::string>& keys, std::vector<Claim>& out) {
  if (m_effect_keys.size() != keys.size()) {
    throw std::logic_error("repair: the effects' keys do not match the records' keys");
  }
  m_records.read(keys, m_states);
  m_effects.lookup(m_effect_keys, m_present);
  out.resize(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    Claim found = m_judge(m_states[i]);
    if (found == Claim::Done) {
      ++m_processed;
      m_matched += m_present[i] != 0 ? 1 : 0;
    }
    out[i] = repair_claim(found, m_present[i] != 0);
    if (out[i] == Claim::NotLost && m_present[i] == 0 && m_states[i].kind == RecordState::Kind::Absent &&
        released_before.count(keys[i]) != 0) {
      out[i] = Claim::OwnStale;
    }
  }
}

void RepairPlacement::plan(const std::vector<std::string>& keys, std::vector<Claim>& out) {
  if (stop_when_proven && proven()) {
    out.assign(keys.size(), Claim::NotLost);
    return;
  }
  judge(keys, out);
}

void RepairPlacement::claim(const std::vector<std::string>& keys, const std::string&, std::vector<Claim>& out) {
  judge(keys, out);
  m_release.assign(keys.size(), 0);
  m_releasing.clear();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    m_release[i] = out[i] == Claim::Claimed ? 1 : 0;
    if (m_release[i] != 0) {
      m_releasing.push_back(keys[i]);
    }
  }
  if (m_releasing.empty()) {
    return;
  }
  if (before_release) {
    before_release(m_releasing);
  }
  m_records.release(m_release, m_released);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (m_release[i] != 0 && m_released[i] == 0) {
      out[i] = Claim::Changed;
    }
  }
}

std::optional<Finding> repair_changed_finding(std::int64_t changed, const FindingBuilder& examples) {
  return examples.build("repair-record-changed", Severity::Warning,
                        fmt::format("{} lost events were left alone: their record changed between the repair's "
                                    "read and its release",
                                    changed),
                        "The consumer (or another run) wrote them meanwhile. Audit the range again with --effects; "
                        "rerun the repair for what is still lost.");
}

// A lookup that found the effect of none of the processed records judged proves nothing.
std::vector<Finding> RepairPlacement::findings() const {
  if (m_processed == 0 || proven()) {
    return {};
  }
  return {effects_unmatched_finding(effects_source, m_processed)};
}

} // namespace dedupctl::core
