// `dedupctl version`: its own version, then the client libraries it carries, so that an operator
// (and a bug report) can tell whether this build can speak SCRAM to Kafka 4.x, OIDC and TLS to Redis.
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>

#include <regex>
#include <sstream>

using namespace dedupctl::testing;

namespace {

// The line of `version` that starts with NAME, or "".
std::string line_of(const std::string& out, const std::string& name) {
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + " ", 0) == 0) {
      return line;
    }
  }
  return {};
}

// "2.8.0" -> 20800, for comparisons.
int version_number(const std::string& line, const std::string& name) {
  std::smatch m;
  std::regex pattern(name + " ([0-9]+)\\.([0-9]+)(?:\\.([0-9]+))?");
  if (!std::regex_search(line, m, pattern)) {
    return -1;
  }
  return std::stoi(m[1]) * 10000 + std::stoi(m[2]) * 100 + (m[3].matched ? std::stoi(m[3]) : 0);
}

TEST(Version, NamesItselfFirstThenTheLibrariesItCarries) {
  auto result = run_dedupctl({"version"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.rfind("dedupctl 0.", 0), 0u) << result.out;
  // The version of cmake/Version.cmake (its rules are tests/scripts/version-test's), then the build.
  std::istringstream lines(result.out);
  std::string first, second;
  std::getline(lines, first);
  std::getline(lines, second);
  EXPECT_TRUE(
      std::regex_match(first, std::regex(R"(dedupctl [0-9]+\.[0-9]+\.[0-9]+([~+][0-9]+\.g[0-9a-f]{7,}(\.dirty)?)?)")))
      << first;
  EXPECT_TRUE(
      std::regex_match(second, std::regex(R"(build (Release|RelWithDebInfo|Debug|MinSizeRel) \(GNU [0-9.]+\))")))
      << second;
  // SCRAM against Kafka 4.x needs 2.6.1 (librdkafka#4895); OIDC needs libcurl in it.
  std::string rdkafka = line_of(result.out, "librdkafka");
  EXPECT_GE(version_number(rdkafka, "librdkafka"), 20601) << result.out;
  for (const char* feature : {"ssl", "sasl_scram", "sasl_oauthbearer", "oidc", "zstd"}) {
    EXPECT_NE(rdkafka.find(feature), std::string::npos) << feature << " missing from: " << rdkafka;
  }
  std::string hiredis = line_of(result.out, "hiredis");
  EXPECT_GE(version_number(hiredis, "hiredis"), 10000) << result.out;
  EXPECT_GE(version_number(line_of(result.out, "libpq"), "libpq"), 150000) << result.out;
  EXPECT_GE(version_number(line_of(result.out, "OpenSSL"), "OpenSSL"), 30000) << result.out;
  EXPECT_TRUE(result.err.empty()) << result.err;
}

} // namespace
