#pragma once

#include "commands/context.hpp"
#include "commands/placement/options.hpp"
#include "commands/source.hpp"
#include "core/identity/identify.hpp"
#include "core/replay/guard.hpp"
#include "reports/report.hpp"

#include <memory>
#include <optional>
#include <string>

// replay --via a version guard (issue 63): before anything is published, the guard's walk over the
// range against the projection, as audit --layout version-guard walks it.
namespace dedupctl::commands {

struct WalkedGuard {
  std::unique_ptr<core::GuardPlacement> placement; // each event's verdict; null when `unread`
  std::optional<reports::Report> unread;           // the source or the projection failed (exit 3): a replay report
};

// The whole range (`source` without a checkpoint: what an interrupted run published raises the bar
// for the events after it) read with its entities and versions, each entity's version looked up in
// the projection, and the guard walked over it. Nothing is written.
WalkedGuard walk_version_guard(const SourceFlags& source, const core::IdentifyOptions& identify,
                               const PlacementOptions& placement, const std::string& consumer, Context& context);

} // namespace dedupctl::commands
