// Reality check of a version guard (issue 63): a consumer that keeps no dedup record applies each
// event only if its version is above its entity's in the projection (tests/support/libraries/
// guard_consumer.py: a PostgreSQL upsert guarded by `WHERE orders.version < EXCLUDED.version`, or a
// Redis key per entity set by a script). Entities keyed in two partitions and a producer that
// reorders: the changes the consumer drops are exactly scan's version-regression. Then the projection
// goes back (a restore from an older backup), the group seeks to the start, the consumer runs again,
// and the rows it changes are exactly the audit's seek preview.
#include "tests/real-kafka/guard_helpers.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/schema_registry.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

struct Change {
  std::int32_t partition;
  std::string order;
  int version;
};

// Three phases, each produced and then consumed to its end, so that the consumer meets them in
// timestamp order across partitions, as the audit estimates. Within a phase an entity keeps one
// partition. o-2's producer reorders (3 before 2); o-3's version 1 comes after its version 2 from
// another partition.
const std::vector<std::vector<Change>> k_phases = {
    {{0, "o-1", 1}, {0, "o-1", 2}, {0, "o-2", 1}, {1, "o-4", 1}, {1, "o-4", 2}, {1, "o-5", 1}},
    {{1, "o-1", 3}, {0, "o-2", 3}, {0, "o-2", 2}, {0, "o-3", 2}},
    {{1, "o-3", 1}, {1, "o-5", 2}, {0, "o-6", 5}},
};

std::string id_of(const Change& c) { return fmt::format("{}-v{}", c.order, c.version); }

class VersionGuard : public ProjectionTest {
protected:
  void SetUp() override {
    start("CREATE TABLE orders (id text PRIMARY KEY, version bigint NOT NULL, amount bigint, note text)", "guarded");
  }

  void produce(const std::vector<Change>& phase, std::int64_t& ts) {
    std::vector<std::pair<std::int32_t, std::string>> records;
    for (const auto& c : phase) {
      records.emplace_back(
          c.partition,
          Json{{"event_id", id_of(c)}, {"order_id", c.order}, {"version", c.version}, {"amount", 100 * c.version}}
              .dump());
    }
    ProjectionTest::produce(records, ts);
  }

  void consume(const std::string& applied, const std::string& topic = "", const std::string& group = "projector") {
    run_consumer("guard_consumer.py", {}, applied, topic, group);
  }

  // The three phases, each produced then consumed; the consumer's first outcomes in `first`.
  void plant() {
    auto ts = ten_minutes_ago();
    for (const auto& phase : k_phases) {
      produce(phase, ts);
      consume(m_dir.file("first"));
    }
  }

  // The projection changed behind the consumer's back: `sql` on PostgreSQL, or the Redis commands
  // with the replies each must give.
  void change_projection(const std::string& sql, const std::vector<std::pair<std::string, std::string>>& redis) {
    if (postgres()) {
      auto result = m_pg.psql(sql);
      ASSERT_EQ(result.exit_code, 0) << result.err;
      return;
    }
    for (const auto& [command, reply] : redis) {
      ASSERT_EQ(m_redis.command(command), reply) << command;
    }
  }

  // A restore from an older backup: o-2 back at 1, o-4's row gone, o-6 back at 4.
  void restore() {
    change_projection("UPDATE orders SET version = 1 WHERE id = 'o-2'; DELETE FROM orders WHERE id = 'o-4'; "
                      "UPDATE orders SET version = 4 WHERE id = 'o-6'",
                      {{"SET order:o-2 1", "+OK\r\n"}, {"DEL order:o-4", ":1\r\n"}, {"SET order:o-6 4", "+OK\r\n"}});
  }

  // Every entity's version in the projection, as text to compare.
  std::string projection() const {
    if (postgres()) {
      auto rows = m_pg.psql("SELECT id, version FROM orders ORDER BY id");
      EXPECT_EQ(rows.exit_code, 0) << rows.err;
      return rows.out;
    }
    return m_redis.command("MGET order:o-1 order:o-2 order:o-3 order:o-4 order:o-5 order:o-6");
  }

  // `command` over the topic, its events identified as the consumer reads them, then `more`.
  std::vector<std::string> over_topic(const std::string& command, const std::vector<std::string>& more) const {
    std::vector<std::string> args{command,          "-b",       m_bootstrap,      "--topic",   m_topic,        "--id",
                                  "json:/event_id", "--entity", "json:/order_id", "--version", "json:/version"};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  }

  CommandResult replay(const std::vector<std::string>& extra) {
    std::vector<std::string> args = over_topic("replay", {"-o", "json"});
    auto via = placement();
    via[0] = "--via";
    args.insert(args.end(), via.begin(), via.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args);
  }

  std::vector<std::string> placement() const {
    if (postgres()) {
      return {"--store", m_pg.conninfo(), "--layout", "version-guard", "--inbox-table", "orders"};
    }
    return {"--store", m_redis.uri(), "--layout", "version-guard", "--key-template", "order:{entity}"};
  }

  // trace of every id of the range through the projection: each id's verdict and its text.
  std::map<std::string, std::pair<std::string, std::string>> trace_all() {
    std::vector<std::string> args = over_topic("trace", {"--fail-on", "none", "-o", "json"});
    for (const auto& phase : k_phases) {
      for (const auto& c : phase) {
        args.insert(args.end(), {"--event-id", id_of(c)});
      }
    }
    auto more = placement();
    args.insert(args.end(), more.begin(), more.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    std::map<std::string, std::pair<std::string, std::string>> verdicts;
    const Json report = Json::parse(result.out); // kept: the loop reads into it
    for (const auto& trace : report.at("traces")) {
      verdicts[trace.at("event_id").get<std::string>()] = {trace.at("verdict").at("id").get<std::string>(),
                                                           trace.at("verdict").at("text").get<std::string>()};
    }
    return verdicts;
  }

  CommandResult audit(std::vector<std::string> extra = {}) {
    std::vector<std::string> args =
        over_topic("audit", {"--group", "projector", "--seek", "earliest", "--retention", "7d", "--examples", "1000",
                             "--fail-on", "none", "-o", "json"});
    auto more = placement();
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args);
  }
};

INSTANTIATE_TEST_SUITE_P(Projections, VersionGuard, ::testing::Values("postgres", "redis"),
                         [](const ::testing::TestParamInfo<std::string>& kind) { return kind.param; });

} // namespace

TEST_P(VersionGuard, TheChangesTheGuardDropsAreScansRegressionsAndASeekAppliesExactlyThePreview) {
  plant();
  std::set<std::string> dropped = lines_with(m_dir.file("first"), "dropped ");
  EXPECT_EQ(dropped, (std::set<std::string>{"o-2-v2", "o-3-v1"}));
  auto scan = run_dedupctl(over_topic("scan", {"--fail-on", "none", "-o", "json"}));
  ASSERT_EQ(scan.exit_code, 0) << scan.err;
  Json scanned = Json::parse(scan.out);
  EXPECT_EQ(example_ids(scanned, "version-regression"), dropped) << scan.out;

  // Before the restore every change is in (or was dropped under a higher one): a seek applies nothing.
  auto before = audit();
  ASSERT_EQ(before.exit_code, 0) << before.err;
  Json clean = Json::parse(before.out);
  EXPECT_EQ(clean.at("summary").at("covered"), 13) << clean.at("summary");
  EXPECT_EQ(clean.at("replay").at("would_reapply"), 0) << clean.at("replay");

  ASSERT_NO_FATAL_FAILURE(restore());
  auto after = audit();
  ASSERT_EQ(after.exit_code, 0) << after.err;
  Json report = Json::parse(after.out);
  EXPECT_TRUE(report.at("complete").get<bool>());
  EXPECT_EQ(report.at("placement").at("layout"), "version-guard");
  EXPECT_EQ(report.at("placement").at("ttl_source"), "projection");
  std::set<std::string> preview = example_ids(report, "replay-risk");
  EXPECT_EQ(report.at("replay").at("would_reapply"), static_cast<long long>(preview.size()));
  EXPECT_EQ(report.at("summary").at("missing"), 5) << report.at("summary");    // o-2 v2, v3; o-4 v1, v2; o-6 v5
  EXPECT_EQ(report.at("summary").at("superseded"), 2) << report.at("summary"); // o-2 v2, o-4 v1

  // Traced one by one through the projection: the events a redelivery of each alone applies are
  // exposed, the rest protected. o-2-v2 is exposed too (2 is above the restored 1), and its trace says
  // that a replay of the range applies o-2-v3 first and then drops it: the others are the preview.
  std::set<std::string> exposed, replay_drops;
  for (const auto& [id, verdict] : trace_all()) {
    EXPECT_TRUE(verdict.first == "exposed" || verdict.first == "protected") << id << " " << verdict.first;
    if (verdict.first == "exposed") {
      exposed.insert(id);
    }
    if (verdict.second.find("first and then drops this one") != std::string::npos) {
      replay_drops.insert(id);
    }
  }
  EXPECT_EQ(exposed, (std::set<std::string>{"o-2-v2", "o-2-v3", "o-4-v1", "o-4-v2", "o-6-v5"}));
  EXPECT_EQ(replay_drops, std::set<std::string>{"o-2-v2"});

  commit_offsets(m_bootstrap, "projector", m_topic, {{0, 0}, {1, 0}});
  consume(m_dir.file("replayed"));
  std::set<std::string> applied = lines_with(m_dir.file("replayed"), "applied ");
  EXPECT_EQ(applied, preview) << "consumer: " << fmt::format("{}", fmt::join(applied, " "))
                              << "\naudit: " << fmt::format("{}", fmt::join(preview, " "));
  EXPECT_EQ(applied, (std::set<std::string>{"o-2-v3", "o-4-v1", "o-4-v2", "o-6-v5"}));
}

// What the projection cannot hold as the guard compares it is exit 2 naming it, before any verdict: a
// version column of another type than the order compares, one that is not there, or (Redis) a key
// that is not the hash --layout-option version-field reads.
TEST_P(VersionGuard, AProjectionThatCannotHoldTheVersionAsTheOrderComparesItIsExitTwoNamingIt) {
  std::int64_t ts = 1'700'000'000'000;
  produce(k_phases[0], ts);
  consume(m_dir.file("first"));
  if (GetParam() == "redis") {
    auto hash = audit({"--layout-option", "version-field=version"});
    EXPECT_EQ(hash.exit_code, 2) << hash.err;
    EXPECT_NE(hash.err.find("version-field=version: the key order:o-"), std::string::npos) << hash.err;
    EXPECT_NE(hash.err.find("is not a hash"), std::string::npos) << hash.err;
    return;
  }
  auto wrong = audit({"--layout-option", "version-column=note"});
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("orders.note is text"), std::string::npos) << wrong.err;
  EXPECT_NE(wrong.err.find("version-column=note"), std::string::npos) << wrong.err;
  auto times = audit({"--version-order", "rfc3339"});
  EXPECT_EQ(times.exit_code, 2) << times.err;
  EXPECT_NE(times.err.find("orders.version is bigint"), std::string::npos) << times.err;
  auto no_column = audit({"--layout-option", "entity-column=order_id"});
  EXPECT_EQ(no_column.exit_code, 2) << no_column.err;
  EXPECT_NE(no_column.err.find("order_id"), std::string::npos) << no_column.err;
}

// replay --via the projection: before publishing, the guard is walked over the range against it, and
// only the events it applies are published, with nothing claimed or written. The consumer, reading
// them, applies every one, and they are exactly the audit's seek preview; a rerun from the checkpoint
// publishes nothing again.
TEST_P(VersionGuard, AReplayViaTheProjectionPublishesExactlyWhatTheGuardAppliesAndWritesNothing) {
  plant();
  ASSERT_NO_FATAL_FAILURE(restore());
  const std::string restored = projection();
  const std::set<std::string> preview{"o-2-v3", "o-4-v1", "o-4-v2", "o-6-v5"};
  auto plan = replay({});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(Json::parse(plan.out).at("summary").at("would_replay"), 4) << plan.out;

  const std::string sink = m_topic + "-replay";
  create_topic(m_bootstrap, sink, 1, {}); // one partition: each entity's events keep their order
  const std::string decisions = m_dir.file("decisions.ndjson");
  std::vector<std::string> run{"--execute",   "--sink", "kafka:" + sink, "--checkpoint", m_dir.file("checkpoint"),
                               "--decisions", decisions};
  auto executed = replay(run);
  ASSERT_EQ(executed.exit_code, 0) << executed.err;
  Json report = Json::parse(executed.out);
  EXPECT_EQ(report.at("summary").at("replayed"), 4) << report.at("summary");
  EXPECT_EQ(report.at("summary").at("skipped_duplicate"), 9) << report.at("summary");
  EXPECT_EQ(report.at("placement").at("layout"), "version-guard");
  EXPECT_EQ(report.at("settings").at("version order"), "numeric") << report.at("settings");
  EXPECT_EQ(decided(decisions, "replayed"), preview);
  EXPECT_EQ(projection(), restored) << "the replay wrote to the projection";

  auto again = replay(run);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Json::parse(again.out).at("summary").at("replayed"), 0) << again.out;

  consume(m_dir.file("from-replay"), sink, "projector-replay");
  EXPECT_EQ(lines_with(m_dir.file("from-replay"), "applied "), preview);
  EXPECT_EQ(lines_with(m_dir.file("from-replay"), "dropped "), std::set<std::string>{});
}

// An entity whose projection holds no version the guard compares: a NULL column (`NULL < $v` is never
// true, so the consumer's upsert drops every change of it), or a Redis key holding text under numeric
// order. Its events are never judged covered by the audit, and a replay through the guard does not
// publish them (id_unfit): nobody can say what the consumer does with them.
TEST_P(VersionGuard, AProjectionWithoutAComparableVersionIsNeitherCoveredNorPublished) {
  plant();
  ASSERT_NO_FATAL_FAILURE(change_projection(
      "ALTER TABLE orders ALTER COLUMN version DROP NOT NULL; UPDATE orders SET version = NULL WHERE id = 'o-5'",
      {{"SET order:o-5 n/a", "+OK\r\n"}}));
  auto audited = audit();
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  Json report = Json::parse(audited.out);
  EXPECT_EQ(report.at("summary").at("covered"), 11) << report.at("summary"); // all but o-5's two
  std::set<std::string> unchecked;
  for (const auto& f : report.at("findings")) {
    for (const auto& example : f.at("examples")) {
      if (example.contains("note") && example.at("note").is_string() &&
          example.at("note").get<std::string>().find("not comparable") != std::string::npos) {
        unchecked.insert(example.at("event_id").get<std::string>());
      }
    }
  }
  EXPECT_EQ(unchecked, (std::set<std::string>{"o-5-v1", "o-5-v2"})) << audited.out;
  auto plan = replay({});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  Json planned = Json::parse(plan.out);
  EXPECT_EQ(planned.at("summary").at("id_unfit"), 2) << planned.at("summary");
  EXPECT_EQ(planned.at("summary").at("would_replay"), 0) << planned.at("summary");
}

namespace {

// A guard over a `numeric` column, whose versions differ only past a double's 17 digits: whole
// numbers beyond 64 bits, decimals, and a version written with a trailing zero.
class ExactVersionGuard : public VersionGuard {
protected:
  void SetUp() override {
    start("CREATE TABLE orders (id text PRIMARY KEY, version numeric NOT NULL, amount bigint, note text)", "exact");
  }

  // The consumer reads a version with a fraction as a Decimal, as a numeric column's handler must.
  void consume_exactly(const std::string& applied) {
    run_consumer("guard_consumer.py", {"--exact-numbers"}, applied, "", "projector");
  }
};

INSTANTIATE_TEST_SUITE_P(Projections, ExactVersionGuard, ::testing::Values("postgres"),
                         [](const ::testing::TestParamInfo<std::string>& kind) { return kind.param; });

} // namespace

// The guard, comparing as numeric does, drops o-7-c and o-8-b (below an earlier version by less than
// a double can tell) and o-9-b (2.5 is 2.50): scan's regressions and conflict are exactly those. After
// a restore to versions between them, the seek preview is exactly what the consumer applies again.
// A comparison through doubles would call each pair equal and get all three wrong.
TEST_P(ExactVersionGuard, VersionsPastADoublesDigitsAreJudgedAsTheNumericColumnComparesThem) {
  auto payload = [](std::string_view order, std::string_view id, std::string_view version) {
    return fmt::format(R"({{"event_id":"{}-{}","order_id":"{}","version":{},"amount":1}})", order, id, order, version);
  };
  auto ts = ten_minutes_ago();
  ProjectionTest::produce({{0, payload("o-7", "a", "99999999999999999998")},
                           {0, payload("o-7", "b", "99999999999999999999")},
                           {0, payload("o-7", "c", "99999999999999999998.9")},
                           {1, payload("o-8", "a", "1.00000000000000000002")},
                           {1, payload("o-8", "b", "1.00000000000000000001")},
                           {1, payload("o-9", "a", "2.50")},
                           {1, payload("o-9", "b", "2.5")}},
                          ts);
  consume_exactly(m_dir.file("first"));
  std::set<std::string> dropped = lines_with(m_dir.file("first"), "dropped ");
  EXPECT_EQ(dropped, (std::set<std::string>{"o-7-c", "o-8-b", "o-9-b"}));

  auto scan = run_dedupctl(over_topic("scan", {"--fail-on", "none", "-o", "json"}));
  ASSERT_EQ(scan.exit_code, 0) << scan.err;
  Json scanned = Json::parse(scan.out);
  EXPECT_EQ(example_ids(scanned, "version-regression"), (std::set<std::string>{"o-7-c", "o-8-b"})) << scan.out;
  EXPECT_EQ(example_ids(scanned, "version-conflict"), std::set<std::string>{"o-9-b"}) << scan.out;

  auto before = audit();
  ASSERT_EQ(before.exit_code, 0) << before.err;
  Json clean = Json::parse(before.out);
  EXPECT_EQ(clean.at("summary").at("covered"), 7) << clean.at("summary");
  EXPECT_EQ(clean.at("replay").at("would_reapply"), 0) << clean.at("replay");

  auto restored = m_pg.psql("UPDATE orders SET version = 99999999999999999998.95 WHERE id = 'o-7'; "
                            "UPDATE orders SET version = 1.000000000000000000015 WHERE id = 'o-8'");
  ASSERT_EQ(restored.exit_code, 0) << restored.err;
  auto after = audit();
  ASSERT_EQ(after.exit_code, 0) << after.err;
  Json report = Json::parse(after.out);
  std::set<std::string> preview = example_ids(report, "replay-risk");
  EXPECT_EQ(preview, (std::set<std::string>{"o-7-b", "o-8-a"})) << after.out;
  EXPECT_EQ(report.at("summary").at("missing"), 2) << report.at("summary");

  commit_offsets(m_bootstrap, "projector", m_topic, {{0, 0}, {1, 0}});
  consume_exactly(m_dir.file("replayed"));
  EXPECT_EQ(lines_with(m_dir.file("replayed"), "applied "), preview);
  auto rows = m_pg.psql("SELECT id, version FROM orders ORDER BY id");
  EXPECT_NE(rows.out.find("99999999999999999999"), std::string::npos) << rows.out;
  EXPECT_NE(rows.out.find("1.00000000000000000002"), std::string::npos) << rows.out;
}
