// The Redis placement a replay routes through, against a real Redis: what a claim says of each
// kind of record, what it leaves behind, and how settling ends it. Both claim forms run: SET … NX
// PX … GET in one command (Redis 7), and SET NX then GET (older servers).
#include "connectors/redis/connection.hpp"
#include "connectors/redis/redis.hpp"
#include "core/util/errors.hpp"
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace dedupctl;
using namespace dedupctl::testing;
using connectors::redis::ClaimForm;
using core::Claim;

namespace {

std::string form_name(const ::testing::TestParamInfo<ClaimForm>& info) {
  return info.param == ClaimForm::Auto ? "SetNxGetWhereTheServerHasIt" : "SetNxThenGet";
}

// The integer a reply such as ":42\r\n" carries.
long long integer_of(const std::string& reply) {
  EXPECT_EQ(reply.substr(0, 1), ":") << reply;
  return std::stoll(reply.substr(1));
}

// How often the server ran `command`, from INFO commandstats (0 when never).
long long calls_of(const RedisServer& redis, const std::string& command) {
  std::string stats = redis.command("INFO commandstats");
  std::string tag = "cmdstat_" + command + ":calls=";
  auto at = stats.find(tag);
  return at == std::string::npos ? 0 : std::stoll(stats.substr(at + tag.size()));
}

} // namespace

class RedisPlacement : public ::testing::TestWithParam<ClaimForm> {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    m_settings.uri = core::parse_store_uri(m_redis.uri());
    m_ttl = core::Span::finite(86'400'000);
    m_placement =
        connectors::redis::open_replay_placement(m_settings, m_ttl, 60'000, {"processing", "INPROGRESS"}, GetParam());
    ASSERT_EQ(m_redis.command("SET d:done done"), "+OK\r\n");
    ASSERT_EQ(m_redis.command("SET d:mine processing:run-1"), "+OK\r\n");
    ASSERT_EQ(m_redis.command("SET d:other processing:run-2"), "+OK\r\n");
    ASSERT_EQ(m_redis.command("SET d:consumer INPROGRESS"), "+OK\r\n");
    ASSERT_EQ(m_redis.command("HSET d:hash field 1"), ":1\r\n");
  }

  RedisServer m_redis;
  connectors::redis::RedisSettings m_settings;
  core::Span m_ttl;
  std::unique_ptr<core::ReplayPlacement> m_placement;
  const std::vector<std::string> m_keys{"d:done", "d:mine", "d:other", "d:consumer", "d:hash", "d:new", "d:new2"};
};

TEST_P(RedisPlacement, AClaimTellsEachKindOfRecordApartAndTakesOnlyAbsentKeys) {
  std::vector<Claim> claims;
  m_placement->claim(m_keys, "run-1", claims);
  EXPECT_EQ(claims, (std::vector<Claim>{Claim::Done, Claim::OwnStale, Claim::HeldByOther, Claim::HeldByOther,
                                        Claim::Done, Claim::Claimed, Claim::Claimed}))
      << "a key of another type (a hash) is a record that exists";
  EXPECT_EQ(m_redis.command("GET d:new"), "$16\r\nprocessing:run-1\r\n");
  long long lease_left = integer_of(m_redis.command("PTTL d:new"));
  EXPECT_GT(lease_left, 50'000) << "the claim holds for the lease";
  EXPECT_LE(lease_left, 60'000);
  EXPECT_EQ(m_redis.command("GET d:done"), "$4\r\ndone\r\n") << "an existing record is left as it is";
  EXPECT_EQ(m_redis.command("GET d:other"), "$16\r\nprocessing:run-2\r\n");
  EXPECT_EQ(integer_of(m_redis.command("PTTL d:other")), -1) << "another's claim gets no expiry from us";
  // The same keys again: now the new ones are this run's own claims.
  m_placement->claim({"d:new", "d:new2"}, "run-1", claims);
  EXPECT_EQ(claims, (std::vector<Claim>{Claim::OwnStale, Claim::OwnStale}));
  m_placement->claim({"d:new"}, "run-3", claims);
  EXPECT_EQ(claims, (std::vector<Claim>{Claim::HeldByOther}));
}

TEST_P(RedisPlacement, SettlingMarksDeliveredClaimsDoneWithTheTtlAndReleasesTheRest) {
  std::vector<Claim> claims;
  m_placement->claim(m_keys, "run-1", claims);
  // d:mine (own, stale) and d:new were delivered; d:new2 was not.
  std::vector<bool> delivered{false, true, false, false, false, true, false};
  m_placement->settle(m_keys, claims, delivered);
  EXPECT_EQ(m_redis.command("GET d:new"), "$4\r\ndone\r\n");
  long long ttl_left = integer_of(m_redis.command("PTTL d:new"));
  EXPECT_GT(ttl_left, 86'000'000);
  EXPECT_LE(ttl_left, 86'400'000);
  EXPECT_EQ(m_redis.command("GET d:mine"), "$4\r\ndone\r\n");
  EXPECT_EQ(m_redis.command("EXISTS d:new2"), ":0\r\n") << "an undelivered claim is released";
  EXPECT_EQ(m_redis.command("GET d:other"), "$16\r\nprocessing:run-2\r\n") << "others' claims are not touched";
  EXPECT_EQ(m_redis.command("GET d:consumer"), "$10\r\nINPROGRESS\r\n");
  EXPECT_EQ(m_redis.command("GET d:done"), "$4\r\ndone\r\n");
  EXPECT_EQ(integer_of(m_redis.command("PTTL d:done")), -1) << "a record that was there keeps its expiry";
  EXPECT_EQ(m_redis.command("TYPE d:hash"), "+hash\r\n");
}

TEST_P(RedisPlacement, WithoutATtlTheDoneRecordsDoNotExpire) {
  core::Span forever = core::Span::infinite();
  auto placement = connectors::redis::open_replay_placement(m_settings, forever, 60'000, {"processing"}, GetParam());
  std::vector<Claim> claims;
  placement->claim({"d:new"}, "run-1", claims);
  placement->settle({"d:new"}, claims, {true});
  EXPECT_EQ(m_redis.command("GET d:new"), "$4\r\ndone\r\n");
  EXPECT_EQ(integer_of(m_redis.command("PTTL d:new")), -1);
}

TEST_P(RedisPlacement, OneCommandAKeyToClaimWhereTheServerTakesSetWithGet) {
  std::vector<Claim> claims;
  long long gets_before = calls_of(m_redis, "get");
  m_placement->claim(m_keys, "run-1", claims);
  long long gets = calls_of(m_redis, "get") - gets_before;
  if (GetParam() == ClaimForm::Auto) {
    EXPECT_EQ(gets, 0) << "Redis 7 takes SET … NX … GET: no separate GET";
  } else {
    EXPECT_EQ(gets, static_cast<long long>(m_keys.size())) << "SET NX, then GET, a key each";
  }
}

// Through a Powertools layout the replay writes the library's own records and judges those it finds
// as Powertools does: completed before its expiration a duplicate, a claim within its lease another's,
// expired records, orphans and values not in its shape taken over under KEY:lock as the library does
// (unless another holds that lock), this run's claims its own. The clock is fixed between the
// records' times; Redis's own TTLs run on the real one.
TEST_P(RedisPlacement, ThroughPowertoolsTheLibrarysRecordsAreWrittenAndJudgedAsItDoes) {
  constexpr std::int64_t now = 1795803000000;
  m_settings.layout = core::find_layout("powertools-python");
  auto placement = connectors::redis::open_replay_placement(m_settings, m_ttl, 60'000, {"processing", "INPROGRESS"},
                                                            GetParam(), [] { return now; });
  auto set = [&](const std::string& key, const std::string& value) {
    ASSERT_EQ(m_redis.command(fmt::format("SET {} '{}' PX 3600000", key, value)), "+OK\r\n") << key;
  };
  set("p#done", R"({"data": "{}", "status": "COMPLETED", "expiration": 1795806842})");
  set("p#expired", R"({"data": "{}", "status": "COMPLETED", "expiration": 1795802000})");
  set("p#leased", R"({"status": "INPROGRESS", "expiration": 1795806846, "in_progress_expiration": 1795803251703})");
  set("p#orphan", R"({"status": "INPROGRESS", "expiration": 1795806846, "in_progress_expiration": 1795802999000})");
  set("p#locked", R"({"status": "INPROGRESS", "expiration": 1795806846, "in_progress_expiration": 1795802999000})");
  ASSERT_EQ(m_redis.command("SET p#locked:lock True EX 10"), "+OK\r\n");
  set("p#junk", "not json");
  std::string mine = core::json_claim_record(m_settings.layout, now + 86'400'000, now + 60'000, "run-1");
  set("p#mine", mine);
  const std::vector<std::string> keys{"p#done",   "p#expired", "p#leased", "p#orphan",
                                      "p#locked", "p#junk",    "p#mine",   "p#new"};
  std::vector<Claim> plan;
  placement->plan(keys, plan);
  EXPECT_EQ(plan, (std::vector<Claim>{Claim::Done, Claim::Claimed, Claim::HeldByOther, Claim::Claimed, Claim::Claimed,
                                      Claim::Claimed, Claim::HeldByOther, Claim::Claimed}));
  EXPECT_EQ(m_redis.command("EXISTS p#new"), ":0\r\n") << "a plan writes nothing";
  std::vector<Claim> claims;
  placement->claim(keys, "run-1", claims);
  EXPECT_EQ(claims, (std::vector<Claim>{Claim::Done, Claim::Claimed, Claim::HeldByOther, Claim::Claimed,
                                        Claim::HeldByOther, Claim::Claimed, Claim::OwnStale, Claim::Claimed}));
  auto value = [&](const std::string& key) {
    std::string reply = m_redis.command("GET " + key);
    return reply.substr(reply.find("\r\n") + 2, reply.size() - reply.find("\r\n") - 4);
  };
  for (const char* key : {"p#new", "p#orphan", "p#expired", "p#junk"}) {
    EXPECT_EQ(value(key), mine) << key << ": the library's claim, this run's";
    long long ttl = integer_of(m_redis.command(std::string("PTTL ") + key));
    EXPECT_GT(ttl, 86'000'000) << key << ": the record's TTL, as the library sets it on a claim";
  }
  for (const char* lock : {"p#orphan:lock", "p#expired:lock", "p#junk:lock"}) {
    long long left = integer_of(m_redis.command(std::string("PTTL ") + lock));
    EXPECT_GT(left, 0) << lock;
    EXPECT_LE(left, 10'000) << lock << ": min(10 s, ttl), as the library's";
  }
  EXPECT_NE(value("p#locked"), mine) << "another holds its lock: left to it";
  EXPECT_NE(value("p#leased"), mine);
  // Delivered: the completed record; not delivered: deleted, as the library does on a failure.
  std::vector<bool> delivered{false, true, false, false, false, true, true, true};
  placement->settle(keys, claims, delivered);
  std::string completed = core::json_completed_record(m_settings.layout, now + 86'400'000);
  EXPECT_EQ(value("p#new"), completed);
  EXPECT_EQ(value("p#mine"), completed);
  EXPECT_EQ(m_redis.command("EXISTS p#orphan"), ":0\r\n");
  EXPECT_GT(integer_of(m_redis.command("PTTL p#new")), 86'000'000);
  // Read back by the layout, the completed record is a duplicate to the library until its expiration.
  placement->plan({"p#new", "p#orphan"}, plan);
  EXPECT_EQ(plan, (std::vector<Claim>{Claim::Done, Claim::Claimed}));
}

// A record Powertools fails on at every delivery (no status, a status it does not know) holds its
// event: the replay neither plans nor claims it, and leaves it as it is, where a value the library
// cannot parse is taken over as the library takes it over.
TEST_P(RedisPlacement, ThroughPowertoolsARecordTheLibraryFailsOnIsLeftToIt) {
  constexpr std::int64_t now = 1795803000000;
  m_settings.layout = core::find_layout("powertools-python");
  auto placement = connectors::redis::open_replay_placement(m_settings, m_ttl, 60'000, {"processing", "INPROGRESS"},
                                                            GetParam(), [] { return now; });
  const std::string no_status = R"({"expiration": 1795806842})";
  const std::string unknown = R"({"status": "completed", "expiration": 1795806842})";
  ASSERT_EQ(m_redis.command(fmt::format("SET p#nostatus '{}'", no_status)), "+OK\r\n");
  ASSERT_EQ(m_redis.command(fmt::format("SET p#unknown '{}'", unknown)), "+OK\r\n");
  ASSERT_EQ(m_redis.command("SET p#cut '{\"status\": \"COMPLETED\"'"), "+OK\r\n");
  const std::vector<std::string> keys{"p#nostatus", "p#unknown", "p#cut"};
  std::vector<Claim> plan;
  placement->plan(keys, plan);
  EXPECT_EQ(plan, (std::vector<Claim>{Claim::HeldByOther, Claim::HeldByOther, Claim::Claimed}));
  std::vector<Claim> claims;
  placement->claim(keys, "run-1", claims);
  EXPECT_EQ(claims, (std::vector<Claim>{Claim::HeldByOther, Claim::HeldByOther, Claim::Claimed}));
  EXPECT_EQ(m_redis.command("GET p#nostatus"), fmt::format("${}\r\n{}\r\n", no_status.size(), no_status));
  EXPECT_EQ(m_redis.command("GET p#unknown"), fmt::format("${}\r\n{}\r\n", unknown.size(), unknown));
  EXPECT_EQ(m_redis.command("EXISTS p#nostatus:lock"), ":0\r\n") << "not taken over: no lock";
}

INSTANTIATE_TEST_SUITE_P(Forms, RedisPlacement, ::testing::Values(ClaimForm::Auto, ClaimForm::SetThenGet), form_name);

// Through spring-hash the replay claims a field of the one hash with HSETNX (this run's marker, which
// Spring's selector, asking only whether the field exists, skips like any record), and settles it
// with the time in ms, as Spring writes it, or HDEL.
TEST(RedisHashPlacement, FieldsOfTheOneHashAreClaimedWithHsetnxAndSettledWithTheTime) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  connectors::redis::RedisSettings settings;
  settings.uri = core::parse_store_uri(redis.uri());
  settings.layout = core::find_layout("spring-hash");
  settings.collection = "MetaData";
  ASSERT_EQ(redis.command("HSET MetaData done 1795803000000 mine processing:run-1 other processing:run-2"), ":3\r\n");
  auto placement =
      connectors::redis::open_replay_placement(settings, core::Span::unknown(), 60'000, {"processing", "INPROGRESS"},
                                               ClaimForm::Auto, [] { return std::int64_t{1795804000000}; });
  const std::vector<std::string> fields{"done", "mine", "other", "new", "new2"};
  std::vector<Claim> plan;
  placement->plan(fields, plan);
  EXPECT_EQ(plan,
            (std::vector<Claim>{Claim::Done, Claim::HeldByOther, Claim::HeldByOther, Claim::Claimed, Claim::Claimed}));
  std::vector<Claim> claims;
  placement->claim(fields, "run-1", claims);
  EXPECT_EQ(claims,
            (std::vector<Claim>{Claim::Done, Claim::OwnStale, Claim::HeldByOther, Claim::Claimed, Claim::Claimed}));
  EXPECT_EQ(redis.command("HGET MetaData new"), "$16\r\nprocessing:run-1\r\n");
  placement->settle(fields, claims, {false, true, false, true, false});
  EXPECT_EQ(redis.command("HGET MetaData new"), "$13\r\n1795804000000\r\n");
  EXPECT_EQ(redis.command("HGET MetaData mine"), "$13\r\n1795804000000\r\n");
  EXPECT_EQ(redis.command("HEXISTS MetaData new2"), ":0\r\n") << "an undelivered claim is released";
  EXPECT_EQ(redis.command("HGET MetaData other"), "$16\r\nprocessing:run-2\r\n");
  EXPECT_EQ(redis.command("HGET MetaData done"), "$13\r\n1795803000000\r\n");
}

// A Redis that refuses writes (over its maxmemory with noeviction) refuses the claim and the settling:
// each is an error naming the command and Redis's own answer, and the claim leaves nothing behind.
TEST_P(RedisPlacement, ARedisThatRefusesWritesFailsTheClaimAndTheSettlingWithItsAnswer) {
  std::vector<Claim> claims;
  m_placement->claim({"d:new"}, "run-1", claims);
  ASSERT_EQ(m_redis.command("CONFIG SET maxmemory-policy noeviction"), "+OK\r\n");
  ASSERT_EQ(m_redis.command("CONFIG SET maxmemory 1"), "+OK\r\n");
  try {
    m_placement->claim({"d:new2"}, "run-1", claims);
    ADD_FAILURE() << "the claim must fail";
  } catch (const UnreachableError& e) {
    EXPECT_NE(std::string(e.what()).find("refused SET NX"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("OOM"), std::string::npos) << e.what();
  }
  try {
    m_placement->settle({"d:new"}, {Claim::Claimed}, {true});
    ADD_FAILURE() << "settling must fail";
  } catch (const UnreachableError& e) {
    EXPECT_NE(std::string(e.what()).find("refused to settle a claim (OOM"), std::string::npos) << e.what();
  }
  ASSERT_EQ(m_redis.command("CONFIG SET maxmemory 0"), "+OK\r\n");
  EXPECT_EQ(m_redis.command("EXISTS d:new2"), ":0\r\n");
  EXPECT_EQ(m_redis.command("GET d:new"), "$16\r\nprocessing:run-1\r\n") << "still this run's claim, for the rerun";
}

// The audit's lookups: each kind of record read back exactly, with one command a key (a PTTL each)
// and one MGET for the values of every 512 keys, never a command per value.
TEST(RedisLookup, EachKindOfRecordIsReadBackWithOneCommandAKeyAndOneMgetAChunk) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  connectors::redis::RedisSettings settings;
  settings.uri = core::parse_store_uri(redis.uri());
  ASSERT_EQ(redis.command("SET d:done done PX 600000"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET d:forever done"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET d:claim processing:run-1 PX 60000"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET d:long " + std::string(100, 'x')), "+OK\r\n");
  ASSERT_EQ(redis.command("HSET d:hash field 1"), ":1\r\n");
  ASSERT_EQ(redis.command("CONFIG RESETSTAT"), "+OK\r\n");
  auto store = connectors::redis::open_store(settings);
  std::vector<std::string> keys{"d:done", "d:forever", "d:claim", "d:long", "d:hash", "d:absent"};
  std::vector<core::RecordState> states;
  store->lookup(keys, states);
  ASSERT_EQ(states.size(), keys.size());
  using Kind = core::RecordState::Kind;
  EXPECT_EQ(states[0].kind, Kind::Present);
  ASSERT_TRUE(states[0].pttl_ms.has_value());
  EXPECT_GT(*states[0].pttl_ms, 590'000);
  EXPECT_EQ(states[0].value, "done");
  EXPECT_EQ(states[1].kind, Kind::Present);
  EXPECT_FALSE(states[1].pttl_ms.has_value()) << "no expiry";
  EXPECT_EQ(states[2].value, "processing:run-1");
  EXPECT_EQ(states[3].value, std::string(64, 'x')) << "the first 64 bytes";
  EXPECT_EQ(states[4].kind, Kind::Present) << "another type is a record that exists";
  EXPECT_EQ(states[4].value, "");
  EXPECT_EQ(states[5].kind, Kind::Absent);
  EXPECT_EQ(states[5].value, "");
  EXPECT_EQ(calls_of(redis, "pttl"), 6);
  EXPECT_EQ(calls_of(redis, "mget"), 1);
  EXPECT_EQ(calls_of(redis, "getrange") + calls_of(redis, "get"), 0);
  // An empty batch sends nothing.
  store->lookup({}, states);
  EXPECT_TRUE(states.empty());
  EXPECT_EQ(calls_of(redis, "mget"), 1);
  // A batch of several chunks, the last one short: every key's state and value lands in its own
  // place.
  const int n = 2 * static_cast<int>(connectors::redis::k_lookup_chunk) + 300;
  keys.clear();
  for (int i = 0; i < n; ++i) {
    keys.push_back(fmt::format("c:{}", i));
    if (i % 3 != 0) {
      ASSERT_EQ(redis.command(fmt::format("SET c:{} {} PX {}", i, i % 7 == 0 ? fmt::format("processing:{}", i) : "done",
                                          1'000'000 + i * 1000)),
                "+OK\r\n");
    }
  }
  store->lookup(keys, states);
  ASSERT_EQ(states.size(), keys.size());
  for (int i = 0; i < n; ++i) {
    if (i % 3 == 0) {
      EXPECT_EQ(states[i].kind, Kind::Absent) << keys[i];
      continue;
    }
    EXPECT_EQ(states[i].kind, Kind::Present) << keys[i];
    ASSERT_TRUE(states[i].pttl_ms.has_value()) << keys[i];
    EXPECT_LE(*states[i].pttl_ms, 1'000'000 + i * 1000) << keys[i];
    EXPECT_GT(*states[i].pttl_ms, 1'000'000 + i * 1000 - 60'000) << keys[i];
    EXPECT_EQ(states[i].value, i % 7 == 0 ? fmt::format("processing:{}", i) : "done") << keys[i];
  }
  EXPECT_EQ(calls_of(redis, "mget"), 1 + 3);
  EXPECT_EQ(calls_of(redis, "pttl"), 6 + n);
}

// A JSON layout's records carry their own expiration (Powertools': the library sets the key's TTL
// from the same number), so the audit reads their values with one MGET a chunk and no PTTL; only a
// record that names no expiration after all (not JSON, no such field) has its key's TTL read.
TEST(RedisLookup, AJsonLayoutReadsValuesOnlyAndPttlWhereARecordNamesNoExpiration) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  connectors::redis::RedisSettings settings;
  settings.uri = core::parse_store_uri(redis.uri());
  settings.layout = core::find_layout("json");
  std::string done =
      R"({"data": ")" + std::string(2048, 'r') + R"(", "status": "COMPLETED", "expiration": 4102444800})";
  ASSERT_EQ(redis.command("SET p:done '" + done + "' EX 600"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET p:claim '{\"status\": \"INPROGRESS\", \"expiration\": 4102444800, "
                          "\"in_progress_expiration\": 4102444800000}' EX 600"),
            "+OK\r\n");
  ASSERT_EQ(redis.command("SET p:bare '{\"status\": \"COMPLETED\"}' PX 500000"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET p:forever '{\"status\": \"COMPLETED\"}'"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET p:text done PX 400000"), "+OK\r\n");
  ASSERT_EQ(redis.command("HSET p:hash status COMPLETED"), ":1\r\n");
  ASSERT_EQ(redis.command("CONFIG RESETSTAT"), "+OK\r\n");
  auto store = connectors::redis::open_store(settings);
  std::vector<std::string> keys{"p:done", "p:claim", "p:bare", "p:forever", "p:text", "p:hash", "p:absent"};
  std::vector<core::RecordState> states;
  store->lookup(keys, states);
  ASSERT_EQ(states.size(), keys.size());
  using Kind = core::RecordState::Kind;
  EXPECT_EQ(states[0].kind, Kind::Present);
  EXPECT_EQ(states[0].expires_at_ms, 4102444801000);
  EXPECT_FALSE(states[0].pttl_ms.has_value()) << "not read: the record's expiration decides";
  EXPECT_EQ(states[0].value, done) << "the whole value";
  EXPECT_TRUE(states[1].claim);
  EXPECT_EQ(states[1].claim_until_ms, 4102444800000);
  ASSERT_TRUE(states[2].pttl_ms.has_value()) << "no expiration in the record: its key's TTL";
  EXPECT_GT(*states[2].pttl_ms, 490'000);
  EXPECT_EQ(states[3].kind, Kind::Present);
  EXPECT_FALSE(states[3].pttl_ms.has_value()) << "neither an expiration nor a TTL: no expiry";
  EXPECT_TRUE(states[4].unreadable);
  ASSERT_TRUE(states[4].pttl_ms.has_value());
  EXPECT_GT(*states[4].pttl_ms, 390'000);
  EXPECT_EQ(states[5].kind, Kind::Absent) << "no record the library's GET could read";
  EXPECT_EQ(states[6].kind, Kind::Absent);
  EXPECT_EQ(calls_of(redis, "mget"), 1);
  EXPECT_EQ(calls_of(redis, "pttl"), 3) << "p:bare, p:forever, p:text";
  EXPECT_EQ(calls_of(redis, "get"), 0);
}

// replay --repair-lost's release: each key read whole, and deleted only while it still holds exactly
// that value; a value longer than a lookup's 64 bytes is compared whole, and a key rewritten between
// the read and the release is kept.
TEST(RedisRecordRelease, AKeyIsDeletedOnlyWhileItHoldsWhatWasRead) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  connectors::redis::RedisSettings settings;
  settings.uri = core::parse_store_uri(redis.uri());
  std::string long_value(100, 'x');
  ASSERT_EQ(redis.command("SET r:a done"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET r:b " + long_value), "+OK\r\n");
  ASSERT_EQ(redis.command("SET r:c done"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET r:d done"), "+OK\r\n");
  auto records = connectors::redis::open_record_release(settings);
  std::vector<core::RecordState> states;
  records->read({"r:a", "r:b", "r:c", "r:d", "r:none"}, states);
  ASSERT_EQ(states.size(), 5u);
  EXPECT_EQ(states[1].value, long_value) << "read whole, not cut at 64 bytes";
  EXPECT_EQ(states[4].kind, core::RecordState::Kind::Absent);
  // Meanwhile: r:b rewritten past its 64th byte, r:c rewritten.
  ASSERT_EQ(redis.command("SET r:b " + std::string(99, 'x') + "y"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET r:c done-again"), "+OK\r\n");
  std::vector<std::uint8_t> released;
  records->release({1, 1, 1, 0, 1}, released);
  EXPECT_EQ(released, (std::vector<std::uint8_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(redis.command("EXISTS r:a"), ":0\r\n");
  EXPECT_EQ(redis.command("EXISTS r:b"), ":1\r\n");
  EXPECT_EQ(redis.command("GET r:c"), "$10\r\ndone-again\r\n");
  EXPECT_EQ(redis.command("EXISTS r:d"), ":1\r\n") << "not asked";
}
