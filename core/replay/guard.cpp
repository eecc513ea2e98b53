#include "core/replay/guard.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

KeyTemplate guard_replay_key_template() { return KeyTemplate::parse("{topic}/{partition}/{offset}"); }

void GuardPlacement::judge(std::string key, GuardVerdict verdict) {
  ++m_judged;
  if (verdict == GuardVerdict::Applies) {
    m_applies.insert(std::move(key));
  } else if (verdict == GuardVerdict::Unjudged) {
    m_unjudged.insert(std::move(key));
  }
}

void GuardPlacement::plan(const std::vector<std::string>& keys, std::vector<Claim>& out) {
  out.resize(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    out[k] = m_applies.contains(keys[k]) ? Claim::Claimed : m_unjudged.contains(keys[k]) ? Claim::Unfit : Claim::Done;
  }
}

void GuardPlacement::claim(const std::vector<std::string>& keys, const std::string&, std::vector<Claim>& out) {
  plan(keys, out);
}

std::string GuardPlacement::unfit_keys() const {
  return "a version guard cannot judge them: no entity or version, or a version --version-order does not compare";
}

std::vector<Finding> GuardPlacement::findings() const {
  Finding f;
  f.id = "version-guard-replay";
  f.severity = Severity::Info;
  f.count = applies();
  f.title = fmt::format("a version guard applies {} of the {} events read: those above their entity's version in the "
                        "projection and above every version applied before them; only they are published",
                        applies(), m_judged);
  f.advice = "Nothing is claimed or written to the projection: the consumer writes it when it applies the events. It "
             "applies them in the order it reads them: publish to a topic keyed as the source is, so that each "
             "entity's events keep their order.";
  return {std::move(f)};
}

} // namespace dedupctl::core
