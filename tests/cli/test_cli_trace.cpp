// dedupctl trace end to end: planted events, one per verdict, on the mock cluster and on the real
// Apache Kafka broker (the /kafka instances run in the real-kafka tier), a group that consumed them,
// and a real Redis holding (or not) their records.
#include "tests/support/events.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/kafka_tools.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

std::string copy(long long offset, long long ts, const std::string& id, int payload) {
  return kcat_line(OwnedEvent{.topic = "pay",
                              .offset = offset,
                              .timestamp_ms = ts,
                              .headers = {{"event_id", id}, {"type", "PaymentCharged"}},
                              .key = "k",
                              .payload = fmt::format(R"({{"amount":{}}})", payload)});
}

} // namespace

class Trace : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    m_now = wall_ms();
    seed(copy(0, m_now - 5 * k_hour, "e-twice", 1) +   // consumed, record long gone …
         copy(1, m_now - 2 * k_hour, "e-twice", 1) +   // … and again 3h later: applied twice
         copy(2, m_now - 10 * k_minute, "e-lost", 2) + // within the TTL, no record
         copy(3, m_now - 3 * k_hour, "e-reuse", 3) + copy(4, m_now - 3 * k_hour, "e-reuse", 4) +
         copy(5, m_now - 20 * k_minute, "e-orphan", 5) + // left `processing`
         copy(6, m_now - 3 * k_hour, "e-exposed", 6) +   // consumed, record lapsed
         copy(7, m_now - 10 * k_minute, "e-safe", 7) +   // record held
         copy(8, m_now - 1 * k_minute, "e-ahead", 8));   // not consumed yet
    m_redis.command("SET dedup:e-orphan processing");
    m_redis.command("SET dedup:e-safe done PX 3000000");
  }

  // The events into this test's topic (a mock of its own, or a topic of its own on the real
  // broker), consumed by group billing up to offset 8.
  void seed(const std::string& events) {
    m_cluster = fresh_topic(GetParam(), "pay", 1, events, "billing", {{0, 8}});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
  }

  std::vector<std::string> args(std::vector<std::string> ids, std::string format = "json") const {
    std::vector<std::string> out{
        "trace",   "-b",          m_cluster.bootstrap, "--topic",          m_cluster.topic, "--group", "billing",
        "--store", m_redis.uri(), "--key-template",    "dedup:{event_id}", "--ttl",         "1h",      "-o",
        format,    "-q"};
    for (auto& id : ids) {
      out.push_back("--event-id");
      out.push_back(id);
    }
    return out;
  }

  TestTopic m_cluster;
  RedisServer m_redis;
  long long m_now = 0;
};

INSTANTIATE_TEST_SUITE_P(Brokers, Trace, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(Trace, EachPlantedEventGetsItsVerdictWithEvidenceInRequestOrder) {
  auto result =
      run_dedupctl(args({"e-twice", "e-lost", "e-reuse", "e-orphan", "e-exposed", "e-safe", "e-ahead", "e-twic"}));
  EXPECT_EQ(result.exit_code, 1) << result.err;
  auto doc = Json::parse(result.out);
  const auto& traces = doc.at("traces");
  ASSERT_EQ(traces.size(), 8u);
  std::vector<std::string> verdicts;
  for (const auto& t : traces) {
    verdicts.push_back(t.at("verdict").at("id"));
  }
  EXPECT_EQ(verdicts, (std::vector<std::string>{"applied-twice", "state-lost", "id-reused", "claim-orphaned", "exposed",
                                                "protected", "protected", "not-found"}));
  const auto& twice = traces[0];
  EXPECT_EQ(twice.at("event_id"), "e-twice");
  EXPECT_EQ(twice.at("found"), true);
  ASSERT_EQ(twice.at("occurrences").size(), 2u);
  EXPECT_EQ(twice.at("occurrences")[0].at("offset"), 0);
  EXPECT_EQ(twice.at("occurrences")[0].at("delivered"), true);
  EXPECT_EQ(twice.at("occurrences")[0].at("fingerprint"), twice.at("occurrences")[1].at("fingerprint"));
  EXPECT_EQ(twice.at("dedup_keys"), Json::array({"dedup:e-twice"}));
  EXPECT_EQ(twice.at("record").at("state"), "absent");
  EXPECT_NE(
      twice.at("verdict").at("text").get<std::string>().find("the record had expired when the second copy arrived"),
      std::string::npos);
  EXPECT_NE(twice.at("verdict").at("evidence")[0].get<std::string>().find("3h apart"), std::string::npos);
  EXPECT_EQ(traces[3].at("record").at("value"), "processing");
  EXPECT_EQ(traces[5].at("record").at("state"), "present");
  EXPECT_EQ(traces[6].at("occurrences")[0].at("delivered"), false);
  EXPECT_EQ(traces[7].at("found"), false);
  EXPECT_NE(traces[7].at("notes")[0].get<std::string>().find("looks truncated: the log has e-twice"),
            std::string::npos);
  std::map<std::string, std::string> severity;
  for (const auto& f : doc.at("findings")) {
    severity[f.at("id")] = f.at("severity");
  }
  EXPECT_EQ(severity.at("applied-twice"), "error");
  EXPECT_EQ(severity.at("exposed"), "warning");
  EXPECT_EQ(severity.at("not-found"), "info");
  EXPECT_EQ(severity.count("protected"), 0u);
  EXPECT_EQ(doc.at("summary").at("not_found"), 1);
  EXPECT_EQ(doc.at("summary").at("occurrences"), 9);
}

TEST_P(Trace, AnUnknownIdIsSaidPlainlyWithExit0AndAnInfoFinding) {
  auto result = run_dedupctl(args({"e-nobody "}));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("traces")[0].at("verdict").at("id"), "not-found");
  EXPECT_NE(doc.at("traces")[0].at("notes")[0].get<std::string>().find("stray whitespace"), std::string::npos);
  ASSERT_EQ(doc.at("findings").size(), 1u);
  EXPECT_EQ(doc.at("findings")[0].at("severity"), "info");
  auto text = run_dedupctl(args({"e-nobody"}, "text"));
  EXPECT_NE(text.out.find("e-nobody is not in the range read"), std::string::npos) << text.out;
}

TEST_P(Trace, TextAndMarkdownTellTheStoryWithATimeline) {
  auto text = run_dedupctl(args({"e-twice"}, "text"));
  EXPECT_NE(text.out.find("TRACE e-twice  likely applied twice"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("TIMELINE"), std::string::npos);
  EXPECT_NE(text.out.find("lapses at the latest (TTL 1h)"), std::string::npos);
  auto md = run_dedupctl(args({"e-twice", "e-safe"}, "markdown"));
  EXPECT_NE(md.out.find("## Trace `e-twice`"), std::string::npos) << md.out;
  EXPECT_NE(md.out.find("| partition | offset | timestamp |"), std::string::npos);
  EXPECT_NE(md.out.find("## Trace `e-safe`"), std::string::npos);
}

TEST_P(Trace, IdsFromAFileAndNoIdAtAllIsAUsageError) {
  TempDir dir;
  write_file(dir.file("ids.txt"), "# from the incident\ne-safe\n\ne-lost\n");
  auto base = args({});
  base.insert(base.end(), {"--ids-from", dir.file("ids.txt")});
  auto result = run_dedupctl(base);
  ASSERT_EQ(result.exit_code, 1) << result.err;
  auto doc = Json::parse(result.out);
  ASSERT_EQ(doc.at("traces").size(), 2u);
  EXPECT_EQ(doc.at("traces")[1].at("verdict").at("id"), "state-lost");
  auto missing = args({});
  missing.insert(missing.end(), {"--ids-from", dir.file("nope.txt")});
  auto unreadable = run_dedupctl(missing);
  EXPECT_EQ(unreadable.exit_code, 2);
  EXPECT_NE(unreadable.err.find("nope.txt"), std::string::npos) << unreadable.err;
  auto none = run_dedupctl(args({}));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--event-id"), std::string::npos) << none.err;
}
