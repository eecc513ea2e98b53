// Reality check of a state-transition guard (issue 63): a consumer that keeps no dedup record moves
// each order only from the states its event's type moves from (tests/support/libraries/
// state_consumer.py: a PostgreSQL `UPDATE … WHERE status = ANY(from)`, or a Redis key per order set by a
// script), by the same transitions file dedupctl reads. A producer that reorders (a shipment before its
// payment) and an order whose shipment the log lacks: the consumer drops both, and the second is the
// audit's transition-gap. Then the projection goes back (a restore from an older backup), the group
// seeks to the start, the consumer runs again, and the rows it changes are exactly the audit's seek
// preview; replay --via the projection publishes exactly those and writes nothing.
#include "tests/real-kafka/guard_helpers.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/schema_registry.hpp"
#include "tests/support/transitions.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <set>
#include <string>
#include <vector>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

struct Step {
  std::int32_t partition;
  std::string order;
  std::string type;
};

// Three phases, each produced and then consumed to its end. o-3's producer reorders (shipped before
// paid); o-4's shipment never reaches the log; o-5 is keyed into two partitions (in timestamp order).
// The orders a restore changes keep one partition, so that the consumer meets their events in log order.
const std::vector<std::vector<Step>> k_phases = {
    {{0, "o-1", "OrderPlaced"},
     {0, "o-1", "OrderPaid"},
     {1, "o-2", "OrderPlaced"},
     {0, "o-3", "OrderPlaced"},
     {0, "o-5", "OrderPlaced"}},
    {{0, "o-1", "OrderShipped"}, {1, "o-2", "OrderPaid"}, {0, "o-3", "OrderShipped"}, {1, "o-5", "OrderPaid"}},
    {{0, "o-3", "OrderPaid"}, {1, "o-4", "OrderPlaced"}, {1, "o-4", "OrderDelivered"}},
};

std::string id_of(const Step& s) { return s.order + "-" + s.type; }

class StateGuard : public ProjectionTest {
protected:
  void SetUp() override {
    start("CREATE TABLE orders (id text PRIMARY KEY, status text NOT NULL, placed_at timestamptz NOT NULL DEFAULT "
          "now())",
          "stated");
    std::ofstream(m_dir.file("orders.toml")) << k_order_transitions;
  }

  void produce(const std::vector<Step>& phase, std::int64_t& ts) {
    std::vector<std::pair<std::int32_t, std::string>> records;
    for (const auto& s : phase) {
      records.emplace_back(s.partition, Json{{"event_id", id_of(s)}, {"order_id", s.order}, {"type", s.type}}.dump());
    }
    ProjectionTest::produce(records, ts);
  }

  void consume(const std::string& applied, const std::string& topic = "", const std::string& group = "fulfilment") {
    run_consumer("state_consumer.py", {"--transitions", m_dir.file("orders.toml")}, applied, topic, group);
  }

  void plant() {
    auto ts = ten_minutes_ago();
    for (const auto& phase : k_phases) {
      produce(phase, ts);
      consume(m_dir.file("first"));
    }
  }

  // A restore from an older backup: o-1 back at pending, o-2's row gone.
  void restore() {
    if (postgres()) {
      auto result = m_pg.psql("UPDATE orders SET status = 'pending' WHERE id = 'o-1'; DELETE FROM orders WHERE id = "
                              "'o-2'");
      ASSERT_EQ(result.exit_code, 0) << result.err;
      return;
    }
    ASSERT_EQ(m_redis.command("SET order:o-1 pending"), "+OK\r\n");
    ASSERT_EQ(m_redis.command("DEL order:o-2"), ":1\r\n");
  }

  std::string projection() const {
    if (postgres()) {
      auto rows = m_pg.psql("SELECT id, status FROM orders ORDER BY id");
      EXPECT_EQ(rows.exit_code, 0) << rows.err;
      return rows.out;
    }
    return m_redis.command("MGET order:o-1 order:o-2 order:o-3 order:o-4 order:o-5");
  }

  std::vector<std::string> placement(const std::string& flag = "--store") const {
    std::vector<std::string> out{flag,
                                 postgres() ? m_pg.conninfo() : m_redis.uri(),
                                 "--layout",
                                 "state-guard",
                                 "--layout-option",
                                 "transitions=" + m_dir.file("orders.toml")};
    if (postgres()) {
      out.insert(out.end(), {"--inbox-table", "orders"});
    } else {
      out.insert(out.end(), {"--key-template", "order:{entity}"});
    }
    return out;
  }

  CommandResult run(std::vector<std::string> args, const std::string& flag, const std::vector<std::string>& extra) {
    args.insert(args.end(), {"-b", m_bootstrap, "--topic", m_topic, "--id", "json:/event_id", "--entity",
                             "json:/order_id", "-o", "json"});
    auto more = placement(flag);
    args.insert(args.end(), more.begin(), more.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args);
  }

  CommandResult audit(const std::vector<std::string>& extra = {}) {
    return run({"audit", "--group", "fulfilment", "--seek", "earliest", "--retention", "7d", "--examples", "1000",
                "--fail-on", "none"},
               "--store", extra);
  }

  CommandResult replay(const std::vector<std::string>& extra) { return run({"replay"}, "--via", extra); }
};

INSTANTIATE_TEST_SUITE_P(Projections, StateGuard, ::testing::Values("postgres", "redis"),
                         [](const ::testing::TestParamInfo<std::string>& kind) { return kind.param; });

} // namespace

TEST_P(StateGuard, TheGapIsFoundAndASeekAppliesExactlyThePreview) {
  plant();
  std::set<std::string> dropped = lines_with(m_dir.file("first"), "dropped ");
  EXPECT_EQ(dropped, (std::set<std::string>{"o-3-OrderShipped", "o-4-OrderDelivered"}));

  // Before the restore the one change a seek would apply is the shipment the guard dropped for being
  // early: o-3 is paid now, so the replay ships it.
  auto before = audit();
  ASSERT_EQ(before.exit_code, 0) << before.err;
  Json clean = Json::parse(before.out);
  EXPECT_EQ(clean.at("summary").at("covered"), 10) << clean.at("summary");
  EXPECT_EQ(example_ids(clean, "replay-risk"), std::set<std::string>{"o-3-OrderShipped"}) << before.out;
  EXPECT_EQ(example_ids(clean, "transition-gap"), std::set<std::string>{"o-4-OrderDelivered"}) << before.out;

  ASSERT_NO_FATAL_FAILURE(restore());
  auto after = audit();
  ASSERT_EQ(after.exit_code, 0) << after.err;
  Json report = Json::parse(after.out);
  EXPECT_TRUE(report.at("complete").get<bool>());
  EXPECT_EQ(report.at("placement").at("layout"), "state-guard");
  EXPECT_EQ(report.at("summary").at("covered"), 6) << report.at("summary");
  EXPECT_EQ(report.at("summary").at("missing"), 6) << report.at("summary");
  std::set<std::string> preview = example_ids(report, "replay-risk");
  EXPECT_EQ(report.at("replay").at("would_reapply"), static_cast<long long>(preview.size()));

  commit_offsets(m_bootstrap, "fulfilment", m_topic, {{0, 0}, {1, 0}});
  consume(m_dir.file("replayed"));
  std::set<std::string> applied = lines_with(m_dir.file("replayed"), "applied ");
  EXPECT_EQ(applied, preview) << "consumer: " << fmt::format("{}", fmt::join(applied, " "))
                              << "\naudit: " << fmt::format("{}", fmt::join(preview, " "));
  EXPECT_EQ(applied, (std::set<std::string>{"o-1-OrderPaid", "o-1-OrderShipped", "o-2-OrderPlaced", "o-2-OrderPaid",
                                            "o-3-OrderShipped"}));
}

TEST_P(StateGuard, AReplayViaTheProjectionPublishesExactlyWhatTheGuardAppliesAndWritesNothing) {
  plant();
  ASSERT_NO_FATAL_FAILURE(restore());
  const std::string restored = projection();
  const std::set<std::string> preview{"o-1-OrderPaid", "o-1-OrderShipped", "o-2-OrderPlaced", "o-2-OrderPaid",
                                      "o-3-OrderShipped"};
  auto plan = replay({});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  EXPECT_EQ(Json::parse(plan.out).at("summary").at("would_replay"), 5) << plan.out;

  const std::string sink = m_topic + "-replay";
  create_topic(m_bootstrap, sink, 1, {});
  const std::string decisions = m_dir.file("decisions.ndjson");
  auto executed = replay(
      {"--execute", "--sink", "kafka:" + sink, "--checkpoint", m_dir.file("checkpoint"), "--decisions", decisions});
  ASSERT_EQ(executed.exit_code, 0) << executed.err;
  Json report = Json::parse(executed.out);
  EXPECT_EQ(report.at("summary").at("replayed"), 5) << report.at("summary");
  EXPECT_EQ(report.at("summary").at("skipped_duplicate"), 7) << report.at("summary");
  EXPECT_EQ(report.at("placement").at("layout"), "state-guard");
  EXPECT_EQ(report.at("settings").at("transitions"), "5 event types") << report.at("settings");
  EXPECT_EQ(decided(decisions, "replayed"), preview);
  EXPECT_EQ(projection(), restored) << "the replay wrote to the projection";

  consume(m_dir.file("from-replay"), sink, "fulfilment-replay");
  EXPECT_EQ(lines_with(m_dir.file("from-replay"), "applied "), preview);
  EXPECT_EQ(lines_with(m_dir.file("from-replay"), "dropped "), std::set<std::string>{});
}

// A projection whose state the guard cannot compare is exit 2 naming it, before any verdict: a
// column that holds no state (a time), and an entity whose state the transitions do not name is not
// judged (never covered, never published).
TEST_P(StateGuard, AStateTheGuardCannotJudgeIsRefusedOrLeftUnjudged) {
  plant();
  if (postgres()) {
    auto wrong = audit({"--layout-option", "state-column=placed_at"});
    EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
    EXPECT_NE(wrong.err.find("state-column=placed_at: orders.placed_at is timestamp with time zone"), std::string::npos)
        << wrong.err;
    ASSERT_EQ(m_pg.psql("UPDATE orders SET status = 'archived' WHERE id = 'o-5'").exit_code, 0);
  } else {
    ASSERT_EQ(m_redis.command("SET order:o-5 archived"), "+OK\r\n");
  }
  auto audited = audit();
  ASSERT_EQ(audited.exit_code, 0) << audited.err;
  Json report = Json::parse(audited.out);
  EXPECT_EQ(report.at("summary").at("covered"), 8) << report.at("summary"); // o-5's two are not judged
  auto plan = replay({});
  ASSERT_EQ(plan.exit_code, 0) << plan.err;
  Json planned = Json::parse(plan.out);
  EXPECT_EQ(planned.at("summary").at("id_unfit"), 2) << planned.at("summary");
  EXPECT_EQ(planned.at("summary").at("would_replay"), 1) << planned.at("summary"); // o-3's shipment
}
