#include "commands/pipeline/check.hpp"
#include "core/check/check_rules.hpp"
#include "core/check/declarations.hpp"
#include "core/util/errors.hpp"
#include "tests/unit/check/sample_declarations.hpp"
#include "tests/unit/fakes.hpp"

#include <gtest/gtest.h>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::commands::run_check;
using dedupctl::testing::FakeInspector;
using dedupctl::testing::k_file;

namespace {

std::vector<Finding> of(const std::vector<Finding>& findings, const std::string& id, const std::string& subject) {
  std::vector<Finding> out;
  for (const auto& f : findings) {
    if (f.id == id && f.subject == subject) {
      out.push_back(f);
    }
  }
  return out;
}

const char* k_redis_only = R"([[consumer]]
name = "billing"
topic = "orders"
placement = "redis"
store = "redis://cache:6379"
key_template = "dedup:billing:{event_id}"
ttl = "9d"
)";

} // namespace

TEST(CheckRules, EachFindingPointsAtItsDeclaration) {
  auto d = parse_declarations(k_file, "d.toml");
  auto findings = check_consumers(d.consumers, "d.toml");
  auto short_ttl = of(findings, "ttl-shorter-than-retention", "billing");
  ASSERT_EQ(short_ttl.size(), 1u);
  EXPECT_EQ(short_ttl[0].line, 7);
  EXPECT_EQ(short_ttl[0].file, "d.toml");
  EXPECT_EQ(short_ttl[0].severity, Severity::Error);
  EXPECT_EQ(of(findings, "no-expiry", "refunds").size(), 1u);
  EXPECT_EQ(of(findings, "key-template-lacks-event-id", "refunds")[0].line, 16);
  EXPECT_EQ(of(findings, "key-template-uses-offset", "refunds").size(), 1u);
  // "dedup:" is a prefix of "dedup:refunds:": the two consumers share a key space.
  EXPECT_EQ(of(findings, "namespace-shared", "refunds").size(), 1u);
  // 7d <= 8d < 7d + 1h + 1d: thin margin for shipping; invoices shares its inbox without a consumer column.
  EXPECT_EQ(of(findings, "ttl-margin-thin", "shipping").size(), 1u);
  EXPECT_EQ(of(findings, "namespace-shared", "invoices").size(), 1u);
  EXPECT_EQ(of(findings, "memory-placement-for-external-effects", "emails").size(), 1u);
  for (const auto& f : findings) {
    EXPECT_NE(f.subject, "verification") << f.id; // a design placement needs no store
  }
  EXPECT_EQ(findings.front().severity, Severity::Error); // sorted
}

TEST(CheckRules, AConsumerPrefixedByItsNameDoesNotShare) {
  auto d = parse_declarations(std::string(k_redis_only) +
                                  "\n[[consumer]]\nname = \"fraud\"\ntopic = \"orders\"\n"
                                  "placement = \"redis\"\nkey_template = \"dedup:fraud:{event_id}\"\n",
                              "d.toml");
  ASSERT_TRUE(d.errors.empty());
  for (const auto& f : check_consumers(d.consumers, "d.toml")) {
    EXPECT_NE(f.id, "namespace-shared");
  }
}

TEST(CheckLive, TheBrokersRetentionComesThroughTheAdminPath) {
  auto d = parse_declarations(k_redis_only, "d.toml"); // no retention declared
  FakeInspector inspector;
  inspector.retention_answer = TopicRetention{"777600000", "delete", "86400000"}; // 9d + 1d segments
  auto report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_EQ(of(report.findings, "ttl-shorter-than-retention", "billing").size(), 1u); // 9d < 9d + 1d
  EXPECT_EQ(inspector.asked, (std::vector<std::string>{"topic orders", "redis billing"}));
  inspector.retention_answer = TopicRetention{"-1", std::nullopt, std::nullopt};
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_EQ(of(report.findings, "ttl-shorter-than-retention", "billing").size(), 1u); // infinite
  inspector.retention_answer.reset();                                                 // the mock cluster
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_EQ(of(report.findings, "check-unavailable", "billing").size(), 1u);
  EXPECT_TRUE(report.complete) << "Redis could be checked";
  // An answer without retention.ms is not a broker that did not answer.
  inspector.retention_answer = TopicRetention{std::nullopt, "delete", std::nullopt};
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  auto unknown = of(report.findings, "check-unavailable", "billing");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].title, "billing: the retention of topic 'orders' could not be checked: the broker's configs for "
                              "orders have no retention.ms");
}

TEST(CheckLive, RedisSettingsBecomeFindings) {
  auto d = parse_declarations(std::string(k_redis_only) + "retention = \"7d\"\n", "d.toml");
  FakeInspector inspector;
  inspector.redis_answer = core::LiveInspector::Redis{"allkeys-lru", false, 10, 3, std::nullopt, "", ""};
  auto report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  auto eviction = of(report.findings, "eviction-policy-unsafe", "billing");
  ASSERT_EQ(eviction.size(), 1u);
  EXPECT_EQ(eviction[0].severity, Severity::Error);
  EXPECT_EQ(of(report.findings, "persistence-off", "billing").size(), 1u);
  EXPECT_NE(of(report.findings, "no-expiry", "billing")[0].title.find("3 of 10 sampled keys"), std::string::npos);
  inspector.redis_answer = core::LiveInspector::Redis{"volatile-lru", true, 10, 0, std::nullopt, "", ""};
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_EQ(of(report.findings, "eviction-policy-unsafe", "billing")[0].severity, Severity::Warning);
  EXPECT_TRUE(of(report.findings, "persistence-off", "billing").empty());
  inspector.redis_answer = core::LiveInspector::Redis{"noeviction", true, 10, 0, 9 * 86'400'000LL, "", ""};
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_TRUE(report.findings.empty());
  // A record with more time left than the declared ttl: the declaration is not what the consumer writes.
  inspector.redis_answer.max_pttl_ms = 30 * 86'400'000LL;
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  auto mismatch = of(report.findings, "ttl-declaration-mismatch", "billing");
  ASSERT_EQ(mismatch.size(), 1u);
  EXPECT_EQ(mismatch[0].line, 7);
  EXPECT_EQ(report.exit_code, 0);
}

TEST(CheckLive, InboxSchemaAndConstraint) {
  auto d = parse_declarations("[[consumer]]\nname = \"shipping\"\ntopic = \"orders\"\nplacement = \"postgres\"\n"
                              "store = \"postgres://db/x\"\ninbox_retention = \"9d\"\nretention = \"7d\"\n",
                              "d.toml");
  FakeInspector inspector;
  inspector.inbox_answer = core::LiveInspector::Inbox{true, {"event_id", "consumer_name", "processed_at"}, false};
  auto report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_EQ(of(report.findings, "inbox-without-unique-constraint", "shipping").size(), 1u);
  inspector.inbox_answer.unique_over_id = true;
  EXPECT_TRUE(run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0).findings.empty());
  inspector.inbox_answer.columns = {"id", "processed_at"};
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  auto mismatch = of(report.findings, "inbox-schema-mismatch", "shipping");
  ASSERT_EQ(mismatch.size(), 2u); // event_id and consumer_name
  EXPECT_NE(mismatch[0].title.find("(it has id, processed_at)"), std::string::npos);
  inspector.inbox_answer.table_exists = false;
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_NE(of(report.findings, "inbox-schema-mismatch", "shipping")[0].title.find("does not exist"),
            std::string::npos);
}

TEST(CheckLive, NothingReachableIsIncompleteExit3) {
  auto d = parse_declarations(k_redis_only, "d.toml");
  FakeInspector inspector;
  inspector.topic_unreachable = true;
  inspector.redis_unreachable = true;
  auto report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_FALSE(report.complete);
  EXPECT_EQ(report.exit_code, 3);
  EXPECT_EQ(of(report.findings, "check-unavailable", "billing").size(), 2u);
}

// A cluster is as safe as its worst master, and the finding names that master.
TEST(CheckLive, AClusterIsJudgedByItsWorstMaster) {
  using core::RedisNodeFacts;
  auto worst = core::worst_redis_node({RedisNodeFacts{"n1:7000", "noeviction", true},
                                       RedisNodeFacts{"n2:7001", "volatile-lru", true},
                                       RedisNodeFacts{"n3:7002", "noeviction", false}});
  EXPECT_EQ(worst.maxmemory_policy, "volatile-lru");
  EXPECT_EQ(worst.policy_node, "n2:7001");
  EXPECT_EQ(worst.persistence, false);
  EXPECT_EQ(worst.persistence_node, "n3:7002");
  auto alike = core::worst_redis_node(
      {RedisNodeFacts{"n1:7000", "allkeys-lru", false}, RedisNodeFacts{"n2:7001", "allkeys-lru", false}});
  EXPECT_EQ(alike.maxmemory_policy, "allkeys-lru");
  EXPECT_EQ(alike.policy_node, "") << "no master stands out";
  EXPECT_EQ(alike.persistence_node, "");
  auto unknown = core::worst_redis_node({RedisNodeFacts{"n1:7000", std::nullopt, std::nullopt}});
  EXPECT_FALSE(unknown.maxmemory_policy);
  EXPECT_FALSE(unknown.persistence);

  auto d = parse_declarations(std::string(k_redis_only) + "retention = \"7d\"\n", "d.toml");
  FakeInspector inspector;
  inspector.redis_answer = core::LiveInspector::Redis{"volatile-lru", false, 10, 0, std::nullopt, "n2:7001", "n3:7002"};
  auto report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  auto eviction = of(report.findings, "eviction-policy-unsafe", "billing");
  ASSERT_EQ(eviction.size(), 1u);
  EXPECT_NE(eviction[0].title.find("volatile-lru on master n2:7001"), std::string::npos) << eviction[0].title;
  auto persistence = of(report.findings, "persistence-off", "billing");
  ASSERT_EQ(persistence.size(), 1u);
  EXPECT_NE(persistence[0].title.find("Redis on master n3:7002 keeps no"), std::string::npos) << persistence[0].title;
}

namespace {

std::vector<Finding> check_text(const std::string& text) {
  auto d = parse_declarations(text, "l.toml");
  EXPECT_TRUE(d.errors.empty()) << (d.errors.empty() ? "" : d.errors[0].message);
  return check_consumers(d.consumers, "l.toml");
}

} // namespace

// A declaration naming a library's layout is checked as that library writes: Powertools' key from its
// prefix, and with no ttl declared, its default expires_after_seconds (1h), far short of a week's log.
TEST(CheckRules, APowertoolsLayoutDerivesItsKeyAndDefaultsToTheLibrarysHour) {
  auto d = parse_declarations("[[consumer]]\nname = \"pay\"\ntopic = \"payments\"\nplacement = \"redis\"\n"
                              "layout = \"powertools-python\"\nkey_prefix = \"svc.__main__.charge\"\n"
                              "retention = \"7d\"\n",
                              "l.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors[0].message;
  ASSERT_EQ(d.consumers.size(), 1u);
  EXPECT_EQ(d.consumers[0].layout.name, "powertools-python");
  EXPECT_EQ(d.consumers[0].key_template, "svc.__main__.charge#{event_id|json-ascii|md5}");
  auto findings = check_consumers(d.consumers, "l.toml");
  auto short_ttl = of(findings, "ttl-shorter-than-retention", "pay");
  ASSERT_EQ(short_ttl.size(), 1u);
  EXPECT_NE(short_ttl[0].title.find("Powertools' default"), std::string::npos) << short_ttl[0].title;
  EXPECT_EQ(short_ttl[0].line, 5); // the layout line: no ttl was written
  EXPECT_TRUE(of(findings, "ttl-unknown", "pay").empty());
  // A ttl written is the one checked.
  auto declared = check_text("[[consumer]]\nname = \"pay\"\ntopic = \"payments\"\nplacement = \"redis\"\n"
                             "layout = \"powertools-typescript\"\nkey_prefix = \"charge\"\nretention = \"7d\"\n"
                             "ttl = \"9d\"\n");
  EXPECT_TRUE(of(declared, "ttl-shorter-than-retention", "pay").empty());
  EXPECT_TRUE(of(declared, "ttl-margin-thin", "pay").empty());
}

// Spring's hash and Camel's set keep every id in one key for ever: no-expiry without a ttl declared,
// the one key named.
TEST(CheckRules, OneKeyLayoutsNeverExpireAndSayWhichKey) {
  auto findings = check_text("[[consumer]]\nname = \"meta\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                             "layout = \"spring-hash\"\nretention = \"7d\"\n\n"
                             "[[consumer]]\nname = \"camel\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                             "layout = \"camel-set\"\ncollection = \"orders\"\nretention = \"7d\"\n");
  auto spring = of(findings, "no-expiry", "meta");
  ASSERT_EQ(spring.size(), 1u);
  EXPECT_NE(spring[0].title.find("MetaData"), std::string::npos) << spring[0].title;
  EXPECT_EQ(spring[0].line, 5);
  auto camel = of(findings, "no-expiry", "camel");
  ASSERT_EQ(camel.size(), 1u);
  EXPECT_NE(camel[0].title.find("orders"), std::string::npos) << camel[0].title;
  EXPECT_TRUE(of(findings, "ttl-unknown", "meta").empty());
  EXPECT_TRUE(of(findings, "ttl-shorter-than-retention", "meta").empty());
  // Both have a key template of their own: no key-template finding, and one key each is not a shared space.
  EXPECT_TRUE(of(findings, "namespace-shared", "camel").empty());
  EXPECT_TRUE(of(findings, "key-template-lacks-event-id", "meta").empty());
}

// An inbox layout gives the library's table and columns; what is written overrides them.
TEST(CheckRules, AnInboxLayoutGivesTheLibrarysTable) {
  auto d = parse_declarations("[[consumer]]\nname = \"ev\"\ntopic = \"t\"\nplacement = \"postgres\"\n"
                              "layout = \"eventuate\"\n\n"
                              "[[consumer]]\nname = \"mt\"\ntopic = \"t\"\nplacement = \"postgres\"\n"
                              "layout = \"masstransit\"\ninbox_table = \"billing.\\\"InboxState\\\"\"\n",
                              "l.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors[0].message;
  EXPECT_EQ(d.consumers[0].inbox_table, "eventuate.received_messages") << "the schema Eventuate Tram creates it in";
  EXPECT_EQ(d.consumers[0].inbox_id_column, "message_id");
  EXPECT_EQ(d.consumers[0].inbox_consumer_column, "consumer_id");
  EXPECT_EQ(d.consumers[0].inbox_time_column, "creation_time");
  EXPECT_EQ(d.consumers[1].inbox_table, "billing.\"InboxState\"");
  EXPECT_EQ(d.consumers[1].inbox_id_column, "MessageId");
  EXPECT_EQ(d.consumers[1].layout.inbox_schema.in_progress_column, "Consumed");
}

// A layout that is not one, or that does not fit the placement, or lacks what it needs, is an error
// at its line, naming what to write.
TEST(CheckRules, LayoutErrorsPointAtTheLayout) {
  auto d = parse_declarations("[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "layout = \"powertools\"\n\n"
                              "[[consumer]]\nname = \"b\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "layout = \"eventuate\"\n\n"
                              "[[consumer]]\nname = \"c\"\ntopic = \"t\"\nplacement = \"postgres\"\n"
                              "layout = \"powertools-python\"\nkey_prefix = \"p\"\n\n"
                              "[[consumer]]\nname = \"d\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "layout = \"powertools-python\"\n\n"
                              "[[consumer]]\nname = \"e\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "layout = \"spring-hash\"\nttl = \"7d\"\n\n"
                              "[[consumer]]\nname = \"f\"\ntopic = \"t\"\nplacement = \"postgres\"\n"
                              "layout = \"nservicebus\"\n",
                              "l.toml");
  ASSERT_EQ(d.errors.size(), 6u);
  EXPECT_EQ(d.errors[0].at.line, 5);
  EXPECT_NE(d.errors[0].message.find("powertools-python"), std::string::npos) << d.errors[0].message; // the list
  EXPECT_EQ(d.errors[1].at.line, 11);
  EXPECT_NE(d.errors[1].message.find("placement = \"postgres\""), std::string::npos) << d.errors[1].message;
  EXPECT_EQ(d.errors[2].at.line, 17);
  EXPECT_NE(d.errors[2].message.find("placement = \"redis\""), std::string::npos) << d.errors[2].message;
  EXPECT_EQ(d.errors[3].at.line, 24);
  EXPECT_NE(d.errors[3].message.find("key_prefix"), std::string::npos) << d.errors[3].message;
  EXPECT_EQ(d.errors[4].at.line, 31);
  EXPECT_NE(d.errors[4].message.find("never expire"), std::string::npos) << d.errors[4].message;
  EXPECT_EQ(d.errors[5].at.line, 37);
  EXPECT_NE(d.errors[5].message.find("inbox_table"), std::string::npos) << d.errors[5].message;
}

// --live samples a template's keys; a one-key layout has one key, which says nothing per record.
TEST(CheckRules, LiveSamplingFollowsTheLayout) {
  auto d = parse_declarations("[[consumer]]\nname = \"pay\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "layout = \"powertools-python\"\nkey_prefix = \"a*b\"\n\n"
                              "[[consumer]]\nname = \"meta\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "layout = \"spring-hash\"\n",
                              "l.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors[0].message;
  EXPECT_EQ(commands::key_pattern(d.consumers[0]), "a\\*b#*");
  EXPECT_EQ(commands::key_pattern(d.consumers[1]), "MetaData");
  auto camel = parse_declarations("[[consumer]]\nname = \"c\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                                  "layout = \"camel-string\"\nkey_prefix = \"orders\"\n",
                                  "l.toml");
  ASSERT_TRUE(camel.errors.empty()) << camel.errors[0].message;
  EXPECT_EQ(commands::key_pattern(camel.consumers[0]), std::string("\xac\xed\x00\x05t??orders:*", 15))
      << "the Java-serialized key: its header and length, then the text";
}

// A prefix or a collection where the layout has none (or no layout at all) is an error at its line.
TEST(CheckRules, APrefixOrACollectionTheLayoutHasNoUseForIsAnError) {
  auto d = parse_declarations("[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "key_template = \"d:{event_id}\"\nkey_prefix = \"p\"\n\n"
                              "[[consumer]]\nname = \"b\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "layout = \"spring-hash\"\nkey_prefix = \"p\"\n\n"
                              "[[consumer]]\nname = \"c\"\ntopic = \"t\"\nplacement = \"redis\"\n"
                              "layout = \"powertools-python\"\nkey_prefix = \"p\"\ncollection = \"x\"\n",
                              "l.toml");
  ASSERT_EQ(d.errors.size(), 3u);
  EXPECT_EQ(d.errors[0].at.line, 6);
  EXPECT_NE(d.errors[0].message.find("'key_prefix' goes with a layout"), std::string::npos) << d.errors[0].message;
  EXPECT_EQ(d.errors[1].at.line, 13);
  EXPECT_NE(d.errors[1].message.find("without a prefix: leave key_prefix out"), std::string::npos)
      << d.errors[1].message;
  EXPECT_EQ(d.errors[2].at.line, 21);
  EXPECT_NE(d.errors[2].message.find("keeps a key per id; collection is for"), std::string::npos)
      << d.errors[2].message;
}

TEST(CheckLive, ADynamoTablesTtlAndReadCostBecomeFindings) {
  auto d =
      parse_declarations("[[consumer]]\nname = \"billing\"\ntopic = \"orders\"\nplacement = \"dynamodb\"\n"
                         "store = \"dynamodb://IdempotencyTable\"\nlayout = \"powertools-python\"\n"
                         "key_prefix = \"billing.charge\"\nttl = \"8d\"\nretention = \"7d\"\nmax_read_units = 1000\n",
                         "d.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors[0].message;
  FakeInspector inspector;
  inspector.dynamo_answer = core::LiveInspector::Dynamo{"ENABLED", "expiration", 4096 * 100, 1000};
  auto report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  EXPECT_EQ(inspector.asked, (std::vector<std::string>{"dynamodb billing"}));
  EXPECT_TRUE(report.findings.empty()) << report.findings[0].title;
  inspector.dynamo_answer = core::LiveInspector::Dynamo{"DISABLED", "", 4096 * 100, 1000};
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  ASSERT_EQ(of(report.findings, "dynamodb-ttl-disabled", "billing").size(), 1u);
  inspector.dynamo_answer = core::LiveInspector::Dynamo{"ENABLED", "ttl", 4096 * 4000, 90000};
  report = run_check(d, "d.toml", &inspector, parse_fail_on("error"), "error", 0);
  auto attribute = of(report.findings, "dynamodb-ttl-attribute", "billing");
  ASSERT_EQ(attribute.size(), 1u);
  EXPECT_EQ(attribute[0].severity, Severity::Error);
  auto cost = of(report.findings, "dynamodb-read-cost", "billing");
  ASSERT_EQ(cost.size(), 1u);
  EXPECT_NE(cost[0].title.find("about 2000 read units (90000 items, 16384000 bytes), more than max_read_units = 1000"),
            std::string::npos)
      << cost[0].title;
  EXPECT_EQ(cost[0].line, 10);
}

// A version guard (issue 63) keeps no dedup record: no TTL, expiry or key-template rule applies to
// its projection; the declaration is accepted and says where its risks are checked.
TEST(CheckRules, AVersionGuardIsDeclaredWithoutTheRecordRules) {
  auto d = parse_declarations(R"([[consumer]]
name = "projector"
topic = "orders"
placement = "postgres"
store = "postgres://db/shop"
layout = "version-guard"
inbox_table = "orders"

[[consumer]]
name = "cache"
topic = "orders"
placement = "redis"
store = "redis://cache:6379"
layout = "version-guard"
key_template = "order:{entity}"
)",
                              "d.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors.front().message;
  auto findings = check_consumers(d.consumers, "d.toml");
  ASSERT_EQ(findings.size(), 2u);
  for (const auto& f : findings) {
    EXPECT_EQ(f.id, "version-guard-declared") << f.subject;
    EXPECT_EQ(f.severity, Severity::Info);
    EXPECT_EQ(f.line, 6 + (f.subject == "cache" ? 8 : 0));
  }
  auto wrong = parse_declarations(
      "[[consumer]]\nname = \"p\"\ntopic = \"orders\"\nplacement = \"memory\"\nlayout = \"version-guard\"\n", "d.toml");
  ASSERT_EQ(wrong.errors.size(), 1u);
  EXPECT_NE(wrong.errors[0].message.find("write placement = \"postgres\" (with inbox_table)"), std::string::npos)
      << wrong.errors[0].message;
  auto no_table = parse_declarations(
      "[[consumer]]\nname = \"p\"\ntopic = \"orders\"\nplacement = \"postgres\"\nlayout = \"version-guard\"\n",
      "d.toml");
  ASSERT_FALSE(no_table.errors.empty());
  EXPECT_NE(no_table.errors[0].message.find("write inbox_table = \"orders\""), std::string::npos)
      << no_table.errors[0].message;
}

// A state-transition guard is declared as a version guard is, and said to be one.
TEST(CheckRules, AStateGuardIsDeclaredWithoutTheRecordRulesAndSaidToBeOne) {
  auto d = parse_declarations(R"([[consumer]]
name = "fulfilment"
topic = "orders"
placement = "postgres"
store = "postgres://db/shop"
layout = "state-guard"
inbox_table = "orders"
)",
                              "d.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors.front().message;
  auto findings = check_consumers(d.consumers, "d.toml");
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].id, "state-guard-declared");
  EXPECT_NE(findings[0].title.find("state-transition guard"), std::string::npos) << findings[0].title;
  auto wrong = parse_declarations(
      "[[consumer]]\nname = \"p\"\ntopic = \"orders\"\nplacement = \"memory\"\nlayout = \"state-guard\"\n", "d.toml");
  ASSERT_EQ(wrong.errors.size(), 1u);
  EXPECT_NE(wrong.errors[0].message.find("layout 'state-guard' reads the handler's projection"), std::string::npos)
      << wrong.errors[0].message;
}

// A Kafka Streams store: its retention (ttl) against the topic's and each declared seek, and a lookup by
// stream time; the layout is the window store unless written, and a window store's layout needs kstreams.
TEST(CheckRules, AWindowStoresRetentionIsCheckedAgainstTheTopicAndTheSeeks) {
  const char* text = R"([[consumer]]
name = "orders-dedup"
topic = "orders"
placement = "kstreams"
store = "kstreams://orders-dedup/eventId-store"
ttl = "1h"
retention = "7d"
lookup_window = "10m"
lookup_time = "stream"
seeks = ["30m", "6h"]
)";
  auto d = parse_declarations(text, "k.toml");
  ASSERT_TRUE(d.errors.empty()) << d.errors.front().message;
  ASSERT_EQ(d.consumers.size(), 1u);
  EXPECT_EQ(d.consumers[0].layout.name, "kstreams-window");
  EXPECT_EQ(d.consumers[0].lookup_window_ms, 600'000);
  auto findings = check_consumers(d.consumers, "k.toml");
  auto shorter = of(findings, "ttl-shorter-than-retention", "orders-dedup");
  ASSERT_EQ(shorter.size(), 1u);
  EXPECT_EQ(shorter[0].line, 6);
  EXPECT_NE(shorter[0].title.find("window store's retention (ttl, 1h) is shorter than the topic's retention (7d)"),
            std::string::npos)
      << shorter[0].title;
  auto beyond = of(findings, "seek-beyond-store-retention", "orders-dedup");
  ASSERT_EQ(beyond.size(), 1u) << "30m is inside the hour; 6h is not";
  EXPECT_EQ(beyond[0].line, 10);
  EXPECT_EQ(beyond[0].severity, Severity::Error);
  EXPECT_NE(beyond[0].title.find("a seek of 6h reaches past the window store's retention (1h)"), std::string::npos)
      << beyond[0].title;
  auto stream = of(findings, "stream-time-lookup", "orders-dedup");
  ASSERT_EQ(stream.size(), 1u);
  EXPECT_EQ(stream[0].severity, Severity::Warning);
  EXPECT_EQ(stream[0].line, 9);

  // By record time, with a store that outlives the topic and every seek: nothing to say.
  const char* fine = R"([[consumer]]
name = "ok"
topic = "orders"
placement = "kstreams"
ttl = "9d"
retention = "7d"
seeks = ["6h"]
)";
  auto f = parse_declarations(fine, "k.toml");
  ASSERT_TRUE(f.errors.empty());
  EXPECT_TRUE(check_consumers(f.consumers, "k.toml").empty());
}

TEST(CheckRules, AKafkaStreamsDeclarationsMistakesAreNamed) {
  auto errors_of = [](const char* text) {
    std::string out;
    for (const auto& e : parse_declarations(text, "k.toml").errors) {
      out += e.message + "\n";
    }
    return out;
  };
  EXPECT_NE(
      errors_of("[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacement = \"redis\"\nlayout = \"kstreams-window\"\n")
          .find("layout 'kstreams-window' is a Kafka Streams store: write placement = \"kstreams\""),
      std::string::npos);
  EXPECT_NE(errors_of("[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacement = \"kstreams\"\nlayout = \"plain\"\n")
                .find("layout 'plain' on kstreams"),
            std::string::npos);
  EXPECT_NE(errors_of("[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacement = \"kstreams\"\nlookup_time = \"wall\"\n")
                .find("'lookup_time' is 'wall'; expected record or stream"),
            std::string::npos);
  EXPECT_NE(errors_of("[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacement = \"kstreams\"\nseeks = \"6h\"\n")
                .find("'seeks' is a list of durations"),
            std::string::npos);
  EXPECT_NE(errors_of("[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacement = \"kstreams\"\nseeks = [\"soon\"]\n")
                .find("'seeks' holds durations"),
            std::string::npos);
}
