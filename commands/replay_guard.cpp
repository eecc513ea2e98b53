#include "commands/replay_guard.hpp"

#include "commands/delivery.hpp"
#include "commands/pipeline/audit.hpp"
#include "commands/pipeline/common.hpp"
#include "commands/placement/family.hpp"
#include "core/store/store_uri.hpp"

#include <fmt/format.h>

namespace dedupctl::commands {

namespace {

core::GuardVerdict verdict_of(const core::GuardEvent& e) {
  switch (e.state) {
  case core::GuardState::Unchecked:
    return core::GuardVerdict::Unjudged;
  case core::GuardState::NoId: // the replay finds no id either
    return core::GuardVerdict::Drops;
  case core::GuardState::Covered:
  case core::GuardState::Missing:
  case core::GuardState::Superseded:
    break;
  }
  return e.applied ? core::GuardVerdict::Applies : core::GuardVerdict::Drops;
}

reports::Report unread_report(const std::string& error, std::optional<int> exit_code, const core::SourceInfo& info,
                              Context& context) {
  reports::Report report = unreachable_report(
      "replay",
      fmt::format("the guard's walk, which decides what is published, could not read everything: {}; nothing was "
                  "published",
                  error),
      info, context);
  if (exit_code) {
    report.exit_code = *exit_code; // 130 when interrupted
  }
  return report;
}

} // namespace

WalkedGuard walk_version_guard(const SourceFlags& source, const core::IdentifyOptions& identify,
                               const PlacementOptions& placement, const std::string& consumer, Context& context) {
  AuditRequest request;
  request.identify = identify;
  request.analyzer.versions = placement.version_order;
  request.analyzer.transitions = placement.transitions;
  request.audit = placement.audit;
  request.consumer = consumer;
  request.placement = placement_info(placement);
  auto guard = std::make_unique<core::GuardPlacement>(std::string(core::store_kind_name(placement.uri.kind)),
                                                      placement.layout.projection.states);
  core::KeyTemplate key_template = core::guard_replay_key_template();
  std::string key;
  request.guard_verdicts = [&](const core::GuardEvent& e) {
    key.clear();
    core::Identity identity;
    core::render_event_key(key_template, core::event_at(e.topic, e.partition, e.offset, e.timestamp_ms, e.seq),
                           identity, consumer, key);
    guard->judge(key, verdict_of(e));
  };
  OpenedSource opened = open_source(source, context);
  std::optional<std::string> failure = opened.failure;
  OpenedStore store;
  if (!failure) {
    store =
        family(placement.uri.kind).read(placement, context, static_cast<std::int64_t>(expected_events(opened.info)));
    failure = store.failure;
  }
  if (failure) {
    return {nullptr, unread_report(*failure, std::nullopt, opened.info, context)};
  }
  context.note(fmt::format("{}: walking the range against the projection first, to publish only what it applies",
                           placement.layout.name));
  reports::Report walked = run_audit(request, *opened.source, *store.store, opened.info, context.now_ms());
  if (!walked.complete) {
    return {nullptr, unread_report(walked.error.value_or("incomplete"), walked.exit_code, opened.info, context)};
  }
  for (const auto& range : opened.info.partitions) { // what a live topic appends after it is not judged
    guard->walked(range.topic, range.partition, range.to);
  }
  return {std::move(guard), std::nullopt};
}

} // namespace dedupctl::commands
