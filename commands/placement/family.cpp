#include "commands/placement/family.hpp"

#include "connectors/file/output.hpp"
#include "core/store/layout_home.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace dedupctl::commands {

using placement::require;
using placement::StoreUse;

namespace {

// A member a row's use has, and none it lacks: the row is what every message and the unit table read.
StoreFamily checked(StoreFamily family) {
  const auto& row = *family.row;
  auto agree = [&](StoreUse use, bool member) {
    if (row.supports(use) != member) {
      throw std::logic_error(fmt::format("store family {}: its row and its members disagree on {}",
                                         core::store_kind_name(row.kind), placement::use_name(use)));
    }
  };
  agree(StoreUse::Read, family.open_store != nullptr);
  agree(StoreUse::Via, family.open_via != nullptr);
  agree(StoreUse::Release, family.open_release != nullptr);
  agree(StoreUse::Effects, family.open_effects != nullptr && family.parse_effects != nullptr);
  agree(StoreUse::Discover, family.discover != nullptr);
  agree(StoreUse::Inspect, family.inspect != nullptr);
  agree(StoreUse::Snapshot, family.snapshot != nullptr);
  return family;
}

} // namespace

const StoreFamily& family(core::StoreUri::Kind kind) {
  static const StoreFamily redis = checked(redis_family());
  static const StoreFamily postgres = checked(postgres_family());
  static const StoreFamily dynamodb = checked(dynamodb_family());
  static const StoreFamily file = checked(file_family());
  static const StoreFamily memory = checked(memory_family());
  static const StoreFamily kstreams = checked(kstreams_family());
  switch (kind) {
  case core::StoreUri::Kind::Redis:
    return redis;
  case core::StoreUri::Kind::Postgres:
    return postgres;
  case core::StoreUri::Kind::Dynamodb:
    return dynamodb;
  case core::StoreUri::Kind::File:
    return file;
  case core::StoreUri::Kind::Memory:
    return memory;
  case core::StoreUri::Kind::Kstreams:
    return kstreams;
  }
  throw std::logic_error("a store kind without a family");
}

int write_snapshot(const std::string& header, const std::vector<std::string>& lines, const std::string& said,
                   Context& context) {
  connectors::file::ReportOutput output(context.global.output);
  fmt::print(output.stream(), "{}\n", header);
  for (const auto& line : lines) {
    fmt::print(output.stream(), "{}\n", line);
  }
  output.commit();
  context.note(said + (context.global.output.empty() ? "" : " written to " + context.global.output));
  return k_exit_ok;
}

void StoreFamily::check(const PlacementOptions& options) const {
  if (check_options) {
    check_options(options);
  }
}

void StoreFamily::check(const core::StoreUri& uri, const InboxFlags& inbox) const {
  PlacementOptions store;
  store.uri = uri;
  store.given = true;
  store.inbox = inbox;
  check(store);
}

void StoreFamily::accept(core::RecordLayout& layout) const {
  core::check_layout_home(layout, row->kind);
  if (fit_layout) {
    fit_layout(layout);
  }
}

void StoreFamily::check_placed(const PlacementOptions& options) const {
  if (check_layout) {
    check_layout(options);
  }
}

void StoreFamily::check_records(const PlacementOptions& options, bool writes) const {
  if (check_writes) {
    check_writes(options, writes);
  }
}

OpenedStore StoreFamily::read(const PlacementOptions& options, Context& context,
                              std::optional<std::int64_t> expected_events) const {
  require(options.uri, StoreUse::Read);
  OpenedStore out;
  try {
    out = open_store(options, context, expected_events);
  } catch (const UnreachableError& e) {
    out.failure = e.what();
  }
  return out;
}

std::unique_ptr<core::ReplayPlacement> StoreFamily::via(const PlacementOptions& options, const ViaOptions& via,
                                                        Context& context) const {
  require(options.uri, StoreUse::Via);
  return open_via(options, via, context);
}

std::unique_ptr<core::RecordRelease> StoreFamily::release(const PlacementOptions& options, Context& context) const {
  require(options.uri, StoreUse::Release);
  return open_release(options, context);
}

void StoreFamily::effects_options(const core::StoreUri& uri, const EffectsFlags& flags, EffectsOptions& out) const {
  require(uri, StoreUse::Effects);
  parse_effects(flags, out);
}

std::unique_ptr<core::EffectStore> StoreFamily::effects(const EffectsOptions& options, Context& context,
                                                        std::optional<std::int64_t> expected_events,
                                                        bool batched) const {
  require(options.uri, StoreUse::Effects);
  return open_effects(options, context, expected_events, batched);
}

DiscoverResult StoreFamily::discover_in(const core::StoreUri& uri, const DiscoverRequest& request,
                                        core::EventSource& source, Context& context) const {
  require(uri, StoreUse::Discover);
  return discover(uri, request, source, context);
}

InspectedStore StoreFamily::inspect_live(const core::ConsumerDeclaration& consumer, const core::StoreUri& uri,
                                         const Context& context, std::int64_t timeout_ms) const {
  require(uri, StoreUse::Inspect);
  return inspect(consumer, uri, context, timeout_ms);
}

int StoreFamily::take_snapshot(const SnapshotOptions& options, Context& context) const {
  require(options.uri, StoreUse::Snapshot);
  return snapshot(options, context);
}

} // namespace dedupctl::commands
