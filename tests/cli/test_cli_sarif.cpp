// The SARIF that scan, audit and check write passes Microsoft's SARIF Multitool: the SARIF 2.1.0
// JSON schema and the rules GitHub's upload-sarif applies (`validate --rule-kind "Sarif;Gh"`).
// The tool is fetched once from npm by tests/support/sarif/fetch (test-only, like the Kafka jars).
#include "tests/support/fixtures.hpp"
#include "tests/support/planted.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

using namespace dedupctl::testing;

namespace {

const std::string k_orders = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/orders.ndjson";
const std::string k_example = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/dedupctl.toml";

std::string multitool() {
  const char* path = std::getenv("DEDUPCTL_SARIF_MULTITOOL");
  return path && *path ? path : "";
}

// The validator's error and warning lines for FILE, except the one warning we cannot act on:
// SARIF2005 asks for the tool's informationUri, and dedupctl has no public home page to name.
std::vector<std::string> problems(const std::string& file, const TempDir& dir) {
  std::string schema = std::filesystem::path(multitool()).parent_path() / "sarif-2.1.0.json";
  auto result = run_command(
      {multitool(), "validate", "--rule-kind", "Sarif;Gh", "-j", schema, "-o", dir.file("validation.sarif"), file}, {},
      std::chrono::seconds(120), {{"DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1"}});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("1 files scanned"), std::string::npos) << result.out << result.err;
  std::vector<std::string> lines;
  std::istringstream in(result.out);
  for (std::string line; std::getline(in, line);) {
    bool problem = line.find(": error ") != std::string::npos || line.find(": warning ") != std::string::npos;
    if (problem && line.find("SARIF2005") == std::string::npos) {
      lines.push_back(line);
    }
  }
  std::remove(dir.file("validation.sarif").c_str());
  return lines;
}

} // namespace

TEST(SarifValidation, ScanAuditAndCheckPassTheSchemaAndGithubsRules) {
  DEDUPCTL_REQUIRE_SERVER(!multitool().empty(),
                          "DEDUPCTL_SARIF_MULTITOOL is not set (scripts/test sets it from tests/support/sarif/fetch)");
  TempDir dir;
  long long now = wall_ms();
  write_file(dir.file("planted.json"), planted(now, now - 30 * k_minute));
  write_file(dir.file("none.tsv"), "# dedupctl-snapshot v1\ttaken_at=1795000000000\tstore=redis://x\tmatch=*\n");
  struct Case {
    std::string name;
    std::vector<std::string> args;
  };
  std::vector<Case> cases{
      {"scan", {"scan", "--input", k_orders}},
      {"check", {"check", k_example}},
      {"audit",
       {"audit", "--input", dir.file("planted.json"), "--store", "file:" + dir.file("none.tsv"), "--ttl", "1h",
        "--retention", "7d"}},
      {"incomplete", {"audit", "--input", k_orders, "--store", "redis://127.0.0.1:1", "--timeout", "1s"}},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    args.insert(args.end(), {"-o", "sarif", "--output", dir.file(c.name + ".sarif")});
    auto run = run_dedupctl(args);
    ASSERT_TRUE(run.exit_code == 0 || run.exit_code == 1 || run.exit_code == 3) << c.name << ": " << run.err;
    std::string sarif = read_file(dir.file(c.name + ".sarif"));
    ASSERT_NE(sarif.find("\"version\": \"2.1.0\""), std::string::npos) << c.name;
    if (c.name != "incomplete") {
      EXPECT_NE(sarif.find("\"ruleId\""), std::string::npos) << c.name << " has results to check";
    }
    auto found = problems(dir.file(c.name + ".sarif"), dir);
    EXPECT_TRUE(found.empty()) << c.name << ":\n" << ::testing::PrintToString(found);
  }
}

// The validator is not a rubber stamp: a result without its message fails it.
TEST(SarifValidation, TheValidatorRejectsABrokenLog) {
  DEDUPCTL_REQUIRE_SERVER(!multitool().empty(), "DEDUPCTL_SARIF_MULTITOOL is not set");
  TempDir dir;
  write_file(dir.file("broken.sarif"),
             R"({"version":"2.1.0","runs":[{"tool":{"driver":{"name":"dedupctl"}},"results":[{"ruleId":"x"}]}]})");
  auto found = problems(dir.file("broken.sarif"), dir);
  ASSERT_FALSE(found.empty());
  EXPECT_NE(found.front().find("'message' is missing"), std::string::npos) << found.front();
}
