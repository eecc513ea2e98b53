// dedupctl check end to end: the bundled declarations, file errors, every format's exit code, and
// --live against a real redis-server, a real PostgreSQL and the mock broker.
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

const std::string k_example = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/dedupctl.toml";

std::map<std::string, std::string> ids_by_subject(const Json& doc) {
  std::map<std::string, std::string> out;
  for (const auto& f : doc.at("findings")) {
    std::string subject = f.value("subject", "");
    out[f.at("id").get<std::string>() + "/" + subject] = f.at("severity");
  }
  return out;
}

} // namespace

TEST(CliCheck, TheBundledDeclarationsFailOnTheShortInboxRetention) {
  auto result = run_dedupctl({"check", k_example, "-o", "json"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("summary").at("consumers"), 4);
  EXPECT_EQ(ids_by_subject(doc), (std::map<std::string, std::string>{{"ttl-shorter-than-retention/shipping", "error"},
                                                                     {"ttl-margin-thin/billing", "warning"}}));
  const auto& location = doc.at("findings")[0].at("location");
  EXPECT_EQ(location.at("file"), k_example);
  EXPECT_EQ(location.at("line"), 30);
}

// -X takes exactly one value, as in kcat: the file after it is the file to check, not a second
// property (it was swallowed, and check said "file is required").
TEST(CliCheck, DashXTakesOneValueAndLeavesTheFileToCheck) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"check", "-X", "client.id=ci", k_example, "-o", "json"},
        std::vector<std::string>{"check", "-X", "client.id=ci", "-X", "socket.timeout.ms=5000", k_example, "-o",
                                 "json"}}) {
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_EQ(result.err.find("file is required"), std::string::npos) << result.err;
    EXPECT_EQ(Json::parse(result.out).at("summary").at("consumers"), 4) << result.out;
  }
}

TEST(CliCheck, TheExitCodeIsTheSameWhateverTheFormat) {
  for (const std::string format : {"text", "json", "markdown", "sarif", "junit", "github", "gitlab", "html"}) {
    EXPECT_EQ(run_dedupctl({"check", k_example, "-o", format}).exit_code, 1) << format;
    EXPECT_EQ(run_dedupctl({"check", k_example, "-o", format, "--fail-on", "none"}).exit_code, 0) << format;
  }
  EXPECT_EQ(run_dedupctl({"check", k_example, "-o", "pdf"}).exit_code, 2);
}

TEST(CliCheck, EveryErrorOfABadFileIsListedWithItsPositionAndExit2) {
  TempDir dir;
  write_file(dir.file("bad.toml"), "[[consumer]]\nname = \"a\"\ntopic = 5\nplacment = \"redis\"\nttl = \"7 days\"\n");
  auto result = run_dedupctl({"check", dir.file("bad.toml")});
  EXPECT_EQ(result.exit_code, 2);
  for (const std::string& expected :
       {dir.file("bad.toml") + ":1:1: error: consumer 'a' has no 'placement'",
        dir.file("bad.toml") + ":3:9: error: 'topic' must be a string",
        dir.file("bad.toml") + ":4:1: error: unknown key 'placment'",
        dir.file("bad.toml") + ":5:7: error: 'ttl' is \"7 days\"", std::string("has 4 errors")}) {
    EXPECT_NE(result.err.find(expected), std::string::npos) << expected << "\n" << result.err;
  }
  EXPECT_TRUE(result.out.empty());
  EXPECT_EQ(run_dedupctl({"check", dir.file("missing.toml")}).exit_code, 2);
}

TEST(CliCheckLive, RedisEvictionPersistenceAndKeysWithoutTtl) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_EQ(redis.command("CONFIG SET maxmemory-policy allkeys-lru"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET dedup:billing:e-1 done"), "+OK\r\n"); // no TTL
  ASSERT_EQ(redis.command("SET dedup:billing:e-2 done PX 600000"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET other:key x"), "+OK\r\n");
  TempDir dir;
  write_file(dir.file("d.toml"),
             fmt::format("[[consumer]]\nname = \"billing\"\ntopic = \"orders\"\nplacement = \"redis\"\n"
                         "store = \"{}\"\nkey_template = \"dedup:billing:{{event_id}}\"\nttl = \"9d\"\n"
                         "retention = \"7d\"\n",
                         redis.uri()));
  auto result = run_dedupctl({"check", "--live", dir.file("d.toml"), "-o", "json"});
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(ids_by_subject(doc), (std::map<std::string, std::string>{{"eviction-policy-unsafe/billing", "error"},
                                                                     {"persistence-off/billing", "warning"},
                                                                     {"no-expiry/billing", "warning"}}));
  for (const auto& f : doc.at("findings")) {
    if (f.at("id") == "no-expiry") {
      EXPECT_NE(f.at("title").get<std::string>().find("1 of 2 sampled keys"), std::string::npos) << f.at("title");
    }
  }
  // A safe Redis passes.
  ASSERT_EQ(redis.command("CONFIG SET maxmemory-policy noeviction"), "+OK\r\n");
  ASSERT_EQ(redis.command("CONFIG SET appendonly yes"), "+OK\r\n");
  ASSERT_EQ(redis.command("PEXPIRE dedup:billing:e-1 600000"), ":1\r\n");
  auto safe = run_dedupctl({"check", "--live", dir.file("d.toml"), "-o", "json"});
  EXPECT_EQ(safe.exit_code, 0) << safe.out;
}

TEST(CliCheckLive, PostgresUniqueConstraintAndColumns) {
  PostgresServer pg;
  DEDUPCTL_REQUIRE_SERVER(pg.available(), pg.why_unavailable());
  ASSERT_EQ(pg.psql("CREATE TABLE inbox (event_id text, consumer_name text, processed_at timestamptz)").exit_code, 0);
  TempDir dir;
  auto declare = [&](const std::string& table, const std::string& extra) {
    write_file(dir.file("d.toml"),
               fmt::format("[[consumer]]\nname = \"shipping\"\ntopic = \"orders\"\nplacement = \"postgres\"\n"
                           "store = \"{}\"\ninbox_table = \"{}\"\ninbox_retention = \"9d\"\nretention = \"7d\"\n{}",
                           pg.conninfo(), table, extra));
  };
  declare("inbox", "");
  auto doc = Json::parse(run_dedupctl({"check", "--live", dir.file("d.toml"), "-o", "json"}).out);
  EXPECT_EQ(ids_by_subject(doc),
            (std::map<std::string, std::string>{{"inbox-without-unique-constraint/shipping", "error"}}));
  ASSERT_EQ(pg.psql("CREATE UNIQUE INDEX ON inbox (consumer_name, event_id)").exit_code, 0);
  auto fixed = run_dedupctl({"check", "--live", dir.file("d.toml"), "-o", "json"});
  EXPECT_EQ(fixed.exit_code, 0) << fixed.out;
  declare("inbox", "inbox_status_column = \"status\"\n");
  auto missing_column = Json::parse(run_dedupctl({"check", "--live", dir.file("d.toml"), "-o", "json"}).out);
  EXPECT_NE(missing_column.at("findings")[0].at("title").get<std::string>().find(
                "has no column status (it has event_id, consumer_name, processed_at)"),
            std::string::npos);
  declare("public.no_such_table", "");
  auto no_table = Json::parse(run_dedupctl({"check", "--live", dir.file("d.toml"), "-o", "json"}).out);
  EXPECT_EQ(no_table.at("findings")[0].at("id"), "inbox-schema-mismatch");
}

TEST(CliCheckLive, UnreachableSystemsAreFindingsAndNothingReachableIsExit3) {
  MockBroker broker({"orders:1"});
  TempDir dir;
  write_file(dir.file("d.toml"),
             fmt::format("[[consumer]]\nname = \"billing\"\ntopic = \"orders\"\nplacement = \"redis\"\n"
                         "store = \"redis://127.0.0.1:{}\"\nkey_template = \"dedup:{{event_id}}\"\n"
                         "ttl = \"9d\"\n",
                         free_port()));
  // The mock cannot answer DescribeConfigs and nothing listens for Redis: nothing could be checked.
  auto result = run_dedupctl({"check", "--live", "-b", broker.bootstrap(), dir.file("d.toml"), "-o", "json"});
  EXPECT_EQ(result.exit_code, 3) << result.out;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("complete"), false);
  EXPECT_EQ(ids_by_subject(doc).count("check-unavailable/billing"), 1u);
}

// Declarations naming libraries' layouts, checked live: Powertools' keys sampled under its prefix
// (its ":lock" keys among them, with their own TTL), Spring's one hash judged by the layout rather
// than sampled; the inbox layouts' tables and quoted columns found as the libraries create them.
TEST(CliCheckLive, LayoutsAreCheckedAsTheLibrariesWrite) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  PostgresServer pg;
  DEDUPCTL_REQUIRE_SERVER(pg.available(), pg.why_unavailable());
  ASSERT_EQ(redis.command("CONFIG SET appendonly yes"), "+OK\r\n");
  ASSERT_EQ(redis.command("SET svc#aa2b56c31f631001b05ed4402549aafd '{\"status\":\"COMPLETED\"}' EX 777600"),
            "+OK\r\n");
  ASSERT_EQ(redis.command("SET svc#aa2b56c31f631001b05ed4402549aafd:lock true EX 10"), "+OK\r\n");
  ASSERT_EQ(redis.command("HSET MetaData evt-1 1795786311000"), ":1\r\n");
  ASSERT_EQ(pg.psql("CREATE SCHEMA eventuate; CREATE TABLE eventuate.received_messages (consumer_id varchar(1000), "
                    "message_id varchar(1000), creation_time bigint, PRIMARY KEY (consumer_id, message_id))")
                .exit_code,
            0);
  ASSERT_EQ(pg.psql("CREATE TABLE \"InboxState\" (\"Id\" bigserial PRIMARY KEY, \"MessageId\" uuid NOT NULL, "
                    "\"ConsumerId\" uuid NOT NULL, \"Received\" timestamp NOT NULL, \"Consumed\" timestamp)")
                .exit_code,
            0);
  TempDir dir;
  write_file(dir.file("d.toml"),
             fmt::format("[[consumer]]\nname = \"pay\"\ntopic = \"payments\"\nplacement = \"redis\"\nstore = \"{0}\"\n"
                         "layout = \"powertools-python\"\nkey_prefix = \"svc\"\nttl = \"9d\"\nretention = \"7d\"\n\n"
                         "[[consumer]]\nname = \"meta\"\ntopic = \"t\"\nplacement = \"redis\"\nstore = \"{0}\"\n"
                         "layout = \"spring-hash\"\nretention = \"7d\"\n\n"
                         "[[consumer]]\nname = \"ev\"\ntopic = \"t\"\nplacement = \"postgres\"\nstore = \"{1}\"\n"
                         "layout = \"eventuate\"\ninbox_retention = \"9d\"\nretention = \"7d\"\n\n"
                         "[[consumer]]\nname = \"mt\"\ntopic = \"t\"\nplacement = \"postgres\"\nstore = \"{1}\"\n"
                         "layout = \"masstransit\"\ninbox_retention = \"9d\"\nretention = \"7d\"\n",
                         redis.uri(), pg.conninfo()));
  auto result = run_dedupctl({"check", "--live", dir.file("d.toml"), "-o", "json"});
  auto doc = Json::parse(result.out);
  // pay's sampled keys all expire; meta's hash never does (once, from the layout); MassTransit's
  // InboxState has no unique index over ("ConsumerId", "MessageId") here, Eventuate's has its key.
  EXPECT_EQ(ids_by_subject(doc), (std::map<std::string, std::string>{{"no-expiry/meta", "warning"},
                                                                     {"inbox-without-unique-constraint/mt", "error"}}))
      << result.out;
  EXPECT_EQ(doc.at("summary").at("live_checks_failed"), 0) << result.out;
  ASSERT_EQ(pg.psql("CREATE UNIQUE INDEX ON \"InboxState\" (\"MessageId\", \"ConsumerId\")").exit_code, 0);
  ASSERT_EQ(redis.command("SET svc#0123 '{\"status\":\"INPROGRESS\"}'"), "+OK\r\n"); // written without EX
  auto again = Json::parse(run_dedupctl({"check", "--live", dir.file("d.toml"), "-o", "json"}).out);
  auto ids = ids_by_subject(again);
  EXPECT_FALSE(ids.count("inbox-without-unique-constraint/mt"));
  EXPECT_EQ(ids["no-expiry/pay"], "warning");
}

// A chain of tiers: a window and Redis's hour are info where the inbox keeps the records 30 days;
// the gate fails when no tier keeps them through the retention. Each tier is a consumer of its own.
TEST(CliCheck, AChainOfTiersFailsOnlyWhenNoTierKeepsTheRecords) {
  TempDir dir;
  auto declare = [&](const std::string& inbox) {
    std::string path = dir.file("tiers-" + inbox + ".toml");
    write_file(path, R"([[consumer]]
name = "billing"
topic = "orders"
retention = "7d"

[[consumer.tier]]
placement = "memory"

[[consumer.tier]]
placement = "redis"
store = "redis://cache:6379"
key_template = "dedup:billing:{event_id}"
ttl = "1h"

[[consumer.tier]]
placement = "postgres"
store = "postgres://db/app"
inbox_retention = ")" + inbox +
                         "\"\n");
    return path;
  };
  auto kept = run_dedupctl({"check", declare("30d"), "-o", "json"});
  EXPECT_EQ(kept.exit_code, 0) << kept.err;
  auto doc = Json::parse(kept.out);
  EXPECT_EQ(doc.at("summary").at("consumers"), 3);
  EXPECT_EQ(ids_by_subject(doc), (std::map<std::string, std::string>{{"tier-gap-covered/billing (tier 1)", "info"},
                                                                     {"tier-gap-covered/billing (tier 2)", "info"}}));
  auto short_inbox = run_dedupctl({"check", declare("2d"), "-o", "json"});
  EXPECT_EQ(short_inbox.exit_code, 1) << short_inbox.err;
  auto failed = ids_by_subject(Json::parse(short_inbox.out));
  EXPECT_EQ(failed.at("ttl-shorter-than-retention/billing (tier 2)"), "error");
  EXPECT_EQ(failed.at("ttl-shorter-than-retention/billing (tier 3)"), "error");
}
