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
#include <future>
#include <memory>

namespace dedupctl::commands {

std::string AuditStageTimes::describe() const {
  return fmt::format("read {:.2f} s, identify {:.2f} s, render keys {:.2f} s, wait for lookups {:.2f} s, classify "
                     "{:.2f} s; lookups {:.2f} s on their own thread",
                     read, identify, render, lookup_wait, classify, lookup);
}

namespace {

// The analyzers' options for this run: its time, window label and expected size.
core::AuditOptions audit_options_for(const AuditRequest& request, const core::SourceInfo& info, std::int64_t now_ms) {
  core::AuditOptions options = request.audit;
  options.policy.now_ms = now_ms;
  options.max_examples = request.max_examples;
  // A file source's partitions are not known up front: its window is everything read.
  options.default_window = info.partitions.empty();
  options.window_label = request.has_seek ? "[seek, committed)" : "[from, to)";
  if (auto expected = expected_events(info)) {
    options.expected_events = expected;
  }
  return options;
}

// Lookups overlap consumption: while the store looks batch N up on the worker thread, the main thread
// reads and identifies batch N+1. Each of the two slots owns its batch, identities (and the
// identifier whose arena they live in), keys and states; events are observed in order, and the
// store is used by one thread at a time.
class AuditReader {
public:
  AuditReader(const AuditRequest& request, const core::AuditOptions& options, core::DedupStore& store,
              core::LogAnalyzer& log, core::AuditAnalyzer& audit, core::WindowAnalyzer* window)
      : m_request(request), m_options(options), m_store(store), m_log(log), m_audit(audit), m_window(window),
        m_effects_template(core::after_fields_of(options.key_template, request.effects_template)) {
    core::IdentifyOptions identify = request.identify;
    identify.extra = core::joint_fields(options.key_template, request.effects_template);
    for (auto& slot : m_slots) {
      slot.identifier = std::make_unique<core::Identifier>(identify);
    }
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

  // Reads the whole source; throws what the source or the store threw.
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
        m_store.lookup(slot.keys, slot.states);
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
  struct Slot {
    core::EventBatch batch;
    std::unique_ptr<core::Identifier> identifier;
    std::vector<core::Identity> identities;
    std::vector<std::string> keys;
    std::vector<std::size_t> key_of; // per event: index into keys, or SIZE_MAX without id
    std::vector<core::RecordState> states;
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

  // Identifies the batch, feeds the log analyzer and renders each event's dedup key.
  void prepare(Slot& slot) {
    {
      StageTimer timer(stage(&AuditStageTimes::identify));
      slot.identifier->identify(slot.batch, slot.identities);
      m_log.observe(slot.batch.events, slot.identities);
    }
    StageTimer timer(stage(&AuditStageTimes::render));
    // The key strings of the slot's previous batch are rendered over: no allocation a key.
    core::render_batch_keys(m_options.key_template, slot.batch, slot.identities, m_request.consumer, slot.keys,
                            slot.key_of);
    if (m_request.effects) {
      core::render_batch_keys(m_effects_template, slot.batch, slot.identities, m_request.consumer, slot.effect_keys,
                              slot.effect_key_of);
    }
  }

  // The window's fingerprints of the batch's keys.
  void key_hashes(const Slot& slot) {
    m_key_hashes.resize(slot.keys.size());
    for (std::size_t k = 0; k < slot.keys.size(); ++k) {
      m_key_hashes[k] = core::hash64(slot.keys[k]);
    }
  }

  // Classifies the batch once its lookup is back (rethrowing what the lookup threw).
  void observe(Slot& slot) {
    static const core::RecordState k_no_record{};
    {
      StageTimer timer(stage(&AuditStageTimes::lookup_wait));
      slot.lookup.get();
    }
    StageTimer timer(stage(&AuditStageTimes::classify));
    if (m_window) {
      key_hashes(slot);
    }
    for (std::size_t i = 0; i < slot.batch.events.size(); ++i) {
      bool has_key = slot.key_of[i] != SIZE_MAX;
      std::string_view key = has_key ? std::string_view(slot.keys[slot.key_of[i]]) : std::string_view{};
      const core::RecordState& state = has_key ? slot.states[slot.key_of[i]] : k_no_record;
      m_audit.observe(slot.batch.events[i], slot.identities[i], key, state,
                      m_request.effects ? core::effect_at(slot.effect_key_of, slot.effects, i)
                                        : core::Effect::Unchecked);
      if (m_request.digest) {
        m_request.digest->observe(slot.batch.events[i], slot.identities[i], key, &state);
      }
      if (m_window && has_key) {
        if (std::size_t ahead = i + k_window_prefetch;
            ahead < slot.batch.events.size() && slot.key_of[ahead] != SIZE_MAX) {
          m_window->prefetch(slot.batch.events[ahead], m_key_hashes[slot.key_of[ahead]]);
        }
        m_window->observe(slot.batch.events[i], slot.identities[i], key, m_key_hashes[slot.key_of[i]]);
      }
    }
    if (m_request.progress) {
      m_request.progress(m_events += static_cast<std::int64_t>(slot.batch.events.size()));
    }
  }

  const AuditRequest& m_request;
  const core::AuditOptions& m_options;
  core::DedupStore& m_store;
  core::LogAnalyzer& m_log;
  core::AuditAnalyzer& m_audit;
  core::WindowAnalyzer* m_window;                     // memory: with a window layout
  static constexpr std::size_t k_window_prefetch = 8; // events ahead
  std::vector<std::uint64_t> m_key_hashes;
  core::KeyTemplate m_effects_template; // the effects' keys, rendered from the same extra values as the records'
  std::array<Slot, 2> m_slots;
  std::int64_t m_events = 0;
  // One thread for every batch's lookup, not one a batch; declared after the slots, so it is
  // joined before they go.
  SerialWorker m_worker{true};
};

} // namespace

reports::Report run_audit(const AuditRequest& request, core::EventSource& source, core::DedupStore& store,
                          core::SourceInfo info, std::int64_t now_ms) {
  reports::Report report = start_report("audit", now_ms, request.fail_on_text);

  core::LogAnalyzerOptions log_options = request.analyzer;
  log_options.max_examples = request.max_examples;
  log_options.id_specs = core::to_string(request.identify.id);
  if (auto expected = expected_events(info)) {
    log_options.expected_events = expected;
  }
  core::AuditOptions audit_options = audit_options_for(request, info, now_ms);
  core::LogAnalyzer log(log_options);
  core::AuditAnalyzer audit(audit_options);
  if (request.digest) {
    request.digest->set_check_keys(audit_options.key_template.event_id_injectivity());
  }
  std::vector<core::PartitionWindow> windows;
  for (const auto& range : info.partitions) {
    core::WindowBounds window{range.from, range.to, std::nullopt};
    if (request.has_seek && range.seek) {
      window = core::WindowBounds{*range.seek, range.committed.value_or(range.to), range.seek_timestamp};
    }
    windows.push_back({range.topic, range.partition, range.committed, window});
    audit.set_partition(range.topic, range.partition, range.committed, window);
  }
  std::optional<core::WindowAnalyzer> window;
  if (audit_options.window.kind != core::WindowKind::None) {
    window.emplace(audit_options.window, request.max_examples, audit_options.side_effects);
  }
  {
    AuditReader reader(request, audit_options, store, log, audit, window ? &*window : nullptr);
    incomplete_on_failure(report, [&] { reader.read(source); });
  }
  std::vector<core::Finding> placement_findings = request.placement_findings;
  if (window) {
    core::WindowResult simulated = window->finish();
    report.window = simulated.summary;
    placement_findings.insert(placement_findings.end(), simulated.findings.begin(), simulated.findings.end());
  }

  reports::PlacementInfo placement = request.placement;
  placement.key_template = audit_options.key_template.text();
  placement.consumer = request.consumer;
  report.settings = {{"id", core::to_string(request.identify.id)},
                     {"max lag", core::format_duration(audit_options.policy.max_lag_ms)},
                     {"lease", core::format_duration(audit_options.policy.lease_ms)},
                     {"now", core::format_time(now_ms)},
                     {"fail on", request.fail_on_text}};
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
  auto n = [&](core::Coverage state) { return result.states[static_cast<std::size_t>(state)]; };
  report.summary = {{"events", c.events},
                    {"no_id", n(core::Coverage::NoId)},
                    {"covered", n(core::Coverage::Covered)},
                    {"expiring", n(core::Coverage::Expiring)},
                    {"expired", n(core::Coverage::Expired)},
                    {"missing", n(core::Coverage::Missing)},
                    {"pending", n(core::Coverage::Pending)},
                    {"in_progress", n(core::Coverage::InProgress)},
                    {"orphaned", n(core::Coverage::Orphaned)},
                    {"no_expiry", result.no_expiry},
                    {"log_duplicates", c.log_duplicates},
                    {"id_reuse", c.id_reuse},
                    {"key_collisions", result.key_collisions},
                    {"semantic_duplicates", c.semantic_duplicates}};
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
