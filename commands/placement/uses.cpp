#include "commands/placement/uses.hpp"

#include "core/util/errors.hpp"

#include <fmt/format.h>

namespace dedupctl::commands::placement {

namespace {

using Kind = core::StoreUri::Kind;

constexpr std::string_view k_release = "--repair-lost --via {}: the lost events' records are released from the "
                                       "consumer's own Redis keys or inbox table";
constexpr std::string_view k_effects = "--effects {}: effects are read from postgres://…, redis://… or kafka:TOPIC";
constexpr std::string_view k_discover = "--store {}: discover reads Redis stores (redis://, redis+cluster://, "
                                        "redis+sentinel://) and PostgreSQL databases (postgres://)";
constexpr std::string_view k_inspect = "store '{}' is not a live store: check --live asks a server";
constexpr std::string_view k_snapshot = "--store {}: snapshot reads redis://, postgres:// and dynamodb:// placements";
constexpr std::string_view k_watch_still = "--store {}: watch reads a live placement (redis://, postgres://); a "
                                           "snapshot or memory holds nothing that changes";

// In StoreUse's order: Read, Via, Release, Effects, Discover, Inspect, Snapshot, Watch.
const std::array<FamilyRow, 6> k_rows{{
    {Kind::Redis, {"", "", "", "", "", "", "", ""}, false, false, "redis nodes", WatchSystem::Redis},
    {Kind::Postgres, {"", "", "", "", "", "", "", ""}, false, true, "", WatchSystem::Postgres},
    {Kind::Dynamodb,
     {"", "", k_release, k_effects, k_discover, "", "",
      "--store {}: watch does not read DynamoDB tables yet (it serves redis:// and postgres:// placements); run "
      "dedupctl audit on the table on a schedule instead"},
     false,
     false,
     "dynamodb table",
     std::nullopt},
    {Kind::File,
     {"", "--via file: is a snapshot and cannot claim events; use the live redis:// or postgres:// store", k_release,
      k_effects, k_discover, k_inspect, k_snapshot, k_watch_still},
     true,
     false,
     "",
     std::nullopt},
    {Kind::Memory,
     {"", "", k_release, k_effects, k_discover, k_inspect, k_snapshot, k_watch_still},
     false,
     false,
     "",
     std::nullopt},
    {Kind::Kstreams,
     {"",
      "--via {0}: replay does not route through a Kafka Streams store yet; audit it (dedupctl audit --store {0} "
      "--seek …) and replay --via a store the consumer claims in",
      "--repair-lost --via {}: the application's own store records what it forwards; nothing is released from its "
      "changelog",
      k_effects, "--store {}: discover reads Redis stores and PostgreSQL databases",
      "store '{}' is read from its changelog topic: dedupctl audit and check read it",
      "--store {}: the changelog topic is the store's snapshot already: kcat or dedupctl audit read it",
      "--store {}: watch does not follow a changelog yet; run dedupctl audit on a schedule instead"},
     false,
     false,
     "",
     std::nullopt},
}};

} // namespace

std::string_view use_name(StoreUse use) {
  static constexpr std::array<std::string_view, k_store_uses> names{"read",     "via",     "release",  "effects",
                                                                    "discover", "inspect", "snapshot", "watch"};
  return names[static_cast<std::size_t>(use)];
}

const FamilyRow& family_row(core::StoreUri::Kind kind) {
  for (const auto& row : k_rows) {
    if (row.kind == kind) {
      return row;
    }
  }
  throw std::logic_error("a store kind without a row");
}

void require(const core::StoreUri& uri, StoreUse use) {
  const auto& row = family_row(uri.kind);
  if (!row.supports(use)) {
    throw UsageError(fmt::format(fmt::runtime(row.refusals[static_cast<std::size_t>(use)]), uri.redacted()));
  }
}

} // namespace dedupctl::commands::placement
