#include "core/replay/guard.hpp"

#include <fmt/format.h>

#include <charconv>

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

void GuardPlacement::walked(std::string_view topic, std::int32_t partition, std::int64_t end) {
  m_walked_to[{std::string(topic), partition}] = end;
}

bool GuardPlacement::after_walk(std::string_view key) const {
  // topic/partition/offset: a topic's name holds no '/'.
  auto last = key.rfind('/');
  if (last == std::string_view::npos || last == 0) {
    return false;
  }
  auto middle = key.rfind('/', last - 1);
  if (middle == std::string_view::npos) {
    return false;
  }
  std::int32_t partition = 0;
  std::int64_t offset = 0;
  auto p = key.substr(middle + 1, last - middle - 1);
  auto o = key.substr(last + 1);
  if (std::from_chars(p.data(), p.data() + p.size(), partition).ec != std::errc{} ||
      std::from_chars(o.data(), o.data() + o.size(), offset).ec != std::errc{}) {
    return false;
  }
  auto it = m_walked_to.find(std::pair(std::string(key.substr(0, middle)), partition));
  if (it == m_walked_to.end()) { // a partition the walk did not read, when it named those it read
    return !m_walked_to.empty();
  }
  return offset >= it->second;
}

void GuardPlacement::plan(const std::vector<std::string>& keys, std::vector<Claim>& out) {
  out.resize(keys.size());
  for (std::size_t k = 0; k < keys.size(); ++k) {
    if (m_applies.contains(keys[k])) {
      out[k] = Claim::Claimed;
    } else if (m_unjudged.contains(keys[k]) || after_walk(keys[k])) {
      out[k] = Claim::Unfit;
    } else {
      out[k] = Claim::Done;
    }
  }
}

void GuardPlacement::claim(const std::vector<std::string>& keys, const std::string&, std::vector<Claim>& out) {
  plan(keys, out);
}

std::string GuardPlacement::unfit_keys() const {
  if (m_states) {
    return "a state guard cannot judge them: no entity, a type the transitions do not name, a projection in a state "
           "they do not name, or an event appended after the walk that decides what is published (rerun for those)";
  }
  return "a version guard cannot judge them: no entity or version, a version --version-order does not compare, or "
         "an event appended after the walk that decides what is published (rerun for those)";
}

std::vector<Finding> GuardPlacement::findings() const {
  Finding f;
  f.id = m_states ? "state-guard-replay" : "version-guard-replay";
  f.severity = Severity::Info;
  f.count = applies();
  f.title =
      m_states
          ? fmt::format("a state guard applies {} of the {} events read: those whose entity is in a state "
                        "they move from when the consumer meets them, from the projection's state on; "
                        "only they are published",
                        applies(), m_judged)
          : fmt::format("a version guard applies {} of the {} events read: those above their entity's version in the "
                        "projection and above every version applied before them; only they are published",
                        applies(), m_judged);
  f.advice = "Nothing is claimed or written to the projection: the consumer writes it when it applies the events. It "
             "applies them in the order it reads them: publish to a topic keyed as the source is, so that each "
             "entity's events keep their order.";
  return {std::move(f)};
}

} // namespace dedupctl::core
