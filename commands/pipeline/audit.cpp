#include "commands/pipeline/audit.hpp"

#include "commands/pipeline/common.hpp"
#include "commands/pipeline/serial_worker.hpp"
#include "core/audit/retention.hpp"
#include "core/source/range.hpp"
#include "core/util/fingerprint.hpp"
#include "core/util/time.hpp"
#include "core/window/window_analyzer.hpp"

#include <fmt/format.h>

#include <array>
#include <deque>
#include <future>
#include <map>
#include <memory>

namespace dedupctl::commands {

std::string AuditStageTimes::describe() const {
  return fmt::format(
      "read {:.2f} s, identify {:.2f} s, render keys {:.2f} s, wait for lookups {:.2f} s, classify "
      "{:.2f} s{}; lookups {:.2f} s on their own thread ({:.2f} s of it CPU)",
      read, identify, render, lookup_wait, classify,
      fold_wait + replay > 0
          ? fmt::format(", wait for the changelog's fold {:.2f} s, the processor over it {:.2f} s", fold_wait, replay)
          : "",
      lookup, lookup_cpu);
}

namespace {

// The analyzers' options for this run (`options`: the placement's, or a tier's): its time, window
// label and expected size, and the topic's retention and the lag allowance, which are every tier's.
core::AuditOptions audit_options_for(core::AuditOptions options, const AuditRequest& request,
                                     const core::SourceInfo& info, std::int64_t now_ms) {
  options.policy.now_ms = now_ms;
  options.policy.retention = request.audit.policy.retention;
  options.policy.compacted = request.audit.policy.compacted;
  options.policy.max_lag_ms = request.audit.policy.max_lag_ms;
  options.max_examples = request.max_examples;
  // A file source's partitions are not known up front: its window is everything read.
  options.default_window = info.partitions.empty();
  options.window_label = request.has_seek ? "[seek, committed)" : "[from, to)";
  if (auto expected = expected_events(info)) {
    options.expected_events = expected;
  }
  return options;
}

// A chain of tiers as the reader feeds it: each tier's own analyzer, the chain that picks an event's
// best tier, and the groups' committed offsets (which decide a claim's and an absence's meaning).
struct ChainObservers {
  std::deque<core::AuditAnalyzer>& tiers;
  core::TierChain& chain;
  std::vector<core::PartitionWindow> committed; // the partitions' committed offsets, as announced
  std::size_t example_tier = 0; // whose key the chain's own examples show: the first that survives a restart

  std::optional<std::int64_t> committed_of(const core::Event& event) {
    if (last < committed.size() && committed[last].partition == event.partition &&
        committed[last].topic == event.topic) {
      return committed[last].committed;
    }
    for (last = 0; last < committed.size(); ++last) {
      if (committed[last].partition == event.partition && committed[last].topic == event.topic) {
        return committed[last].committed;
      }
    }
    return std::nullopt; // a file's partition, not announced
  }
  std::size_t last = 0;
};

// Lookups overlap consumption: while the stores look batch N up on the worker thread, the main thread
// reads and identifies batch N+1. Each of the two slots owns its batch, identities (and the
// identifier whose arena they live in), keys and states; events are observed in order, and each
// store is used by one thread at a time. A chain of tiers has a store, a template and keys a tier.
class AuditReader {
public:
  AuditReader(const AuditRequest& request, const core::AuditOptions& options, std::vector<core::DedupStore*> stores,
              core::LogAnalyzer& log, core::AuditAnalyzer& audit, core::WindowAnalyzer* window, ChainObservers* chain,
              core::WindowStoreReplay* window_store)
      : m_request(request), m_stores(std::move(stores)), m_log(log), m_audit(audit),
        m_guard(options.version_guard ? log.versions() : nullptr), m_window(window), m_chain(chain),
        m_window_store(window_store) {
    // Every template renders from one Identity: each one's fields are indexed after those before it.
    std::vector<core::KeyTemplate> templates{chain ? request.tiers[0].audit.key_template : options.key_template};
    for (std::size_t t = 1; t < m_stores.size(); ++t) {
      templates.push_back(core::after_fields_of(templates.back(), request.tiers[t].audit.key_template));
    }
    m_templates = templates;
    m_effects_template = core::after_fields_of(templates.back(), request.effects_template);
    core::IdentifyOptions identify = request.identify;
    identify.extra = m_effects_template.fields();
    for (auto& slot : m_slots) {
      slot.identifier = std::make_unique<core::Identifier>(identify);
      slot.lookups.resize(m_stores.size());
    }
    m_records.resize(m_stores.size());
    m_keys.resize(m_stores.size());
  }
  // A failure may leave a lookup running: it is waited for before the slots go.
  ~AuditReader() {
    for (auto& slot : m_slots) {
      if (slot.lookup.valid()) {
        slot.lookup.wait();
      }
    }
  }
  AuditReader(const AuditReader&) = delete;
  AuditReader& operator=(const AuditReader&) = delete;

  // Reads the whole source; throws what the source or a store threw.
  void read(core::EventSource& source) {
    std::size_t current = 0;
    while (next_batch(source, m_slots[current].batch)) {
      Slot& slot = m_slots[current];
      prepare(slot);
      Slot& previous = m_slots[1 - current];
      if (previous.lookup.valid()) {
        observe(previous);
      }
      slot.lookup = m_worker.submit([this, &slot] {
        StageTimer timer(stage(&AuditStageTimes::lookup));
        ThreadCpuTimer cpu(stage(&AuditStageTimes::lookup_cpu));
        for (std::size_t t = 0; t < m_stores.size(); ++t) {
          m_stores[t]->lookup(slot.lookups[t].keys, slot.lookups[t].states);
        }
        if (m_request.effects) {
          m_request.effects->lookup(slot.effect_keys, slot.effects);
        }
      });
      current = 1 - current;
    }
    Slot& last = m_slots[1 - current];
    if (last.lookup.valid()) {
      observe(last);
    }
  }

private:
  // One store's keys for a batch: per event its index into keys (SIZE_MAX without id), and each
  // key's record.
  struct Lookup {
    std::vector<std::string> keys;
    std::vector<std::size_t> key_of;
    std::vector<core::RecordState> states;
  };
  struct Slot {
    core::EventBatch batch;
    std::unique_ptr<core::Identifier> identifier;
    std::vector<core::Identity> identities;
    std::vector<Lookup> lookups; // one a store
    // --effects: the keys their effects are looked up by, per event its index (SIZE_MAX: no id),
    // and whether each exists.
    std::vector<std::string> effect_keys;
    std::vector<std::size_t> effect_key_of;
    std::vector<std::uint8_t> effects;
    std::future<void> lookup;
  };

  double* stage(double AuditStageTimes::*member) const {
    return m_request.times ? &(m_request.times->*member) : nullptr;
  }

  bool next_batch(core::EventSource& source, core::EventBatch& batch) {
    StageTimer timer(stage(&AuditStageTimes::read));
    return source.next_batch(batch);
  }

  // Identifies the batch, feeds the log analyzer and renders each event's dedup keys.
  void prepare(Slot& slot) {
    {
      StageTimer timer(stage(&AuditStageTimes::identify));
      slot.identifier->identify(slot.batch, slot.identities);
      m_log.observe(slot.batch.events, slot.identities);
    }
    StageTimer timer(stage(&AuditStageTimes::render));
    // The key strings of the slot's previous batch are rendered over: no allocation a key.
    for (std::size_t t = 0; t < m_stores.size(); ++t) {
      core::render_batch_keys(m_templates[t], slot.batch, slot.identities, m_request.consumer, slot.lookups[t].keys,
                              slot.lookups[t].key_of);
    }
    if (m_request.effects) {
      core::render_batch_keys(m_effects_template, slot.batch, slot.identities, m_request.consumer, slot.effect_keys,
                              slot.effect_key_of);
    }
  }

  // The window's fingerprints of the batch's keys (its tier's).
  void key_hashes(const Lookup& lookup) {
    m_key_hashes.resize(lookup.keys.size());
    for (std::size_t k = 0; k < lookup.keys.size(); ++k) {
      m_key_hashes[k] = core::hash64(lookup.keys[k]);
    }
  }

  // Each tier's record of event i to its own analyzer, and the best of them to the chain's.
  const core::RecordState& chain_record(const Slot& slot, std::size_t i) {
    static const core::RecordState k_no_record{};
    const core::Event& event = slot.batch.events[i];
    for (std::size_t t = 0; t < m_stores.size(); ++t) {
      const Lookup& lookup = slot.lookups[t];
      bool has_key = lookup.key_of[i] != SIZE_MAX;
      m_keys[t] = has_key ? std::string_view(lookup.keys[lookup.key_of[i]]) : std::string_view{};
      m_records[t] = has_key ? &lookup.states[lookup.key_of[i]] : &k_no_record;
      m_chain->tiers[t].observe(event, slot.identities[i], m_keys[t], *m_records[t]);
    }
    return m_chain->chain.best(event, slot.identities[i], m_keys, m_records, m_chain->committed_of(event));
  }

  // Classifies the batch once its lookups are back (rethrowing what a lookup threw).
  void observe(Slot& slot) {
    static const core::RecordState k_no_record{};
    {
      StageTimer timer(stage(&AuditStageTimes::lookup_wait));
      slot.lookup.get();
    }
    StageTimer timer(stage(&AuditStageTimes::classify));
    const Lookup& own = slot.lookups[m_chain ? m_chain->example_tier : 0];
    const Lookup& windowed = slot.lookups[m_request.window_tier];
    if (m_window) {
      key_hashes(windowed);
    }
    if (m_guard) {
      project(slot, own);
      return;
    }
    for (std::size_t i = 0; i < slot.batch.events.size(); ++i) {
      bool has_key = own.key_of[i] != SIZE_MAX;
      std::string_view key = has_key ? std::string_view(own.keys[own.key_of[i]]) : std::string_view{};
      if (m_window_store) { // decided once the changelog is folded
        m_window_store->observe(slot.batch.events[i], slot.identities[i], key);
        continue;
      }
      const core::RecordState& state = m_chain   ? chain_record(slot, i)
                                       : has_key ? own.states[own.key_of[i]]
                                                 : k_no_record;
      m_audit.observe(slot.batch.events[i], slot.identities[i], key, state,
                      m_request.effects ? core::effect_at(slot.effect_key_of, slot.effects, i)
                                        : core::Effect::Unchecked);
      if (m_request.digest) {
        m_request.digest->observe(slot.batch.events[i], slot.identities[i], key, &state);
      }
      if (m_window && windowed.key_of[i] != SIZE_MAX) {
        if (std::size_t ahead = i + k_window_prefetch;
            ahead < slot.batch.events.size() && windowed.key_of[ahead] != SIZE_MAX) {
          m_window->prefetch(slot.batch.events[ahead], m_key_hashes[windowed.key_of[ahead]]);
        }
        m_window->observe(slot.batch.events[i], slot.identities[i], windowed.keys[windowed.key_of[i]],
                          m_key_hashes[windowed.key_of[i]]);
      }
    }
    if (m_request.progress) {
      m_request.progress(m_events += static_cast<std::int64_t>(slot.batch.events.size()));
    }
  }

  // A version guard's batch: each entity's version in the projection, for the walk at the end.
  void project(const Slot& slot, const Lookup& own) {
    for (std::size_t i = 0; i < slot.batch.events.size(); ++i) {
      const core::Identity& identity = slot.identities[i];
      if (own.key_of[i] == SIZE_MAX || !identity.has_entity) {
        continue;
      }
      const core::RecordState& state = own.states[own.key_of[i]];
      m_guard->set_projection(identity.entity, state.kind == core::RecordState::Kind::Present
                                                   ? std::optional<std::string_view>(state.value)
                                                   : std::nullopt);
    }
    if (m_request.progress) {
      m_request.progress(m_events += static_cast<std::int64_t>(slot.batch.events.size()));
    }
  }

  const AuditRequest& m_request;
  std::vector<core::DedupStore*> m_stores;
  std::vector<core::KeyTemplate> m_templates; // a store's each, rendered from the same extra values
  core::LogAnalyzer& m_log;
  core::AuditAnalyzer& m_audit;
  core::VersionAnalyzer* m_guard;                     // --layout version-guard: the walk decides
  core::WindowAnalyzer* m_window;                     // memory: with a window layout
  ChainObservers* m_chain;                            // a chain of tiers
  core::WindowStoreReplay* m_window_store;            // a Kafka Streams store: its events kept for the fold
  static constexpr std::size_t k_window_prefetch = 8; // events ahead
  std::vector<std::uint64_t> m_key_hashes;
  std::vector<std::string_view> m_keys;            // a chain's: event i's key in each tier
  std::vector<const core::RecordState*> m_records; // and its record there
  core::KeyTemplate m_effects_template;            // the effects' keys, rendered after every store's fields
  std::array<Slot, 2> m_slots;
  std::int64_t m_events = 0;
  // One thread for every batch's lookup, not one a batch; declared after the slots, so it is
  // joined before they go.
  SerialWorker m_worker{true};
};

// A version guard's verdicts, walked over the whole range, handed to the audit in read order: which
// events lie in the replay window decides which of them a replay applies.
void feed_guard(const AuditRequest& request, const core::KeyTemplate& key_template, core::VersionAnalyzer& versions,
                core::AuditAnalyzer& audit, const std::vector<core::PartitionWindow>& windows) {
  std::vector<std::uint8_t> in_window(versions.kept(), 0);
  std::map<std::pair<std::string, std::int32_t>, std::optional<core::WindowBounds>> bounds;
  for (const auto& w : windows) {
    bounds[{w.topic, w.partition}] = w.window;
  }
  for (std::size_t i = 0; i < in_window.size(); ++i) {
    core::GuardEvent e = versions.guard_event(i);
    auto it = bounds.find({std::string(e.topic), e.partition});
    if (it == bounds.end()) { // a file's partition: its window is everything read
      it = bounds
               .emplace(std::pair(std::string(e.topic), e.partition),
                        core::WindowBounds{0, core::k_offset_max, std::nullopt})
               .first;
    }
    bool found = false;
    in_window[i] = it->second && core::enter_window(*it->second, e.offset, e.timestamp_ms, found) ? 1 : 0;
  }
  versions.decide_guard(in_window);
  std::string key;
  for (std::size_t i = 0; i < in_window.size(); ++i) {
    core::GuardEvent e = versions.guard_event(i);
    if (request.guard_verdicts) {
      request.guard_verdicts(e);
    }
    core::Event event = core::event_at(e.topic, e.partition, e.offset, e.timestamp_ms, e.seq);
    core::Identity identity;
    identity.has_id = e.has_id;
    identity.id = e.id;
    identity.type = e.type;
    identity.entity = e.entity;
    identity.has_entity = !e.entity.empty();
    identity.version = e.version;
    key.clear();
    if (identity.has_id) {
      core::render_event_key(key_template, event, identity, request.consumer, key);
    }
    std::string projection = e.projection ? fmt::format("the projection's {}", *e.projection) : "no row";
    // What the guard compares: the event's version, or (a state guard) its type against the state.
    std::string subject = versions.states() ? fmt::format("entity {} {}", e.entity, e.type)
                                            : fmt::format("entity {} version {}", e.entity, e.version);
    core::Coverage state = core::Coverage::Missing;
    std::string note;
    switch (e.state) {
    case core::GuardState::NoId:
      state = core::Coverage::NoId;
      break;
    case core::GuardState::Unchecked:
      note = e.entity.empty()    ? (versions.states() ? "no --entity, or a type the transitions do not name: the guard "
                                                        "was not checked"
                                                      : "no --entity or no --version: the guard was not checked")
             : versions.states() ? fmt::format("{}, {}: a state the transitions do not name", subject, projection)
             : e.version.empty() ? "no --entity or no --version: the guard was not checked"
                                 : fmt::format("{}, {}: not comparable", subject, projection);
      break;
    case core::GuardState::Covered:
      state = core::Coverage::Covered;
      break;
    case core::GuardState::Missing:
    case core::GuardState::Superseded:
      note = fmt::format("{}, {}{}", subject, projection,
                         e.state == core::GuardState::Superseded ? ", a higher version follows" : "");
      break;
    }
    audit.observe_guarded(event, identity, key, state, e.state == core::GuardState::Superseded, e.applied, note);
  }
}

// The findings a tier decides alone, whatever the other tiers hold: its keys, and a Bloom filter's
// drops (a consumer that asks it first skips the event before any later tier is asked).
bool tier_own_finding(std::string_view id) {
  return id == "key-collision" || id == "key-template-lacks-event-id" || id == "key-template-uses-offset" ||
         id == "bloom-false-positive";
}

// A chain's tiers (request.tiers), each audited alone beside the chain: summary.tiers, the findings a
// tier decides alone, and the chain's TTL.
class TierAudits {
public:
  TierAudits(const AuditRequest& request, const core::SourceInfo& info, std::int64_t now_ms,
             const std::vector<core::PartitionWindow>& windows) {
    std::vector<core::Tier> tiers;
    std::optional<std::size_t> durable;
    for (std::size_t t = 0; t < request.tiers.size(); ++t) {
      core::AuditOptions options = audit_options_for(request.tiers[t].audit, request, info, now_ms);
      auto& analyzer = m_analyzers.emplace_back(options);
      for (const auto& w : windows) {
        analyzer.set_partition(w.topic, w.partition, w.committed, w.window);
      }
      core::Tier tier = request.tiers[t].tier;
      tier.policy = options.policy;
      tier.policy.ttl = options.ttl.span;
      if (!durable && tier.survives_restart) {
        durable = t;
      }
      tiers.push_back(std::move(tier));
    }
    m_tiers = tiers;
    m_chain.emplace(std::move(tiers), request.max_examples);
    m_observers.emplace(ChainObservers{m_analyzers, *m_chain, windows, durable.value_or(0)});
  }

  ChainObservers* observers() { return &*m_observers; }

  // Each tier's counts into report.tiers and the findings it decides alone into `findings`, with the
  // chain's own; then the chain's TTL, settled from the tiers', into `audit`.
  void finish(const AuditRequest& request, core::AuditAnalyzer& audit, reports::Report& report,
              std::vector<core::Finding>& findings) {
    std::vector<core::TtlDecision> ttls;
    for (std::size_t t = 0; t < m_analyzers.size(); ++t) {
      core::AuditResult result = m_analyzers[t].finish();
      ttls.push_back(result.ttl);
      reports::TierReport tier;
      tier.placement = request.tiers[t].placement;
      tier.placement.ttl = result.ttl;
      tier.placement.key_template = request.tiers[t].audit.key_template.text();
      tier.placement.consumer = request.consumer;
      tier.survives_restart = m_tiers[t].survives_restart;
      tier.counts = state_counts(result);
      tier.held_by_others = m_chain->held_by_others()[t];
      tier.key_collisions = result.key_collisions;
      report.tiers.push_back(std::move(tier));
      for (auto& finding : result.findings) {
        if (tier_own_finding(finding.id)) {
          finding.title = fmt::format("{}: {}", m_tiers[t].name, finding.title);
          findings.push_back(std::move(finding));
        }
      }
    }
    audit.settle_ttl(core::TierChain::chain_ttl(ttls, m_tiers));
    auto gaps = m_chain->findings();
    findings.insert(findings.end(), gaps.begin(), gaps.end());
  }

private:
  std::deque<core::AuditAnalyzer> m_analyzers; // stable: the observers hold them
  std::vector<core::Tier> m_tiers;
  std::optional<core::TierChain> m_chain;
  std::optional<ChainObservers> m_observers;
};

// The window's simulation once every event was observed: its summary, and its findings into
// `findings`. In a chain, what the window lets through is asked of the tiers after it: info.
core::WindowSummary window_findings(const AuditRequest& request, core::WindowAnalyzer& window,
                                    std::vector<core::Finding>& findings) {
  core::WindowResult simulated = window.finish();
  for (auto& finding : simulated.findings) {
    if (finding.id == "window-miss" && request.window_tier + 1 < request.tiers.size()) {
      finding.severity = core::Severity::Info;
      finding.advice = "The tiers after the window are asked next: their own counts (summary.tiers) say what they "
                       "hold. " +
                       finding.advice;
    }
    findings.push_back(std::move(finding));
  }
  return simulated.summary;
}

// Each partition's replay window ([from, to), or [seek, committed) with --seek), announced to the audit.
std::vector<core::PartitionWindow> announce_windows(const AuditRequest& request, const core::SourceInfo& info,
                                                    core::AuditAnalyzer& audit) {
  std::vector<core::PartitionWindow> windows;
  for (const auto& range : info.partitions) {
    core::WindowBounds window{range.from, range.to, std::nullopt};
    if (request.has_seek && range.seek) {
      window = core::WindowBounds{*range.seek, range.committed.value_or(range.to), range.seek_timestamp};
    }
    windows.push_back({range.topic, range.partition, range.committed, window});
    audit.set_partition(range.topic, range.partition, range.committed, window);
  }
  return windows;
}

// A Kafka Streams store's replay over the announced windows, when the placement is one.
std::optional<core::WindowStoreReplay> window_store_replay(const AuditRequest& request,
                                                           const std::vector<core::PartitionWindow>& windows,
                                                           std::size_t expected) {
  std::optional<core::WindowStoreReplay> replay;
  if (request.window_store) {
    replay.emplace(*request.window_store);
    replay->reserve(expected);
    for (const auto& w : windows) {
      replay->set_partition(w.topic, w.partition, w.committed, w.window);
    }
  }
  return replay;
}

// A Kafka Streams store's verdicts once the log is read: the changelog's fold waited for, then the
// processor over it; a fold that failed makes the report incomplete.
void decide_window_store(const AuditRequest& request, core::WindowStoreReplay& replay, core::AuditAnalyzer& audit,
                         reports::Report& report) {
  incomplete_on_failure(report, [&] {
    core::WindowStoreChangelog* fold = nullptr;
    {
      StageTimer timer(request.times ? &request.times->fold_wait : nullptr);
      fold = &request.changelog();
    }
    StageTimer timer(request.times ? &request.times->replay : nullptr);
    replay.decide(*fold, audit);
  });
}

} // namespace

std::vector<std::pair<std::string, std::int64_t>> state_counts(const core::AuditResult& result) {
  auto n = [&](core::Coverage state) { return result.states[static_cast<std::size_t>(state)]; };
  return {{"covered", n(core::Coverage::Covered)},   {"expiring", n(core::Coverage::Expiring)},
          {"expired", n(core::Coverage::Expired)},   {"missing", n(core::Coverage::Missing)},
          {"pending", n(core::Coverage::Pending)},   {"in_progress", n(core::Coverage::InProgress)},
          {"orphaned", n(core::Coverage::Orphaned)}, {"no_expiry", result.no_expiry}};
}

reports::Report run_audit(const AuditRequest& request, core::EventSource& source, core::DedupStore& store,
                          core::SourceInfo info, std::int64_t now_ms) {
  reports::Report report = start_report("audit", now_ms, request.fail_on_text);

  core::LogAnalyzerOptions log_options = request.analyzer;
  log_options.max_examples = request.max_examples;
  log_options.keep_every_event = request.audit.version_guard;
  log_options.id_specs = core::to_string(request.identify.id);
  if (auto expected = expected_events(info)) {
    log_options.expected_events = expected;
  }
  core::AuditOptions audit_options = audit_options_for(request.audit, request, info, now_ms);
  core::LogAnalyzer log(log_options);
  core::AuditAnalyzer audit(audit_options);
  if (request.digest) {
    request.digest->set_check_keys(audit_options.key_template.event_id_injectivity());
  }
  std::vector<core::PartitionWindow> windows = announce_windows(request, info, audit);
  std::optional<core::WindowStoreReplay> window_store =
      window_store_replay(request, windows, audit_options.expected_events);
  std::optional<core::WindowAnalyzer> window;
  if (audit_options.window.kind != core::WindowKind::None) {
    window.emplace(audit_options.window, request.max_examples, audit_options.side_effects);
  }
  std::optional<TierAudits> tiers;
  std::vector<core::DedupStore*> stores{&store};
  if (request.tiers.size() > 1) {
    tiers.emplace(request, info, now_ms, windows);
    stores.clear();
    for (const auto& tier : request.tiers) {
      stores.push_back(tier.store);
    }
  }
  {
    AuditReader reader(request, audit_options, stores, log, audit, window ? &*window : nullptr,
                       tiers ? tiers->observers() : nullptr, window_store ? &*window_store : nullptr);
    incomplete_on_failure(report, [&] { reader.read(source); });
  }
  if (window_store) { // what was read, over the changelog's fold (its read's failure makes the report incomplete)
    decide_window_store(request, *window_store, audit, report);
  }
  if (audit_options.version_guard && log.versions()) {
    feed_guard(request, audit_options.key_template, *log.versions(), audit, windows);
  }
  std::vector<core::Finding> placement_findings = request.placement_findings;
  for (auto& finding : log.version_findings()) { // the tally a shard writes down carries none (refused)
    placement_findings.push_back(std::move(finding));
  }
  if (window) {
    report.window = window_findings(request, *window, placement_findings);
  }
  if (tiers) {
    tiers->finish(request, audit, report, placement_findings);
  }

  reports::PlacementInfo placement = request.placement;
  placement.key_template = (tiers ? request.tiers.front().audit : audit_options).key_template.text();
  placement.consumer = request.consumer;
  report.settings = {{"id", core::to_string(request.identify.id)},
                     {"max lag", core::format_duration(audit_options.policy.max_lag_ms)},
                     {"lease", core::format_duration(audit_options.policy.lease_ms)},
                     {"now", core::format_time(now_ms)},
                     {"fail on", request.fail_on_text}};
  add_version_settings(report, request.identify, log_options);
  report.settings.insert(report.settings.end(), request.store_settings.begin(), request.store_settings.end());
  if (request.digest) {
    request.digest->log = log.tally();
    request.digest->log_options = log_options;
    const auto& o = audit_options;
    std::string side_effects;
    for (const auto& [type, effect] : o.side_effects) {
      side_effects += fmt::format("{}={},", type, core::to_string(effect));
    }
    std::string in_progress;
    for (const auto& value : o.policy.in_progress_values) {
      in_progress += value + ",";
    }
    request.digest->settings = {{"type", core::to_string(request.identify.type)},
                                {"entity", core::to_string(request.identify.entity)},
                                {"semantic key", core::to_string(request.identify.semantic)},
                                {"semantic window", core::format_duration(log_options.semantic_window_ms)},
                                {"key template", o.key_template.text()},
                                {"consumer", request.consumer},
                                {"store", placement.store},
                                {"ttl", core::to_text(o.ttl.span)},
                                {"ttl source", std::string(core::report_name(o.ttl.source))},
                                {"retention", core::to_text(o.policy.retention)},
                                {"compacted", o.policy.compacted ? "yes" : "no"},
                                {"side effects", side_effects},
                                {"in progress values", in_progress},
                                {"window", o.window_label}};
    request.digest->audit =
        core::AuditDigest{audit_options,   request.has_seek, std::move(windows),  placement.kind,
                          placement.store, request.consumer, placement.retention, request.placement_findings};
  }
  finish_audit_report(report, std::move(info), audit, log.tally(), log_options, std::move(placement),
                      placement_findings, request.max_examples, request.fail_on, source.positions());
  return report;
}

void finish_audit_report(reports::Report& report, core::SourceInfo info, core::AuditAnalyzer& audit,
                         const core::LogTally& log, const core::LogAnalyzerOptions& log_options,
                         reports::PlacementInfo placement, const std::vector<core::Finding>& placement_findings,
                         std::size_t max_examples, const core::FailOn& fail_on,
                         const std::vector<core::PartitionPosition>& positions) {
  core::AuditResult result = audit.finish();
  for (auto& range : info.partitions) { // a seek by time, found while reading
    for (const auto& coverage : result.partitions) {
      if (range.seek_timestamp && coverage.topic == range.topic && coverage.partition == range.partition) {
        // No event at or after it: the end (a dump's, once it is finalized).
        range.seek = coverage.seek_found.value_or(info.kind == core::SourceKind::File ? core::k_offset_max : range.to);
      }
    }
  }
  const auto& c = log.counters;
  report.summary = {{"events", c.events}, {"no_id", result.states[static_cast<std::size_t>(core::Coverage::NoId)]}};
  for (auto& count : state_counts(result)) {
    report.summary.push_back(std::move(count));
  }
  if (result.ttl.source == core::TtlSource::Projection) { // a version guard's: a part of missing
    report.summary.emplace_back("superseded", result.superseded);
  }
  std::int64_t key_collisions = result.key_collisions;
  for (const auto& tier : report.tiers) { // a chain's: each tier's keys
    key_collisions += tier.key_collisions;
  }
  report.summary.insert(report.summary.end(), {{"log_duplicates", c.log_duplicates},
                                               {"id_reuse", c.id_reuse},
                                               {"key_collisions", key_collisions},
                                               {"semantic_duplicates", c.semantic_duplicates}});
  placement.ttl = result.ttl;
  report.placement = std::move(placement);
  report.effects = result.effects;
  report.replay = result.replay;
  report.coverage = result.partitions;
  for (const auto& finding : placement_findings) {
    result.findings.push_back(finding);
  }
  if (!report.complete) {
    // What a seek would re-apply is a count over the whole window: over part of it, it is no answer
    // (the renderers leave out the counts and safe_from alike).
    std::erase_if(result.findings, [](const core::Finding& f) { return f.id == "replay-risk"; });
  }
  finish_report(report, std::move(info), core::log_findings(log, log_options), std::move(result.findings), max_examples,
                fail_on, positions);
}

} // namespace dedupctl::commands
