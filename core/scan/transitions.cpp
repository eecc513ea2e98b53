#include "core/scan/transitions.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <algorithm>
#include <deque>
#include <set>

namespace dedupctl::core {

namespace {

[[noreturn]] void refuse(std::string_view path, const toml::source_region& at, std::string_view what) {
  throw UsageError(fmt::format("--layout-option transitions={}:{}: {}", path, at.begin.line, what));
}

Transition read_transition(std::string_view path, std::string_view type, const toml::node& node) {
  const toml::table* table = node.as_table();
  if (!table) {
    refuse(path, node.source(),
           fmt::format("'{}' must be a table of its transition: [{}] with from = [\"…\"] and to = \"…\"", type, type));
  }
  Transition out;
  for (auto&& [key, value] : *table) {
    if (key.str() == "to") {
      if (!value.is_string() || value.as_string()->get().empty()) {
        refuse(path, value.source(), fmt::format("[{}] to must be the state it moves the entity to, a string", type));
      }
      out.to = value.as_string()->get();
    } else if (key.str() == "from") {
      const toml::array* states = value.as_array();
      if (!states || states->empty() ||
          !std::all_of(states->begin(), states->end(), [](const toml::node& s) { return s.is_string(); })) {
        refuse(path, value.source(),
               fmt::format("[{}] from must be the states it applies from, an array of strings (leave it out for "
                           "the event that creates the entity)",
                           type));
      }
      for (const auto& state : *states) {
        out.from.push_back(state.as_string()->get());
      }
    } else {
      refuse(path, key.source(), fmt::format("[{}] takes from and to, not '{}'", type, key.str()));
    }
  }
  if (out.to.empty()) {
    refuse(path, node.source(), fmt::format("[{}] needs to = \"STATE\": the state it moves the entity to", type));
  }
  return out;
}

} // namespace

TransitionTable TransitionTable::parse(std::string_view toml, std::string_view path) {
  toml::table root;
  try {
    root = toml::parse(toml, path);
  } catch (const toml::parse_error& e) {
    refuse(path, e.source(), e.description());
  }
  TransitionTable out;
  for (auto&& [type, node] : root) {
    Transition t = read_transition(path, type.str(), node);
    out.m_states.insert(t.to);
    for (const auto& from : t.from) {
      out.m_states.insert(from);
      auto& next = out.m_next[from];
      if (std::find(next.begin(), next.end(), t.to) == next.end()) {
        next.push_back(t.to);
      }
    }
    out.m_by_type.emplace(std::string(type.str()), std::move(t));
  }
  if (out.m_by_type.empty()) {
    throw UsageError(fmt::format("--layout-option transitions={}: no transition in it; write one table an event "
                                 "type: [OrderPaid] from = [\"pending\"] to = \"paid\"",
                                 path));
  }
  return out;
}

const Transition* TransitionTable::of(std::string_view type) const {
  auto it = m_by_type.find(type);
  return it == m_by_type.end() ? nullptr : &it->second;
}

bool TransitionTable::at_or_past(std::string_view state, std::string_view target) const {
  std::set<std::string_view> seen{target};
  std::deque<std::string_view> next{target};
  while (!next.empty()) {
    std::string_view at = next.front();
    next.pop_front();
    if (at == state) {
      return true;
    }
    auto it = m_next.find(at);
    if (it == m_next.end()) {
      continue;
    }
    for (const auto& to : it->second) {
      if (seen.insert(to).second) {
        next.push_back(to);
      }
    }
  }
  return false;
}

bool TransitionTable::knows(std::string_view state) const { return m_states.find(state) != m_states.end(); }

bool TransitionTable::applies(const Transition& t, std::optional<std::string_view> state) {
  if (!state) {
    return t.creates();
  }
  return std::find(t.from.begin(), t.from.end(), *state) != t.from.end();
}

std::vector<StateVerdict> walk_states(const TransitionTable& table, std::optional<std::string_view> projection,
                                      const std::vector<std::string_view>& types,
                                      std::span<const std::uint8_t> in_window) {
  std::vector<StateVerdict> out(types.size());
  std::map<std::string_view, int> reached; // a state → the entity's events in the range that move it there
  for (auto type : types) {
    if (const Transition* t = table.of(type)) {
      ++reached[t->to];
    }
  }
  std::optional<std::string_view> current = projection; // the replay's
  bool first = true;
  for (std::size_t i = 0; i < types.size(); ++i) {
    const Transition* t = table.of(types[i]);
    if (!t) {
      continue;
    }
    StateVerdict& v = out[i];
    v.known = true;
    v.covered = projection && table.at_or_past(*projection, t->to);
    v.applied = (in_window.empty() || in_window[i]) && TransitionTable::applies(*t, current);
    if (v.applied) {
      current = t->to;
    }
    auto by_another = [&](const std::string& state) {
      auto it = reached.find(state);
      return it != reached.end() && it->second > (state == t->to ? 1 : 0);
    };
    v.gap = !first && !t->creates() && std::none_of(t->from.begin(), t->from.end(), by_another);
    first = false;
  }
  return out;
}

} // namespace dedupctl::core
