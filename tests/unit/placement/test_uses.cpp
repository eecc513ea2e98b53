// Every store kind × every use: supported, or refused with its text before anything is contacted.
// The expectations are written out here, not read from the table: a row that drifts fails.
#include "commands/placement/uses.hpp"
#include "core/util/errors.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dedupctl::commands::placement {
namespace {

using Kind = core::StoreUri::Kind;

struct Cell {
  const char* uri;
  StoreUse use;
  const char* refusal; // nullptr: supported
};

const std::vector<Cell>& table() {
  static const std::vector<Cell> cells{
      // redis://: every use.
      {"redis://127.0.0.1:6379", StoreUse::Read, nullptr},
      {"redis://127.0.0.1:6379", StoreUse::Via, nullptr},
      {"redis://127.0.0.1:6379", StoreUse::Release, nullptr},
      {"redis://127.0.0.1:6379", StoreUse::Effects, nullptr},
      {"redis://127.0.0.1:6379", StoreUse::Discover, nullptr},
      {"redis://127.0.0.1:6379", StoreUse::Inspect, nullptr},
      {"redis://127.0.0.1:6379", StoreUse::Snapshot, nullptr},
      {"redis://127.0.0.1:6379", StoreUse::Watch, nullptr},
      // postgres://: every use.
      {"postgres://u@h/db", StoreUse::Read, nullptr},
      {"postgres://u@h/db", StoreUse::Via, nullptr},
      {"postgres://u@h/db", StoreUse::Release, nullptr},
      {"postgres://u@h/db", StoreUse::Effects, nullptr},
      {"postgres://u@h/db", StoreUse::Discover, nullptr},
      {"postgres://u@h/db", StoreUse::Inspect, nullptr},
      {"postgres://u@h/db", StoreUse::Snapshot, nullptr},
      {"postgres://u@h/db", StoreUse::Watch, nullptr},
      // dynamodb://: audit, trace, replay --via, check --live, snapshot.
      {"dynamodb://tbl", StoreUse::Read, nullptr},
      {"dynamodb://tbl", StoreUse::Via, nullptr},
      {"dynamodb://tbl", StoreUse::Release,
       "--repair-lost --via dynamodb://tbl: the lost events' records are released from the consumer's own Redis keys "
       "or inbox table"},
      {"dynamodb://tbl", StoreUse::Effects,
       "--effects dynamodb://tbl: effects are read from postgres://…, redis://… or kafka:TOPIC"},
      {"dynamodb://tbl", StoreUse::Discover,
       "--store dynamodb://tbl: discover reads Redis stores (redis://, redis+cluster://, redis+sentinel://) and "
       "PostgreSQL databases (postgres://)"},
      {"dynamodb://tbl", StoreUse::Inspect, nullptr},
      {"dynamodb://tbl", StoreUse::Snapshot, nullptr},
      // Its gauges would carry another system's label (system="redis"): refused by name.
      {"dynamodb://tbl", StoreUse::Watch,
       "--store dynamodb://tbl: watch does not read DynamoDB tables yet (it serves redis:// and postgres:// "
       "placements); run dedupctl audit on the table on a schedule instead"},
      // file:: read offline, nothing else.
      {"file:/tmp/s", StoreUse::Read, nullptr},
      {"file:/tmp/s", StoreUse::Via,
       "--via file: is a snapshot and cannot claim events; use the live redis:// or postgres:// store"},
      {"file:/tmp/s", StoreUse::Release,
       "--repair-lost --via file:/tmp/s: the lost events' records are released from the consumer's own Redis keys "
       "or inbox table"},
      {"file:/tmp/s", StoreUse::Effects,
       "--effects file:/tmp/s: effects are read from postgres://…, redis://… or kafka:TOPIC"},
      {"file:/tmp/s", StoreUse::Discover,
       "--store file:/tmp/s: discover reads Redis stores (redis://, redis+cluster://, redis+sentinel://) and "
       "PostgreSQL databases (postgres://)"},
      {"file:/tmp/s", StoreUse::Inspect, "store 'file:/tmp/s' is not a live store: check --live asks a server"},
      {"file:/tmp/s", StoreUse::Snapshot,
       "--store file:/tmp/s: snapshot reads redis://, postgres:// and dynamodb:// placements"},
      {"file:/tmp/s", StoreUse::Watch,
       "--store file:/tmp/s: watch reads a live placement (redis://, postgres://); a snapshot or memory holds "
       "nothing that changes"},
      // memory:: the consumer's window simulated over the log (audit, trace), and a replay's own window.
      {"memory:", StoreUse::Read, nullptr},
      {"memory:", StoreUse::Via, nullptr},
      {"memory:", StoreUse::Release,
       "--repair-lost --via memory:: the lost events' records are released from the consumer's own Redis keys or "
       "inbox table"},
      {"memory:", StoreUse::Effects, "--effects memory:: effects are read from postgres://…, redis://… or kafka:TOPIC"},
      {"memory:", StoreUse::Discover,
       "--store memory:: discover reads Redis stores (redis://, redis+cluster://, redis+sentinel://) and PostgreSQL "
       "databases (postgres://)"},
      {"memory:", StoreUse::Inspect, "store 'memory:' is not a live store: check --live asks a server"},
      {"memory:", StoreUse::Snapshot,
       "--store memory:: snapshot reads redis://, postgres:// and dynamodb:// placements"},
      {"memory:", StoreUse::Watch,
       "--store memory:: watch reads a live placement (redis://, postgres://); a snapshot or memory holds nothing "
       "that changes"},
      // kstreams://: a Kafka Streams store read from its changelog (audit), nothing written to it.
      {"kstreams://app/store", StoreUse::Read, nullptr},
      {"kstreams://app/store", StoreUse::Via,
       "--via kstreams://app/store: replay does not route through a Kafka Streams store yet; audit it (dedupctl "
       "audit --store kstreams://app/store --seek …) and replay --via a store the consumer claims in"},
      {"kstreams://app/store", StoreUse::Release,
       "--repair-lost --via kstreams://app/store: the application's own store records what it forwards; nothing is "
       "released from its changelog"},
      {"kstreams://app/store", StoreUse::Effects,
       "--effects kstreams://app/store: effects are read from postgres://…, redis://… or kafka:TOPIC"},
      {"kstreams://app/store", StoreUse::Discover,
       "--store kstreams://app/store: discover reads Redis stores and PostgreSQL databases"},
      {"kstreams://app/store", StoreUse::Inspect,
       "store 'kstreams://app/store' is read from its changelog topic: dedupctl audit and check read it"},
      {"kstreams://app/store", StoreUse::Snapshot,
       "--store kstreams://app/store: the changelog topic is the store's snapshot already: kcat or dedupctl audit "
       "read it"},
      {"kstreams://app/store", StoreUse::Watch,
       "--store kstreams://app/store: watch does not follow a changelog yet; run dedupctl audit on a schedule "
       "instead"},
  };
  return cells;
}

TEST(StoreUses, EveryKindTimesEveryUseIsOpenedOrRefusedWithItsText) {
  for (const auto& cell : table()) {
    auto uri = core::parse_store_uri(cell.uri);
    SCOPED_TRACE(std::string(cell.uri) + " for " + std::string(use_name(cell.use)));
    EXPECT_EQ(family_row(uri.kind).supports(cell.use), cell.refusal == nullptr);
    if (cell.refusal) {
      try {
        require(uri, cell.use);
        ADD_FAILURE() << "not refused";
      } catch (const UsageError& e) {
        EXPECT_EQ(std::string(e.what()), cell.refusal);
      }
    } else {
      EXPECT_NO_THROW(require(uri, cell.use));
    }
  }
}

TEST(StoreUses, TheTableCoversEveryKindAndEveryUse) {
  std::size_t cells = 0;
  for (auto kind : {Kind::Redis, Kind::Postgres, Kind::Dynamodb, Kind::File, Kind::Memory, Kind::Kstreams}) {
    for (std::size_t use = 0; use < k_store_uses; ++use) {
      for (const auto& cell : table()) {
        if (core::parse_store_uri(cell.uri).kind == kind && static_cast<std::size_t>(cell.use) == use) {
          ++cells;
        }
      }
    }
  }
  EXPECT_EQ(cells, 6 * k_store_uses);
  EXPECT_EQ(table().size(), 6 * k_store_uses);
}

TEST(StoreUses, TheWatchedSystemIsTheKindsOwnLabel) {
  EXPECT_EQ(family_row(Kind::Redis).watch_system, WatchSystem::Redis);
  EXPECT_EQ(family_row(Kind::Postgres).watch_system, WatchSystem::Postgres);
  EXPECT_FALSE(family_row(Kind::Dynamodb).watch_system.has_value());
  EXPECT_TRUE(family_row(Kind::Postgres).keyed_by_event_id);
  EXPECT_FALSE(family_row(Kind::Redis).keyed_by_event_id);
  EXPECT_TRUE(family_row(Kind::File).local);
}

} // namespace
} // namespace dedupctl::commands::placement
