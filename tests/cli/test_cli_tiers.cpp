// dedupctl audit with --store repeated: a chain of tiers looked up in order (a window in memory,
// Redis with a 1h TTL, a PostgreSQL inbox whose cleanup keeps rows 30 days), over the planted events
// of planted.hpp on the mock cluster, with a real redis-server and a real PostgreSQL.
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

// processed_at of a row written `ago` ms before `now`, as SQL.
std::string at(long long now, long long ago) { return fmt::format("to_timestamp({} / 1000.0)", now - ago); }

// The findings of one id, in the report's order.
std::vector<Json> findings_of(const Json& doc, const std::string& id) {
  std::vector<Json> out;
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == id) {
      out.push_back(f);
    }
  }
  return out;
}

} // namespace

class AuditTiers : public ::testing::Test {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    DEDUPCTL_REQUIRE_SERVER(m_pg.available(), m_pg.why_unavailable());
    m_now = wall_ms();
    plant_pay(m_broker, m_now);
    plant_records(m_redis); // e-2 expiring, e-3 forever, e-4 and e-8 claims, e-6 for 8 days
    // The inbox has what Redis let lapse or never had: e-0 (48 h ago), e-1, e-2, e-7, as written
    // when each was processed.
    auto result = m_pg.psql(
        "CREATE TABLE processed_events (event_id text NOT NULL, consumer_name text NOT NULL, processed_at timestamptz "
        "NOT NULL, status text, PRIMARY KEY (consumer_name, event_id));" +
        fmt::format("INSERT INTO processed_events VALUES ('e-0', 'billing', {}, 'done'), ('e-1', 'billing', {}, "
                    "'done'), ('e-2', 'billing', {}, 'done'), ('e-7', 'billing', {}, 'done');",
                    at(m_now, 48 * k_hour), at(m_now, 30 * k_minute), at(m_now, 30 * k_minute),
                    at(m_now, 40 * k_minute)));
    ASSERT_EQ(result.exit_code, 0) << result.err;
  }

  std::vector<std::string> audit(const std::vector<std::string>& tiers, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> out{"audit",      "-b",      m_broker.bootstrap(), "--topic", "pay", "--group", "billing",
                                 "--consumer", "billing", "--retention",        "7d"};
    out.insert(out.end(), tiers.begin(), tiers.end());
    out.insert(out.end(), extra.begin(), extra.end());
    return out;
  }
  std::vector<std::string> memory() const {
    return {"--store", "memory:", "--layout", "lru", "--layout-option", "capacity=100"};
  }
  std::vector<std::string> redis(const std::string& uri = "") const {
    return {"--store", uri.empty() ? m_redis.uri() : uri, "--key-template", "dedup:pay:{event_id}", "--ttl", "1h"};
  }
  std::vector<std::string> inbox() const {
    return {"--store", m_pg.conninfo(), "--inbox-status-column", "status", "--inbox-retention", "30d"};
  }
  std::vector<std::string> chain() const {
    std::vector<std::string> out = memory();
    for (const auto& tier : {redis(), inbox()}) {
      out.insert(out.end(), tier.begin(), tier.end());
    }
    return out;
  }

  MockBroker m_broker{{"pay:1", "dup:1"}};
  RedisServer m_redis;
  PostgresServer m_pg;
  long long m_now = 0;
};

TEST_F(AuditTiers, AnEventIsCoveredWhenAnyTierHoldsItAndEachTierCountsAlone) {
  auto result = run_dedupctl(audit(chain(), {"-o", "json", "--fail-on", "none"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  const auto& s = doc.at("summary");
  // e-0, e-1, e-7 are the inbox's, e-2's Redis key lapses but its row stays, e-3 and e-6 are Redis's.
  EXPECT_EQ(s.at("covered"), 6);
  EXPECT_EQ(s.at("no_expiry"), 1); // e-3's key has no TTL
  EXPECT_EQ(s.at("expiring"), 0);
  EXPECT_EQ(s.at("expired"), 0);
  EXPECT_EQ(s.at("missing"), 0);
  EXPECT_EQ(s.at("orphaned"), 1);    // e-4: Redis's claim, below the committed offset
  EXPECT_EQ(s.at("in_progress"), 1); // e-8
  EXPECT_EQ(s.at("pending"), 1);     // e-9
  EXPECT_EQ(s.at("no_id"), 1);

  const auto& tiers = s.at("tiers");
  ASSERT_EQ(tiers.size(), 3u);
  // The window holds nothing across a restart: everything it would have held has lapsed.
  EXPECT_EQ(tiers[0].at("store"), "memory:");
  EXPECT_EQ(tiers[0].at("covered"), 0);
  EXPECT_EQ(tiers[0].at("held_by_others"), 0);
  // Redis alone, as a single-store audit classifies it.
  EXPECT_EQ(tiers[1].at("covered"), 2);
  EXPECT_EQ(tiers[1].at("expiring"), 1);
  EXPECT_EQ(tiers[1].at("expired"), 1);
  EXPECT_EQ(tiers[1].at("missing"), 2);
  EXPECT_EQ(tiers[1].at("held_by_others"), 4); // e-0, e-1, e-2, e-7
  // The inbox alone: e-3, e-4 and e-6 have no row; e-8 and e-9 are not consumed yet.
  EXPECT_EQ(tiers[2].at("covered"), 4);
  EXPECT_EQ(tiers[2].at("missing"), 3);
  EXPECT_EQ(tiers[2].at("pending"), 2);
  EXPECT_EQ(tiers[2].at("held_by_others"), 3);

  auto gaps = findings_of(doc, "tier-gap-covered");
  ASSERT_EQ(gaps.size(), 2u);
  for (const auto& gap : gaps) {
    EXPECT_EQ(gap.at("severity"), "info");
  }
  std::map<std::string, long long> by_tier;
  for (const auto& gap : gaps) {
    by_tier[gap.at("title").get<std::string>().substr(0, 6)] = gap.at("count").get<long long>();
  }
  EXPECT_EQ(by_tier, (std::map<std::string, long long>{{"tier 2", 4}, {"tier 3", 3}}));
  // Nothing the chain covers is reported as a gap of the placement.
  EXPECT_TRUE(findings_of(doc, "missing-record").empty());
  EXPECT_TRUE(findings_of(doc, "expiring-before-retention").empty());
  EXPECT_EQ(findings_of(doc, "orphaned-claim").size(), 1u);

  const auto& placement = doc.at("placement");
  EXPECT_EQ(placement.at("kind"), "memory"); // the first tier's
  // Absent from every tier, an event lapsed only past the inbox's 30 days.
  EXPECT_EQ(placement.at("ttl_ms"), 30LL * 24 * k_hour);
  const auto& listed = placement.at("tiers");
  ASSERT_EQ(listed.size(), 3u);
  EXPECT_EQ(listed[0].at("survives_restart"), false);
  EXPECT_EQ(listed[1].at("kind"), "redis");
  EXPECT_EQ(listed[1].at("key_template"), "dedup:pay:{event_id}");
  EXPECT_EQ(listed[1].at("ttl_ms"), k_hour);
  EXPECT_EQ(listed[2].at("kind"), "postgres");
  EXPECT_EQ(listed[2].at("ttl_ms"), 30LL * 24 * k_hour);
}

TEST_F(AuditTiers, WithoutTheInboxRedisAloneDecidesAndItsGapsAreTheChains) {
  std::vector<std::string> tiers = memory();
  auto r = redis();
  tiers.insert(tiers.end(), r.begin(), r.end());
  auto doc = Json::parse(run_dedupctl(audit(tiers, {"-o", "json", "--fail-on", "none"})).out);
  const auto& s = doc.at("summary");
  EXPECT_EQ(s.at("covered"), 2);
  EXPECT_EQ(s.at("expiring"), 1);
  EXPECT_EQ(s.at("expired"), 1); // e-0: past Redis's hour, the longest TTL of the chain
  EXPECT_EQ(s.at("missing"), 2);
  EXPECT_EQ(doc.at("placement").at("ttl_ms"), k_hour);
  EXPECT_TRUE(findings_of(doc, "tier-gap-covered").empty());
  EXPECT_EQ(findings_of(doc, "missing-record").size(), 1u);
}

// A window of 1 id lets e-2's repeat through; alone, that is re-applied; with Redis behind it,
// which holds e-2, the next tier is asked.
TEST_F(AuditTiers, WhatTheWindowLetsThroughIsInfoWhenATierFollowsIt) {
  std::string dump;
  for (int i = 0; i < 4; ++i) {
    OwnedEvent e{.topic = "dup", .offset = i, .timestamp_ms = m_now - (4 - i) * k_minute};
    e.headers.emplace_back("event_id", i == 3 ? "e-2" : fmt::format("e-{}", i + 1));
    dump += kcat_line(e);
  }
  m_broker.seed("dup", dump);
  std::vector<std::string> window{"--store", "memory:", "--layout", "lru", "--layout-option", "capacity=1"};
  auto severity = [&](const std::vector<std::string>& tiers) {
    std::vector<std::string> args{"audit", "-b",   m_broker.bootstrap(), "--topic", "dup", "--retention", "7d",
                                  "-o",    "json", "--fail-on",          "none"};
    args.insert(args.end(), tiers.begin(), tiers.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    auto misses = findings_of(Json::parse(result.out), "window-miss");
    EXPECT_EQ(misses.size(), 1u);
    return misses.empty() ? std::string() : misses[0].at("severity").get<std::string>();
  };
  EXPECT_EQ(severity(window), "error"); // an unknown type has external effects
  auto chained = window;
  auto r = redis();
  chained.insert(chained.end(), r.begin(), r.end());
  EXPECT_EQ(severity(chained), "info");
}

// The same flag for two tiers is each tier's own: two key spaces on one server, each with its TTL.
TEST_F(AuditTiers, AFlagGivenForTwoTiersIsEachTiersOwn) {
  ASSERT_EQ(m_redis.command("SET old:e-1 done"), "+OK\r\n"); // only the old key space holds e-1
  auto doc =
      Json::parse(run_dedupctl(audit({"--store", m_redis.uri(), "--key-template", "dedup:pay:{event_id}", "--ttl", "1h",
                                      "--store", m_redis.uri(), "--key-template", "old:{event_id}", "--ttl", "none"},
                                     {"-o", "json", "--fail-on", "none"}))
                      .out);
  const auto& listed = doc.at("placement").at("tiers");
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].at("key_template"), "dedup:pay:{event_id}");
  EXPECT_EQ(listed[0].at("ttl_ms"), k_hour);
  EXPECT_EQ(listed[1].at("key_template"), "old:{event_id}");
  EXPECT_EQ(listed[1].at("ttl_infinite"), true);
  EXPECT_EQ(doc.at("summary").at("tiers")[1].at("covered"), 1);
  EXPECT_EQ(doc.at("summary").at("tiers")[0].at("held_by_others"), 1); // e-1
  // e-0 and e-7: the old key space keeps its keys for ever, so their absence is no lapse.
  EXPECT_EQ(doc.at("summary").at("missing"), 2);
  EXPECT_EQ(doc.at("summary").at("expired"), 0);
}

// A tier's flag before the first --store is the first tier's, as it is for one store.
TEST_F(AuditTiers, AFlagBeforeTheFirstStoreIsTheFirstTiers) {
  auto i = inbox();
  std::vector<std::string> tiers{"--ttl", "1h", "--store", m_redis.uri(), "--key-template", "dedup:pay:{event_id}"};
  tiers.insert(tiers.end(), i.begin(), i.end());
  auto result = run_dedupctl(audit(tiers, {"-o", "json", "--fail-on", "none"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  const auto& listed = doc.at("placement").at("tiers");
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].at("ttl_ms"), k_hour);
  EXPECT_EQ(listed[0].at("ttl_source"), "flag");
  EXPECT_EQ(listed[1].at("ttl_ms"), 30LL * 24 * k_hour);
}

TEST_F(AuditTiers, TheTextReportListsTheTiersInLookupOrder) {
  auto result = run_dedupctl(audit(chain(), {"--fail-on", "none"}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto tiers = result.out.find("TIERS");
  ASSERT_NE(tiers, std::string::npos) << result.out;
  auto memory_row = result.out.find("memory:", tiers);
  auto redis_row = result.out.find(m_redis.uri(), tiers);
  ASSERT_NE(memory_row, std::string::npos);
  ASSERT_NE(redis_row, std::string::npos);
  EXPECT_LT(memory_row, redis_row);
  EXPECT_NE(result.out.find("until restart", tiers), std::string::npos);
  EXPECT_NE(result.out.find("HELD-ELSEWHERE", tiers), std::string::npos);
}

TEST_F(AuditTiers, WhatAChainCannotBeIsAUsageError) {
  auto refused = [&](std::vector<std::string> tiers, const std::string& says) {
    auto result = run_dedupctl(audit(tiers, {"-o", "json"}));
    EXPECT_EQ(result.exit_code, 2) << says << "\n" << result.err;
    EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
    auto doc = Json::parse(result.out); // the error's own report: nothing was read
    EXPECT_EQ(doc.at("complete"), false);
    EXPECT_EQ(doc.at("summary"), Json::object());
  };
  std::vector<std::string> two_windows = memory();
  auto again = memory();
  two_windows.insert(two_windows.end(), again.begin(), again.end());
  refused(two_windows, "--store memory: given twice");
  std::vector<std::string> ttl_twice = redis();
  ttl_twice.insert(ttl_twice.end(), {"--ttl", "2h"});
  auto pg = inbox();
  ttl_twice.insert(ttl_twice.end(), pg.begin(), pg.end());
  refused(ttl_twice, "--ttl given twice for tier 1");
  TempDir dir;
  std::vector<std::string> sharded = redis();
  sharded.insert(sharded.end(), pg.begin(), pg.end());
  sharded.insert(sharded.end(), {"--digest", dir.path() + "/shard.digest"});
  refused(sharded, "--store repeated with --shard/--digest");
  EXPECT_FALSE(std::filesystem::exists(dir.path() + "/shard.digest"));
  // A tier's flag is checked as a single store's is, naming it.
  std::vector<std::string> bad = redis();
  bad.insert(bad.end(), {"--store", "memory:", "--layout", "lru", "--layout-option", "capacity=0"});
  refused(bad, "capacity");
}

// A config file's ttl belongs to no tier of a chain: refused, not dropped (Redis's keys read as kept for ever
// would hide what lapsed).
TEST_F(AuditTiers, ATiersFlagFromTheConfigFileIsRefusedForAChain) {
  TempDir dir;
  write_file(dir.file("dedupctl.toml"), "[audit]\nttl = \"1h\"\n");
  std::vector<std::string> tiers{"--store", m_redis.uri(), "--key-template", "dedup:pay:{event_id}"};
  auto pg = inbox();
  tiers.insert(tiers.end(), pg.begin(), pg.end());
  auto result = run_dedupctl(audit(tiers, {"--config", dir.file("dedupctl.toml"), "-o", "json"}));
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("--ttl is set by the config file, and the placement has 2 tiers"), std::string::npos)
      << result.err;
  // One store takes it, as before.
  auto one = run_dedupctl(audit({"--store", m_redis.uri(), "--key-template", "dedup:pay:{event_id}"},
                                {"--config", dir.file("dedupctl.toml"), "-o", "json", "--fail-on", "none"}));
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(Json::parse(one.out).at("placement").at("ttl_ms"), k_hour);
}

TEST_F(AuditTiers, ATierThatCannotBeReachedMakesTheReportIncompleteWithoutItsPassword) {
  int closed = free_port();
  std::vector<std::string> tiers = redis(fmt::format("redis://:hunter2secret@127.0.0.1:{}", closed));
  auto pg = inbox();
  tiers.insert(tiers.end(), pg.begin(), pg.end());
  auto result = run_dedupctl(audit(tiers, {"-o", "json", "--timeout", "2s"}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(result.out.find("hunter2secret"), std::string::npos);
  EXPECT_EQ(result.err.find("hunter2secret"), std::string::npos);
  EXPECT_FALSE(doc.contains("summary") && doc.at("summary").contains("covered"));
}

// trace of the chain: each tier's key, record and verdict alone, the tier that decides, and what the
// window did with each copy.
TEST_F(AuditTiers, TraceOfAChainShowsEachTierAndTheOneWhoseRecordDecides) {
  std::vector<std::string> args{"trace",      "-b",         m_broker.bootstrap(),
                                "--topic",    "pay",        "--group",
                                "billing",    "--consumer", "billing",
                                "--event-id", "e-0",        "--event-id",
                                "e-3",        "--event-id", "e-4",
                                "--event-id", "e-9",        "--fail-on",
                                "none"};
  auto tiers = chain();
  args.insert(args.end(), tiers.begin(), tiers.end());
  auto json_args = args;
  json_args.insert(json_args.end(), {"-o", "json"});
  auto result = run_dedupctl(json_args);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  const auto& traces = doc.at("traces");
  ASSERT_EQ(traces.size(), 4u);
  for (const auto& trace : traces) {
    ASSERT_EQ(trace.at("tiers").size(), 3u) << trace.dump();
    EXPECT_EQ(trace.at("occurrences")[0].at("window"), "applied") << "each id once in the log: new to the window";
    EXPECT_EQ(trace.at("tiers")[0].at("record").at("state"), "absent") << "a window holds nothing now";
  }
  // e-0: no Redis key (lapsed after 1h), the inbox's row from 48h ago decides.
  const auto& e0 = traces[0];
  EXPECT_EQ(e0.at("decided_by"), 3);
  EXPECT_EQ(e0.at("tiers")[1].at("dedup_keys"), Json::array({"dedup:pay:e-0"}));
  EXPECT_EQ(e0.at("tiers")[1].at("record").at("state"), "absent");
  EXPECT_EQ(e0.at("tiers")[1].at("verdict").at("id"), "exposed");
  EXPECT_EQ(e0.at("tiers")[2].at("dedup_keys"), Json::array({"e-0"}));
  EXPECT_EQ(e0.at("tiers")[2].at("record").at("status"), "done");
  EXPECT_EQ(e0.at("tiers")[2].at("verdict").at("id"), "protected");
  EXPECT_EQ(e0.at("verdict").at("id"), "protected");
  EXPECT_EQ(e0.at("dedup_keys"), Json::array({"e-0"}));
  // e-3: Redis's key without TTL decides; the inbox has no row.
  EXPECT_EQ(traces[1].at("decided_by"), 2);
  EXPECT_EQ(traces[1].at("tiers")[2].at("record").at("state"), "absent");
  EXPECT_EQ(traces[1].at("verdict").at("id"), "protected");
  // e-4: Redis's claim, orphaned below the committed offset: the best any tier has.
  EXPECT_EQ(traces[2].at("decided_by"), 2);
  EXPECT_EQ(traces[2].at("verdict").at("id"), "claim-orphaned");
  // e-9: in no tier, and not consumed yet.
  EXPECT_TRUE(traces[3].at("decided_by").is_null());
  EXPECT_EQ(traces[3].at("verdict").at("id"), "protected") << traces[3].at("verdict").dump();
  auto text = run_dedupctl(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("WINDOW"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("TIER"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("decided by tier 3 ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("decided by no tier: none holds the event"), std::string::npos) << text.out;
  auto markdown_args = args;
  markdown_args.insert(markdown_args.end(), {"-o", "markdown"});
  auto markdown = run_dedupctl(markdown_args);
  ASSERT_EQ(markdown.exit_code, 0) << markdown.err;
  EXPECT_NE(markdown.out.find("| tier | key | record | alone |"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("| `e-0` | present | protected |"), std::string::npos) << markdown.out;
  EXPECT_NE(markdown.out.find("Decided by tier 3 ("), std::string::npos) << markdown.out;
}

// replay --via the chain: the window is left out, the claims go to Redis, and an event the inbox holds
// is skipped without a Redis key; the inbox is never written.
TEST_F(AuditTiers, ReplayViaAChainClaimsInTheFirstDurableTierAndSkipsWhatTheOthersHold) {
  TempDir dir;
  std::vector<std::string> args{"replay", "-b", m_broker.bootstrap(), "--topic", "pay", "--consumer", "billing"};
  for (const auto& tier : {memory(), redis(), inbox()}) {
    for (std::size_t i = 0; i < tier.size(); ++i) {
      if (tier[i] == "--inbox-retention") { // audit's: a replay does not expire rows
        ++i;
        continue;
      }
      args.push_back(tier[i] == "--store" ? "--via" : tier[i]);
    }
  }
  args.insert(args.end(), {"--sink", "file:" + dir.file("out.ndjson"), "--execute", "-o", "json"});
  auto result = run_dedupctl(args);
  ASSERT_EQ(result.exit_code, 0) << result.err << result.out;
  EXPECT_NE(result.err.find("replay: tier 1 (memory:) is a window in memory, empty in any new process: not asked"),
            std::string::npos)
      << result.err;
  auto doc = Json::parse(result.out);
  const auto& s = doc.at("summary");
  EXPECT_EQ(s.at("replayed"), 1) << s.dump();          // e-9
  EXPECT_EQ(s.at("skipped_duplicate"), 6) << s.dump(); // e-0, e-1, e-2, e-7 (the inbox); e-3, e-6 (Redis)
  EXPECT_EQ(s.at("skipped_claimed"), 2) << s.dump();   // e-4, e-8: claims in Redis
  EXPECT_EQ(doc.at("placement").at("kind"), "redis");
  auto chained = findings_of(doc, "replay-via-chain");
  ASSERT_EQ(chained.size(), 1u);
  EXPECT_EQ(chained[0].at("count"), 4);
  EXPECT_NE(chained[0].at("title").get<std::string>().find("claims in tier 2 (redis://"), std::string::npos);
  EXPECT_EQ(m_redis.command("GET dedup:pay:e-9"), "$4\r\ndone\r\n");
  for (const char* held : {"e-0", "e-1", "e-7"}) {
    EXPECT_EQ(m_redis.command(fmt::format("EXISTS dedup:pay:{}", held)), ":0\r\n") << held;
  }
  auto rows = m_pg.psql("SELECT count(*) FROM processed_events");
  ASSERT_EQ(rows.exit_code, 0) << rows.err;
  EXPECT_EQ(rows.out.substr(0, 1), "4") << "the inbox is only read";
  auto out = read_file(dir.file("out.ndjson"));
  EXPECT_NE(out.find("e-9"), std::string::npos) << out;
  EXPECT_EQ(out.find("e-0"), std::string::npos) << out;
}

TEST_F(AuditTiers, WhatAReplayChainCannotBeIsAUsageError) {
  auto replay = [&](std::vector<std::string> tiers, std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"replay", "-b", m_broker.bootstrap(), "--topic", "pay"};
    args.insert(args.end(), tiers.begin(), tiers.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args);
  };
  std::vector<std::string> window{"--via", "memory:", "--layout", "lru", "--layout-option", "capacity=5"};
  auto windows = window;
  windows.insert(windows.end(), window.begin(), window.end());
  auto only = replay(windows);
  EXPECT_EQ(only.exit_code, 2);
  EXPECT_NE(only.err.find("every tier is a window in memory"), std::string::npos) << only.err;
  auto bloom =
      replay({"--via", m_redis.uri(), "--layout", "redis-bloom", "--collection", "bf", "--via", m_redis.uri()});
  EXPECT_EQ(bloom.exit_code, 2);
  EXPECT_NE(bloom.err.find("--layout redis-bloom in --via's tier 1"), std::string::npos) << bloom.err;
  auto own = replay({"--via", "memory:", "--via", m_redis.uri(), "--ttl", "1h"});
  EXPECT_EQ(own.exit_code, 2);
  EXPECT_NE(own.err.find("in a chain is the consumer's window"), std::string::npos) << own.err;
  auto repair = replay({"--via", m_redis.uri(), "--via", m_pg.conninfo()},
                       {"--repair-lost", "--effects", m_pg.conninfo(), "--effects-table", "t"});
  EXPECT_EQ(repair.exit_code, 2);
  EXPECT_NE(repair.err.find("--repair-lost with --via repeated"), std::string::npos) << repair.err;
}

TEST_F(AuditTiers, ATraceOfTwoWindowsIsAUsageError) {
  std::vector<std::string> args{"trace", "-b", m_broker.bootstrap(), "--topic", "pay", "--event-id", "e-0"};
  for (int i = 0; i < 2; ++i) {
    auto window = memory();
    args.insert(args.end(), window.begin(), window.end());
  }
  auto result = run_dedupctl(args);
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("--store memory: given twice"), std::string::npos) << result.err;
}
