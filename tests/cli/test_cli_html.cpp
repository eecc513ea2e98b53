// --format html in a real browser: headless Chromium renders the audit's page; the DOM it dumps
// must carry the numbers of the JSON report, and screenshots at desktop and phone widths are kept
// in build/artifacts.
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <regex>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

std::string chromium() {
  for (const char* path : {"/usr/bin/chromium", "/usr/bin/chromium-browser"}) {
    if (std::filesystem::exists(path)) {
      return path;
    }
  }
  return "";
}

CommandResult browse(const std::vector<std::string>& extra, const std::string& file) {
  std::vector<std::string> argv{chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back("file://" + file);
  return run_command(argv);
}

} // namespace

// The planted events on either broker (the /kafka instance runs in the real-kafka tier).
class Html : public ::testing::TestWithParam<std::string> {
protected:
  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(!chromium().empty(), "chromium is not installed (apt-get install chromium)");
    DEDUPCTL_REQUIRE_SERVER(m_redis.available(), m_redis.why_unavailable());
    m_now = wall_ms();
    m_cluster = fresh_topic(GetParam(), "pay", 1, planted(m_now, m_now - 30 * k_minute), "billing", {{0, 8}});
    DEDUPCTL_REQUIRE_SERVER(!m_cluster.bootstrap.empty(), m_cluster.why);
    plant_records(m_redis);
  }

  std::vector<std::string> audit(const std::string& format, const std::string& output) const {
    return audit_args(m_cluster.bootstrap, m_redis.uri(), {"--output", output, "-q"}, format, m_cluster.topic);
  }

  TestTopic m_cluster;
  RedisServer m_redis;
  long long m_now = 0;
};

INSTANTIATE_TEST_SUITE_P(Brokers, Html, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(Html, TheAuditPageShowsTheJsonReportsNumbersInARealBrowser) {
  TempDir dir;
  ASSERT_EQ(run_dedupctl(audit("json", dir.file("report.json"))).exit_code, 1);
  auto result = run_dedupctl(audit("html", dir.file("report.html")));
  ASSERT_EQ(result.exit_code, 1) << result.err;
  auto doc = Json::parse(read_file(dir.file("report.json")));
  std::string html = read_file(dir.file("report.html"));
  // Self-contained: no script, no external request.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find(" src="), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);

  auto dom = browse({"--dump-dom"}, dir.file("report.html"));
  ASSERT_EQ(dom.exit_code, 0) << dom.err;
  const std::string& d = dom.out;
  // The verdict comes first.
  auto verdict = d.find("id=\"verdict\"");
  ASSERT_NE(verdict, std::string::npos) << d.substr(0, 2000);
  EXPECT_LT(verdict, d.find("Summary"));
  EXPECT_NE(d.find("(exit 1, --fail-on error)"), std::string::npos);
  // Every summary number and coverage cell as in the JSON report.
  for (const auto& [name, value] : doc.at("summary").items()) {
    std::regex card("data-summary=\"" + name + "\"><div class=\"n\">" + std::to_string(value.get<long long>()) + "<");
    EXPECT_TRUE(std::regex_search(d, card)) << name << " = " << value;
  }
  for (const std::string state : {"covered", "expiring", "expired", "missing", "pending", "in_progress", "orphaned"}) {
    std::regex cell("data-state=\"" + state + "\">" + std::to_string(doc.at("summary").at(state).get<long long>()) +
                    "<");
    EXPECT_TRUE(std::regex_search(d, cell)) << state;
  }
  // The chart: bars, and the marks now - TTL, now - retention and the seek point.
  EXPECT_NE(d.find("<svg"), std::string::npos);
  EXPECT_NE(d.find("<rect"), std::string::npos);
  EXPECT_NE(d.find("data-mark=\"now − TTL\""), std::string::npos);
  EXPECT_NE(d.find("now − retention"), std::string::npos);
  EXPECT_NE(d.find("data-mark=\"seek\""), std::string::npos);
  // The replay window with safe_from, the findings with their counts, the settings.
  EXPECT_NE(
      d.find(fmt::format("<strong>{} re-applied</strong>", doc.at("replay").at("would_reapply").get<long long>())),
      std::string::npos);
  EXPECT_NE(d.find("id=\"safe-from\""), std::string::npos);
  for (const auto& f : doc.at("findings")) {
    EXPECT_NE(d.find(fmt::format("data-finding=\"{}\" data-count=\"{}\"", f.at("id").get<std::string>(),
                                 f.at("count").get<long long>())),
              std::string::npos)
        << f.at("id");
  }
  EXPECT_NE(d.find("id=\"settings\""), std::string::npos);

  // Screenshots at desktop and phone widths, kept as artifacts (build/artifacts, beside the binary).
  const std::string artifacts = (std::filesystem::path(DEDUPCTL_BINARY).parent_path() / "artifacts").string();
  std::filesystem::create_directories(artifacts);
  for (auto [name, size] : {std::pair{"audit-desktop.png", "1280,1600"}, std::pair{"audit-phone.png", "390,2400"}}) {
    std::string path = artifacts + "/" + (GetParam() == "mock" ? "" : GetParam() + "-") + name;
    std::filesystem::remove(path);
    auto shot =
        browse({std::string("--screenshot=") + path, std::string("--window-size=") + size}, dir.file("report.html"));
    EXPECT_EQ(shot.exit_code, 0) << shot.err;
    ASSERT_TRUE(std::filesystem::exists(path)) << name;
    EXPECT_GT(std::filesystem::file_size(path), 20'000u) << name << " looks empty";
  }
}
