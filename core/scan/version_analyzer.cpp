#include "core/scan/version_analyzer.hpp"

#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"
#include "core/util/time.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <unordered_set>

namespace dedupctl::core {

std::string_view to_string(VersionOrder order) {
  switch (order) {
  case VersionOrder::Numeric:
    return "numeric";
  case VersionOrder::Lexical:
    return "lexical";
  case VersionOrder::Rfc3339:
    return "rfc3339";
  }
  return "numeric";
}

VersionOrder parse_version_order(std::string_view text) {
  for (auto order : {VersionOrder::Numeric, VersionOrder::Lexical, VersionOrder::Rfc3339}) {
    if (text == to_string(order)) {
      return order;
    }
  }
  throw UsageError(fmt::format("invalid --version-order '{}': expected numeric, lexical or rfc3339 (as the handler "
                               "compares the version)",
                               text));
}

std::optional<VersionValue> parse_version(std::string_view text, VersionOrder order) {
  if (text.empty()) {
    return std::nullopt;
  }
  VersionValue v;
  v.text = text;
  switch (order) {
  case VersionOrder::Lexical:
    return v;
  case VersionOrder::Numeric: {
    const char* end = text.data() + text.size();
    std::int64_t whole = 0;
    auto [at, error] = std::from_chars(text.data(), end, whole);
    if (error == std::errc() && at == end) {
      v.number = static_cast<long double>(whole);
      v.integral = true;
      return v;
    }
    auto [at2, error2] = std::from_chars(text.data(), end, v.number, std::chars_format::fixed);
    if (error2 != std::errc() || at2 != end || !std::isfinite(v.number)) {
      return std::nullopt;
    }
    return v;
  }
  case VersionOrder::Rfc3339: {
    // A time, not epoch digits or a date alone: what the handler's timestamp column compares.
    if (text.size() < 16 || (text[10] != 'T' && text[10] != 't' && text[10] != ' ')) {
      return std::nullopt;
    }
    try {
      v.number = static_cast<long double>(parse_time(text, "version"));
    } catch (const UsageError&) {
      return std::nullopt;
    }
    return v;
  }
  }
  return std::nullopt;
}

namespace {

// A fixed-format decimal as parse_version accepts it ("-12.50", "007", ".5"): its sign, its whole part
// without leading zeros and its fraction without trailing zeros, so that equal numbers have equal parts.
struct DecimalText {
  bool negative = false;
  std::string_view whole, fraction;
};

DecimalText split_decimal(std::string_view text) {
  DecimalText d;
  if (!text.empty() && text.front() == '-') {
    d.negative = true;
    text.remove_prefix(1);
  }
  std::size_t dot = text.find('.');
  d.whole = text.substr(0, dot);
  d.fraction = dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
  d.whole.remove_prefix(std::min(d.whole.find_first_not_of('0'), d.whole.size()));
  d.fraction = d.fraction.substr(0, d.fraction.find_last_not_of('0') + 1);
  d.negative = d.negative && !(d.whole.empty() && d.fraction.empty()); // -0 is 0
  return d;
}

int sign_of(int c) { return c < 0 ? -1 : c > 0 ? 1 : 0; }

// The exact order of two such decimals, of any length: what a numeric column compares, where a long
// double would round them past 19 digits.
int compare_decimal_text(std::string_view a_text, std::string_view b_text) {
  DecimalText a = split_decimal(a_text), b = split_decimal(b_text);
  if (a.negative != b.negative) {
    return a.negative ? -1 : 1;
  }
  int magnitude =
      a.whole.size() != b.whole.size() ? (a.whole.size() < b.whole.size() ? -1 : 1) : sign_of(a.whole.compare(b.whole));
  if (magnitude == 0) {
    magnitude = sign_of(a.fraction.compare(b.fraction)); // aligned at the point: byte order is numeric order
  }
  return a.negative ? -magnitude : magnitude;
}

} // namespace

int compare_versions(const VersionValue& a, const VersionValue& b, VersionOrder order) {
  if (order == VersionOrder::Lexical) {
    return sign_of(a.text.compare(b.text));
  }
  if (order == VersionOrder::Numeric && !(a.integral && b.integral)) {
    return compare_decimal_text(a.text, b.text); // a decimal, or a whole number beyond 64 bits
  }
  return a.number < b.number ? -1 : a.number > b.number ? 1 : 0;
}

VersionAnalyzer::VersionAnalyzer(VersionOrder order, std::size_t max_examples)
    : m_order(order), m_regression(max_examples), m_conflict(max_examples), m_gap(max_examples),
      m_unparsed(max_examples), m_unversioned(max_examples) {}

void VersionAnalyzer::reserve(std::size_t events) {
  m_seen.reserve(events);
  m_entity_of = FlatHashMap<std::uint32_t>(events / 2);
  m_text.reserve(events * 24); // an id and a version, as most ranges name them
}

std::uint32_t VersionAnalyzer::keep(std::string_view s) {
  auto at = static_cast<std::uint32_t>(m_text.size());
  m_text.append(s);
  return at;
}

// A batch's entities hashed first, each one's slot asked of the CPU a few events ahead of its lookup:
// the entities of a long range do not stay in the cache, and one event waits for a miss no longer.
void VersionAnalyzer::observe(std::span<const Event> events, std::span<const Identity> identities) {
  constexpr std::size_t k_ahead = 8;
  m_entity_hashes.resize(events.size());
  for (std::size_t i = 0; i < events.size(); ++i) {
    m_entity_hashes[i] = identities[i].has_entity ? hash64(identities[i].entity) : 0;
    if (i < k_ahead && identities[i].has_entity) {
      m_entity_of.prefetch(m_entity_hashes[i]);
    }
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (i + k_ahead < events.size() && identities[i + k_ahead].has_entity) {
      m_entity_of.prefetch(m_entity_hashes[i + k_ahead]);
    }
    observe(events[i], identities[i], m_entity_hashes[i]);
  }
}

void VersionAnalyzer::observe(const Event& event, const Identity& identity) {
  observe(event, identity, identity.has_entity ? hash64(identity.entity) : 0);
}

VersionValue VersionAnalyzer::value(const Seen& s) const {
  // A numeric version that is not a whole number of 64 bits compares by its text: `whole` is unused.
  return {static_cast<long double>(s.whole), text(s.version_at(), s.version_len), s.integral};
}

std::uint32_t VersionAnalyzer::topic_index(std::string_view topic) {
  auto it = std::find(m_topics.begin(), m_topics.end(), topic); // a few topics at most
  if (it == m_topics.end()) {
    it = m_topics.emplace(m_topics.end(), topic);
  }
  return static_cast<std::uint32_t>(it - m_topics.begin());
}

std::uint16_t VersionAnalyzer::type_index(std::string_view type) {
  auto it = std::find(m_types.begin(), m_types.end(), type); // a few types at most
  if (it == m_types.end()) {
    if (m_types.size() == 65535) {
      return 65534; // more types than a breakdown shows: the rest folded into the last
    }
    it = m_types.emplace(m_types.end(), type);
  }
  return static_cast<std::uint16_t>(it - m_types.begin());
}

// An event the walk does not compare (no id, no entity or version, a version that does not parse),
// kept for the guard's verdicts in read order.
void VersionAnalyzer::keep_unversioned(const Event& event, const Identity& identity) {
  Seen s = seen_of(event, identity);
  s.entity = k_no_entity;
  s.has_id = identity.has_id;
  s.parsed = false;
  s.type = type_index(identity.type);
  m_seen.push_back(s);
}

VersionAnalyzer::Seen VersionAnalyzer::seen_of(const Event& event, const Identity& identity) {
  Seen s;
  s.topic = topic_index(event.topic);
  s.partition = event.partition;
  s.offset = event.offset;
  s.timestamp = event.timestamp_ms;
  s.seq = event.seq;
  s.id_hash = identity.id_hash;
  s.semantic = identity.semantic_hash;
  s.id_at = keep(identity.id);
  s.id_len = static_cast<std::uint32_t>(identity.id.size());
  keep(identity.version); // at version_at()
  s.version_len = static_cast<std::uint32_t>(identity.version.size());
  return s;
}

std::uint32_t VersionAnalyzer::entity_index(std::string_view entity, std::uint64_t hash) {
  bool inserted = false;
  std::uint32_t& index = m_entity_of.find_or_insert(hash, inserted);
  if (inserted) {
    index = static_cast<std::uint32_t>(m_entities.size());
    m_entities.emplace_back(entity);
  }
  return index;
}

// An event with an id whose guard cannot be checked (version-unchecked); `why` is its example's note.
void VersionAnalyzer::unchecked(const Event& event, const Identity& identity, const std::function<std::string()>& why) {
  ++m_counters.unversioned;
  m_unversioned.add(event.partition, [&] { return example_of(event, identity, {}, why()); });
  if (m_keep_all) {
    keep_unversioned(event, identity);
  }
}

// A state guard's event: checked with an entity and a type the transitions name.
void VersionAnalyzer::observe_state(const Event& event, const Identity& identity, std::uint64_t entity_hash) {
  if (!identity.has_entity || !m_states->of(identity.type)) {
    unchecked(event, identity, [&] {
      return !identity.has_entity ? std::string("no entity")
                                  : fmt::format("type '{}' is not in the transitions", identity.type);
    });
    return;
  }
  ++m_counters.checked;
  Seen s = seen_of(event, identity);
  s.entity = entity_index(identity.entity, entity_hash);
  s.type = type_index(identity.type);
  m_seen.push_back(s);
}

void VersionAnalyzer::observe(const Event& event, const Identity& identity, std::uint64_t entity_hash) {
  if (!identity.has_id) {
    if (m_keep_all) {
      keep_unversioned(event, identity);
    }
    return; // missing-event-id says so; a guard's event is still one with an id
  }
  if (m_states) {
    observe_state(event, identity, entity_hash);
    return;
  }
  if (!identity.has_entity || !identity.has_version) {
    unchecked(event, identity, [&] { return std::string(!identity.has_entity ? "no entity" : "no version"); });
    return;
  }
  auto parsed = parse_version(identity.version, m_order);
  if (!parsed) {
    ++m_counters.unparsed;
    m_unparsed.add(event.partition, [&] {
      return example_of(event, identity, {},
                        fmt::format("version '{}' is not {}", identity.version,
                                    m_order == VersionOrder::Rfc3339 ? "an RFC 3339 time" : "a number"));
    });
    if (m_keep_all) {
      keep_unversioned(event, identity);
    }
    return;
  }
  ++m_counters.checked;
  Seen s = seen_of(event, identity);
  s.entity = entity_index(identity.entity, entity_hash);
  if (m_keep_all) {
    s.type = type_index(identity.type);
  }
  if (parsed->integral || m_order == VersionOrder::Rfc3339) {
    s.whole = static_cast<std::int64_t>(parsed->number); // exact: a whole number or epoch ms
  }
  s.integral = parsed->integral;
  m_seen.push_back(s);
}

Example VersionAnalyzer::example(const Seen& s, std::string note) const {
  Example ex;
  ex.event_id = std::string(text(s.id_at, s.id_len));
  ex.topic = m_topics[s.topic];
  ex.partition = s.partition;
  ex.offset = s.offset;
  ex.timestamp_ms = s.timestamp;
  ex.seq = s.seq;
  ex.note = std::move(note);
  return ex;
}

// One entity's events (in read order, which is log order within a partition) in the order its
// consumer meets them: each partition's in log order, the partitions merged by timestamp.
std::span<const std::size_t> VersionAnalyzer::consumer_order(std::span<const std::size_t> of_entity) {
  // One partition, or events already in (timestamp, seq) order: the merge is the read order itself.
  auto earlier = [this](std::size_t a, std::size_t b) {
    return std::pair(m_seen[a].timestamp, m_seen[a].seq) < std::pair(m_seen[b].timestamp, m_seen[b].seq);
  };
  const Seen& first = m_seen[of_entity[0]];
  if (std::all_of(
          of_entity.begin(), of_entity.end(),
          [&](std::size_t i) { return m_seen[i].partition == first.partition && m_seen[i].topic == first.topic; }) ||
      std::is_sorted(of_entity.begin(), of_entity.end(), earlier)) {
    return of_entity;
  }
  std::vector<std::pair<std::uint32_t, std::int32_t>> partitions;
  for (std::size_t i : of_entity) {
    std::pair<std::uint32_t, std::int32_t> where{m_seen[i].topic, m_seen[i].partition};
    if (std::find(partitions.begin(), partitions.end(), where) == partitions.end()) {
      partitions.push_back(where);
    }
  }
  std::vector<std::vector<std::size_t>> lanes(partitions.size());
  for (std::size_t i : of_entity) {
    std::pair<std::uint32_t, std::int32_t> where{m_seen[i].topic, m_seen[i].partition};
    lanes[std::find(partitions.begin(), partitions.end(), where) - partitions.begin()].push_back(i);
  }
  std::vector<std::size_t> heads(lanes.size(), 0);
  std::vector<std::size_t>& out = m_merged;
  out.clear();
  while (out.size() < of_entity.size()) {
    std::size_t best = lanes.size();
    for (std::size_t l = 0; l < lanes.size(); ++l) {
      if (heads[l] == lanes[l].size()) {
        continue;
      }
      if (best == lanes.size() || earlier(lanes[l][heads[l]], lanes[best][heads[best]])) {
        best = l;
      }
    }
    out.push_back(lanes[best][heads[best]++]);
  }
  return out;
}

void VersionAnalyzer::walk(std::span<const std::size_t> of_entity) {
  const std::string& entity = m_entities[m_seen[of_entity[0]].entity];
  auto less = [this](const VersionValue& a, const VersionValue& b) { return compare_versions(a, b, m_order) < 0; };
  // Most entities have a few events: their ids and first events of a version are searched in a
  // vector, without an allocation a node; a long history takes the hashed and ordered sets.
  bool long_history = of_entity.size() > k_short_history;
  std::vector<std::uint64_t>& few_ids = m_few_ids;
  std::unordered_set<std::uint64_t> ids;
  std::vector<std::size_t>& few_firsts = m_few_firsts;
  few_ids.clear();
  few_firsts.clear();
  std::map<VersionValue, std::size_t, decltype(less)> first_of_version(less);
  auto first_seen = [&](std::uint64_t id) {
    if (long_history) {
      return ids.insert(id).second;
    }
    if (std::find(few_ids.begin(), few_ids.end(), id) != few_ids.end()) {
      return false;
    }
    few_ids.push_back(id);
    return true;
  };
  auto first_of = [&](const VersionValue& v, std::size_t i) {
    if (long_history) {
      return first_of_version.try_emplace(v, i).first->second;
    }
    for (std::size_t f : few_firsts) {
      if (compare_versions(value(m_seen[f]), v, m_order) == 0) {
        return f;
      }
    }
    few_firsts.push_back(i);
    return i;
  };
  std::optional<std::size_t> highest;
  for (std::size_t i : consumer_order(of_entity)) {
    const Seen& s = m_seen[i];
    if (!first_seen(s.id_hash)) {
      continue; // a redelivery of an event id, not another change
    }
    VersionValue v = value(s);
    std::size_t same = first_of(v, i);
    if (same != i && m_seen[same].semantic != s.semantic) {
      ++m_counters.conflicts;
      const Seen& first = m_seen[same];
      m_conflict.add_at(s.partition, s.seq, [&] {
        return example(s, fmt::format("entity {} version {} again, with another change than {} ({}[{}]@{})", entity,
                                      v.text, text(first.id_at, first.id_len), m_topics[first.topic], first.partition,
                                      first.offset));
      });
      continue;
    }
    if (highest && less(v, value(m_seen[*highest]))) {
      const Seen& above = m_seen[*highest];
      bool cross = above.topic != s.topic || above.partition != s.partition;
      ++m_counters.regressions;
      m_counters.cross_partition += cross ? 1 : 0;
      m_regression.add_at(s.partition, s.seq, [&] {
        Example ex =
            example(s, fmt::format("entity {} version {} after version {} ({} {}[{}]@{}{})", entity, v.text,
                                   text(above.version_at(), above.version_len), text(above.id_at, above.id_len),
                                   m_topics[above.topic], above.partition, above.offset,
                                   cross ? ", earlier by timestamp: an estimate across partitions" : ""));
        ex.cross_partition = cross;
        return ex;
      });
      continue;
    }
    if (!highest || less(value(m_seen[*highest]), v)) {
      highest = i;
    }
  }
}

// Whole versions missing between two the range has (numeric versions only: a count of what lies
// between two times or two strings means nothing). One example a gap: the event after it.
void VersionAnalyzer::gaps(std::span<const std::size_t> of_entity) {
  if (m_order != VersionOrder::Numeric) {
    return;
  }
  // Each version with its first event (in read order): a stable sort by version, then the first of each run.
  auto& by_version = m_by_version;
  by_version.clear();
  for (std::size_t i : of_entity) {
    if (!m_seen[i].integral) {
      return;
    }
    by_version.emplace_back(m_seen[i].whole, i);
  }
  std::stable_sort(by_version.begin(), by_version.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  by_version.erase(std::unique(by_version.begin(), by_version.end(),
                               [](const auto& a, const auto& b) { return a.first == b.first; }),
                   by_version.end());
  const std::string& entity = m_entities[m_seen[of_entity[0]].entity];
  for (auto it = by_version.begin(); it != by_version.end() && std::next(it) != by_version.end(); ++it) {
    auto next = std::next(it);
    std::int64_t missing = next->first - it->first - 1;
    if (missing <= 0) {
      continue;
    }
    m_counters.gaps += missing;
    const Seen& after = m_seen[next->second];
    m_gap.add_at(after.partition, after.seq, [&] {
      return example(after, missing == 1 ? fmt::format("entity {}: version {} missing between {} and {}", entity,
                                                       it->first + 1, it->first, next->first)
                                         : fmt::format("entity {}: versions {} to {} missing between {} and {}", entity,
                                                       it->first + 1, next->first - 1, it->first, next->first));
    });
  }
}

template <typename Fn> void VersionAnalyzer::for_each_entity(Fn&& fn) {
  // The events grouped by entity, each group in read order: a counting sort, entities being dense
  // (a kept event without one is left out).
  std::vector<std::size_t> start(m_entities.size() + 1, 0);
  std::size_t entity_events = 0;
  for (const Seen& s : m_seen) {
    if (s.entity != k_no_entity) {
      ++start[s.entity + 1];
      ++entity_events;
    }
  }
  for (std::size_t e = 1; e < start.size(); ++e) {
    start[e] += start[e - 1];
  }
  std::vector<std::size_t> order(entity_events);
  for (std::size_t i = 0; i < m_seen.size(); ++i) {
    if (m_seen[i].entity != k_no_entity) {
      order[start[m_seen[i].entity]++] = i;
    }
  }
  // start[e] is now where entity e's events end. The events of the entities a few ahead are asked of the
  // CPU while one is walked: in entity order, they lie anywhere in the range.
  constexpr std::size_t k_ahead = 16;
  std::size_t fetched = 0;
  auto fetch_to = [&](std::size_t until) {
    for (until = std::min(until, order.size()); fetched < until; ++fetched) {
      const char* at = reinterpret_cast<const char*>(&m_seen[order[fetched]]);
      __builtin_prefetch(at);
      __builtin_prefetch(at + sizeof(Seen) - 1);
    }
  };
  std::size_t begin = 0;
  for (std::size_t e = 0; e < m_entities.size(); ++e) {
    std::size_t end = start[e];
    fetch_to(end + k_ahead);
    if (end > begin) {
      fn(std::span<const std::size_t>(order.data() + begin, end - begin));
    }
    begin = end;
  }
}

void VersionAnalyzer::evaluate() {
  if (m_evaluated) {
    return;
  }
  m_evaluated = true;
  for_each_entity([this](std::span<const std::size_t> of_entity) {
    if (m_states) {
      walk_states(of_entity);
      return;
    }
    walk(of_entity);
    gaps(of_entity);
  });
}

void VersionAnalyzer::set_projection(std::string_view entity, std::optional<std::string_view> version) {
  const std::uint32_t* index = m_entity_of.find(hash64(entity));
  if (!index) {
    return; // an entity no versioned event named
  }
  if (m_projection.size() <= *index) {
    m_projection.resize(m_entities.size());
  }
  Projection& p = m_projection[*index];
  if (p.known) {
    return;
  }
  p.known = true;
  p.present = version.has_value();
  if (version) {
    p.at = keep(*version);
    p.len = static_cast<std::uint32_t>(version->size());
  }
}

// One entity's verdicts: against the projection's version, each event is covered (at or below it),
// superseded (above it, under a higher version the range has) or missing; and in the consumer's
// order, a replay of the window applies an event above the projection and above what it applied before.
void VersionAnalyzer::decide(std::span<const std::size_t> of_entity, std::span<const std::uint8_t> in_window) {
  std::uint32_t entity = m_seen[of_entity[0]].entity;
  Projection p = entity < m_projection.size() ? m_projection[entity] : Projection{};
  std::optional<VersionValue> projected;
  if (p.present) {
    projected = parse_version(text(p.at, p.len), m_order);
  }
  // Never looked up (a lookup that failed mid-read), or what the handler could not compare: nothing
  // is decided, so nothing is called covered or applied on the projection's word.
  if (!p.known || (p.present && !projected)) {
    for (std::size_t i : of_entity) {
      m_guard[i] = static_cast<std::uint8_t>(GuardState::Unchecked) | (in_window[i] ? 0x80 : 0);
    }
    return;
  }
  auto less = [this](const VersionValue& a, const VersionValue& b) { return compare_versions(a, b, m_order) < 0; };
  std::optional<VersionValue> highest;
  for (std::size_t i : of_entity) {
    if (!highest || less(*highest, value(m_seen[i]))) {
      highest = value(m_seen[i]);
    }
  }
  std::optional<VersionValue> running = projected;
  for (std::size_t i : consumer_order(of_entity)) {
    VersionValue v = value(m_seen[i]);
    GuardState state = projected && !less(*projected, v) ? GuardState::Covered
                       : less(v, *highest)               ? GuardState::Superseded
                                                         : GuardState::Missing;
    bool applied = in_window[i] && (!running || less(*running, v));
    if (applied) {
      running = v;
    }
    m_guard[i] = static_cast<std::uint8_t>(state) | (applied ? 0x80 : 0);
  }
}

// An entity's events (their types, and whether each is in the window) in the consumer's order, into
// the walk's scratch; the span is the order.
std::span<const std::size_t> VersionAnalyzer::state_walk_input(std::span<const std::size_t> of_entity,
                                                               std::span<const std::uint8_t> in_window) {
  auto order = consumer_order(of_entity);
  m_walk_types.clear();
  m_walk_window.clear();
  for (std::size_t i : order) {
    m_walk_types.emplace_back(m_types[m_seen[i].type]);
    m_walk_window.push_back(in_window.empty() ? 1 : in_window[i]);
  }
  return order;
}

// transition-gap: an event that moves from states no other event of its entity in the range moves it
// to. One example an event, naming the states it needed.
void VersionAnalyzer::walk_states(std::span<const std::size_t> of_entity) {
  auto order = state_walk_input(of_entity, {});
  auto verdicts = core::walk_states(*m_states, std::nullopt, m_walk_types);
  for (std::size_t k = 0; k < order.size(); ++k) {
    if (!verdicts[k].gap) {
      continue;
    }
    ++m_counters.gaps;
    const Seen& s = m_seen[order[k]];
    m_gap.add_at(s.partition, s.seq, [&] {
      const Transition* t = m_states->of(m_walk_types[k]);
      return example(s, fmt::format("entity {} {} moves from {}, which no other event of the entity in the range "
                                    "moves it to",
                                    m_entities[s.entity], m_walk_types[k], fmt::join(t->from, " or ")));
    });
  }
}

// A state guard's verdicts for one entity: covered where the projection's state is at or past the
// event's, and, from that state in the consumer's order, what a replay of the window applies. A state
// the transitions do not name is one the guard cannot judge: nothing is decided.
void VersionAnalyzer::decide_states(std::span<const std::size_t> of_entity, std::span<const std::uint8_t> in_window) {
  std::uint32_t entity = m_seen[of_entity[0]].entity;
  Projection p = entity < m_projection.size() ? m_projection[entity] : Projection{};
  std::optional<std::string_view> state;
  if (p.present) {
    state = text(p.at, p.len);
  }
  if (!p.known || (state && !m_states->knows(*state))) {
    for (std::size_t i : of_entity) {
      m_guard[i] = static_cast<std::uint8_t>(GuardState::Unchecked) | (in_window[i] ? 0x80 : 0);
    }
    return;
  }
  auto order = state_walk_input(of_entity, in_window);
  auto verdicts = core::walk_states(*m_states, state, m_walk_types, m_walk_window);
  for (std::size_t k = 0; k < order.size(); ++k) {
    GuardState g = verdicts[k].covered ? GuardState::Covered : GuardState::Missing;
    m_guard[order[k]] = static_cast<std::uint8_t>(g) | (verdicts[k].applied ? 0x80 : 0);
  }
}

void VersionAnalyzer::decide_guard(std::span<const std::uint8_t> in_window) {
  m_guard.assign(m_seen.size(), 0);
  for (std::size_t i = 0; i < m_seen.size(); ++i) {
    if (m_seen[i].entity == k_no_entity) { // not compared: a replay delivers it, whatever the handler does
      m_guard[i] = static_cast<std::uint8_t>(m_seen[i].has_id ? GuardState::Unchecked : GuardState::NoId) |
                   (in_window[i] ? 0x80 : 0);
    }
  }
  for_each_entity([&](std::span<const std::size_t> of_entity) {
    if (m_states) {
      decide_states(of_entity, in_window);
    } else {
      decide(of_entity, in_window);
    }
  });
}

std::vector<GuardEvent> VersionAnalyzer::history(std::string_view entity) {
  std::vector<GuardEvent> out;
  const std::uint32_t* index = m_entity_of.find(hash64(entity));
  if (!index) {
    return out;
  }
  std::vector<std::size_t> of_entity;
  for (std::size_t i = 0; i < m_seen.size(); ++i) {
    if (m_seen[i].entity == *index) {
      of_entity.push_back(i);
    }
  }
  std::optional<VersionValue> highest;
  for (std::size_t i : consumer_order(of_entity)) {
    GuardEvent e = guard_event(i);
    VersionValue v = value(m_seen[i]);
    e.applied = !highest || compare_versions(*highest, v, m_order) < 0;
    e.state = e.applied ? GuardState::Missing : GuardState::Superseded;
    if (e.applied) {
      highest = v;
    }
    out.push_back(e);
  }
  return out;
}

GuardEvent VersionAnalyzer::guard_event(std::size_t i) const {
  const Seen& s = m_seen[i];
  GuardEvent out;
  out.topic = m_topics[s.topic];
  out.partition = s.partition;
  out.offset = s.offset;
  out.timestamp_ms = s.timestamp;
  out.seq = s.seq;
  out.has_id = s.has_id;
  out.id = text(s.id_at, s.id_len);
  out.type = s.type < m_types.size() ? std::string_view(m_types[s.type]) : std::string_view{};
  out.version = text(s.version_at(), s.version_len);
  if (s.entity != k_no_entity) {
    out.entity = m_entities[s.entity];
    if (s.entity < m_projection.size() && m_projection[s.entity].present) {
      out.projection = text(m_projection[s.entity].at, m_projection[s.entity].len);
    }
  }
  if (i < m_guard.size()) {
    out.state = static_cast<GuardState>(m_guard[i] & 0x7f);
    out.applied = (m_guard[i] & 0x80) != 0;
  }
  return out;
}

const VersionCounters& VersionAnalyzer::counters() {
  evaluate();
  return m_counters;
}

std::vector<Finding> VersionAnalyzer::state_findings() {
  std::vector<Finding> out;
  const auto& c = m_counters;
  if (auto gap = m_gap.build("transition-gap", Severity::Warning,
                             fmt::format("{} events move their entity from a state no other event of it in the range "
                                         "moves it to: a state guard drops them unless the entity got there before "
                                         "the range",
                                         c.gaps),
                             "find the events that should move the entity there (lost upstream, removed by "
                             "compaction, or a type missing from the transitions)")) {
    out.push_back(std::move(*gap));
  }
  if (auto unchecked = m_unversioned.build(
          "version-unchecked", c.checked == 0 ? Severity::Error : Severity::Warning,
          c.checked == 0 ? fmt::format("none of {} events gave an --entity and a type the transitions name: no "
                                       "guard was checked",
                                       c.unversioned)
                         : fmt::format("{} events gave no --entity or a type the transitions do not name: their "
                                       "guard was not checked",
                                       c.unversioned),
          "check the --entity and --type specs against an event (dedupctl trace shows one), and give every type "
          "the handler moves a [Type] in the transitions")) {
    out.push_back(std::move(*unchecked));
  }
  return out;
}

std::vector<Finding> VersionAnalyzer::findings() {
  evaluate();
  if (m_states) {
    return state_findings();
  }
  std::vector<Finding> out;
  auto push = [&](std::optional<Finding> f) {
    if (f) {
      out.push_back(std::move(*f));
    }
  };
  const auto& c = m_counters;
  push(m_regression.build(
      "version-regression", Severity::Error,
      fmt::format("{} events carry a version below one their entity already had under another event id ({} of them "
                  "across partitions): a version guard drops these changes for good",
                  c.regressions, c.cross_partition),
      c.cross_partition > 0
          ? "key the topic by the entity so that one entity's events keep one partition's order, or make the producer "
            "stop reordering; then re-apply the dropped changes"
          : "find why the producer wrote an older version after a newer one (a retry that reorders, two writers); "
            "then re-apply the dropped changes"));
  push(m_conflict.build(
      "version-conflict", Severity::Error,
      fmt::format("{} events repeat a version of their entity with another change: a version guard applies only "
                  "the first",
                  c.conflicts),
      "give every change of an entity a version of its own (increment it where the change is made)"));
  if (auto gap = m_gap.build("version-gap", Severity::Warning,
                             fmt::format("{} versions are missing inside the range between versions it has: lost "
                                         "upstream, or removed by compaction",
                                         c.gaps),
                             "check the producer and the topic's cleanup.policy; a guard applies the next version "
                             "without them")) {
    gap->count = c.gaps; // versions, not events: one example a gap
    out.push_back(std::move(*gap));
  }
  push(m_unparsed.build("version-unparsed", Severity::Warning,
                        fmt::format("{} events have a version that is not {}: never compared", c.unparsed,
                                    m_order == VersionOrder::Rfc3339   ? "an RFC 3339 time"
                                    : m_order == VersionOrder::Numeric ? "a number"
                                                                       : "a string"),
                        "give --version-order as the handler compares the version (numeric, lexical, rfc3339)"));
  push(m_unversioned.build(
      "version-unchecked", c.checked == 0 ? Severity::Error : Severity::Warning,
      c.checked == 0
          ? fmt::format("none of {} events gave both an --entity and a --version: no guard was checked", c.unversioned)
          : fmt::format("{} events gave no --entity or no --version: their guard was not checked", c.unversioned),
      "check the --entity and --version specs against an event (dedupctl trace shows one)"));
  return out;
}

} // namespace dedupctl::core
