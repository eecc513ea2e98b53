// Which layout fits which store: every home against every store kind, the refusal's words written out.
#include "core/store/layout_home.hpp"

#include "core/util/errors.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace dedupctl;
using namespace dedupctl::core;

namespace {

using Kind = StoreUri::Kind;

// "" when the layout fits the store; else the words its refusal must hold.
std::string refusal(const std::string& layout, Kind kind) {
  try {
    check_layout_home(find_layout(layout), kind);
    return "";
  } catch (const UsageError& e) {
    return e.what();
  }
}

struct Case {
  const char* layout;
  Kind kind;
  const char* words; // nullptr: fits
};

} // namespace

TEST(LayoutHome, EveryHomeAgainstEveryStoreKind) {
  const std::vector<Case> cases{
      // Any (plain): every store, but a DynamoDB table, whose items are JSON records.
      {"plain", Kind::Redis, nullptr},
      {"plain", Kind::Postgres, nullptr},
      {"plain", Kind::File, nullptr},
      {"plain", Kind::Memory, nullptr},
      {"plain", Kind::Dynamodb, "--layout plain is not a DynamoDB layout"},
      // Redis: Redis, its snapshots, and a DynamoDB table for the JSON ones.
      {"powertools-python", Kind::Redis, nullptr},
      {"powertools-python", Kind::File, nullptr},
      {"powertools-python", Kind::Dynamodb, nullptr},
      {"powertools-python", Kind::Postgres,
       "--layout powertools-python is a Redis layout: it reads redis:// stores (or their snapshots), not postgres"},
      {"powertools-python", Kind::Memory,
       "is a Redis layout: it reads redis:// stores (or their snapshots), not memory"},
      {"spring-hash", Kind::Redis, nullptr},
      {"spring-hash", Kind::Dynamodb, "--layout spring-hash is not a DynamoDB layout"},
      // Inbox: PostgreSQL and its snapshots only.
      {"eventuate", Kind::Postgres, nullptr},
      {"eventuate", Kind::File, nullptr},
      {"eventuate", Kind::Redis,
       "--layout eventuate is an inbox layout: it reads postgres:// stores (or their "
       "snapshots), not redis"},
      {"eventuate", Kind::Dynamodb,
       "is an inbox layout: it reads postgres:// stores (or their snapshots), not dynamodb"},
      // Dynamodb (Powertools for Java writes to DynamoDB alone): a table and its scans or exports only.
      {"powertools-java", Kind::Dynamodb, nullptr},
      {"powertools-java", Kind::File, nullptr},
      {"powertools-java", Kind::Redis, "keeps its records in DynamoDB; give --store dynamodb://TABLE"},
      {"powertools-java", Kind::Postgres, "keeps its records in DynamoDB; give --store dynamodb://TABLE"},
      // Window: an in-process window, simulated with memory: alone (a snapshot holds no window).
      {"lru", Kind::Memory, nullptr},
      {"lru-bloom", Kind::Memory, nullptr},
      {"bloom-exact", Kind::Memory, nullptr},
      {"lru", Kind::Redis, "--layout lru is an in-process window: it is simulated over the log with --store memory:"},
      {"lru-bloom", Kind::File,
       "is an in-process window: it is simulated over the log with --store memory:, not read from file"},
      {"bloom-exact", Kind::Postgres, "is an in-process window"},
      {"lru", Kind::Dynamodb, "is an in-process window"},
      // Dump: a filter the consumer wrote to a file itself, read from file: alone.
      {"bloom", Kind::File, nullptr},
      {"bloom", Kind::Redis,
       "--layout bloom reads a filter the consumer wrote to a file (bits-and-blooms WriteTo, "
       "Guava writeTo): give --store file:PATH, not redis (a filter in Redis is --layout "
       "redis-bloom)"},
      {"bloom", Kind::Memory, "give --store file:PATH, not memory"},
      {"bloom", Kind::Postgres, "give --store file:PATH, not postgres"},
      {"bloom", Kind::Dynamodb, "give --store file:PATH, not dynamodb"},
      // Projection: the handler's own table or key per entity, read live (no snapshot of it).
      {"version-guard", Kind::Postgres, nullptr},
      {"version-guard", Kind::Redis, nullptr},
      {"version-guard", Kind::File, "reads the handler's projection itself: give --store postgres://"},
      {"version-guard", Kind::Dynamodb, "not dynamodb"},
      {"version-guard", Kind::Memory, "not memory"},
      // Changelog: a Kafka Streams store, read from its changelog (kstreams://) alone; a kstreams:// store
      // holds nothing else.
      {"kstreams-window", Kind::Kstreams, nullptr},
      {"kstreams-kv", Kind::Kstreams, nullptr},
      {"kstreams-window", Kind::Redis,
       "--layout kstreams-window is a Kafka Streams store: it is read from its changelog with --store "
       "kstreams://APPLICATION_ID/STORE, not from redis"},
      {"kstreams-kv", Kind::File, "is a Kafka Streams store"},
      {"kstreams-window", Kind::Memory, "not from memory"},
      {"plain", Kind::Kstreams,
       "--layout plain: a kstreams:// store is a Kafka Streams state store: give --layout kstreams-window (the "
       "default) or kstreams-kv"},
      {"powertools-python", Kind::Kstreams, "not kstreams"},
      {"eventuate", Kind::Kstreams, "not kstreams"},
      {"lru", Kind::Kstreams, "not read from kstreams"},
      {"version-guard", Kind::Kstreams, "not kstreams"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.layout) + " in " + std::string(store_kind_name(c.kind)));
    std::string said = refusal(c.layout, c.kind);
    if (!c.words) {
      EXPECT_EQ(said, "");
    } else {
      EXPECT_NE(said.find(c.words), std::string::npos) << said;
    }
  }
}

TEST(LayoutHome, EachLibrarysLayoutSaysWhereItsRecordsLive) {
  EXPECT_EQ(find_layout("plain").home, LayoutHome::Any);
  EXPECT_EQ(find_layout("json").home, LayoutHome::Redis);
  EXPECT_EQ(find_layout("camel-string").home, LayoutHome::Redis);
  EXPECT_EQ(find_layout("zset").home, LayoutHome::Redis);
  EXPECT_EQ(find_layout("masstransit").home, LayoutHome::Inbox);
  EXPECT_EQ(find_layout("powertools-java").home, LayoutHome::Dynamodb);
  EXPECT_EQ(find_layout("lru-bloom").home, LayoutHome::Window);
  EXPECT_EQ(find_layout("kstreams-window").home, LayoutHome::Changelog);
  EXPECT_EQ(find_layout("kstreams-kv").home, LayoutHome::Changelog);
  EXPECT_EQ(find_layout("bloom").home, LayoutHome::Dump);
  EXPECT_EQ(find_layout("version-guard").home, LayoutHome::Projection);
  EXPECT_EQ(find_layout("version-guard").key_template, "{entity}");
  for (auto name : layout_names()) {
    auto layout = find_layout(name);
    EXPECT_EQ(layout.inbox(), layout.home == LayoutHome::Inbox) << name;
    EXPECT_EQ(layout.home == LayoutHome::Any, name == "plain") << name; // only plain is read everywhere
  }
}
