// A secret never appears in any output, in any spelling the user may have typed it: every form
// of core/store/secrets.hpp, against every renderer, on stdout and stderr, with the store unreachable
// (the error messages name the store) and with a bad URI (the usage error names it).
#include "tests/support/fixtures.hpp"
#include "tests/support/kafka_broker.hpp"
#include "tests/support/planted.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace dedupctl::testing;

namespace {

struct Typed {
  std::string store;  // --store as typed
  std::string secret; // what must never be printed
};

} // namespace

// On either broker (the /kafka instance runs in the real-kafka tier).
class Secrets : public ::testing::TestWithParam<std::string> {};

INSTANTIATE_TEST_SUITE_P(Brokers, Secrets, ::testing::Values("mock", "kafka"),
                         [](const ::testing::TestParamInfo<std::string>& broker) { return broker.param; });

TEST_P(Secrets, NoFormatEverPrintsAPasswordInAnySpelling) {
  long long now = wall_ms();
  auto cluster = fresh_topic(GetParam(), "pay", 1, planted(now, now - 30 * k_minute));
  DEDUPCTL_REQUIRE_SERVER(!cluster.bootstrap.empty(), cluster.why);
  int port = free_port();
  const std::vector<Typed> typed{
      {fmt::format("redis://app:Red1sPw@127.0.0.1:{}", port), "Red1sPw"},
      {fmt::format("redis://Red1sAlone@127.0.0.1:{}", port), "Red1sAlone"},
      {fmt::format("postgresql://app:Pg%40Uri@127.0.0.1:{}/db", port), "Pg@Uri"},
      {fmt::format("postgresql://app@127.0.0.1:{}/db?password=PgQuery", port), "PgQuery"},
      {fmt::format("host=127.0.0.1 port={} user=app password = S3cr3tSp", port), "S3cr3tSp"},
      {fmt::format("host=127.0.0.1 port={} user=app password='s3 cr3t q'", port), "s3 cr3t q"},
  };
  TempDir dir;
  for (const auto& t : typed) {
    for (std::string format : {"text", "json", "markdown", "sarif", "junit", "github", "gitlab", "html"}) {
      std::vector<std::string> args{
          "audit", "-b", cluster.bootstrap,      "--topic", cluster.topic, "--store", t.store,
          "--ttl", "1h", "--retention",          "7d",      "-o",          format,    "--timeout",
          "2s",    "-X", "sasl.password=K4fk4Pw"};
      if (format == "html") {
        args.insert(args.end(), {"--output", dir.file("report.html")});
      }
      auto result = run_dedupctl(args);
      EXPECT_EQ(result.exit_code, 3) << t.store << " " << format << ": " << result.err;
      std::string out = result.out + (format == "html" ? read_file(dir.file("report.html")) : "");
      for (const std::string& secret : {t.secret, std::string("K4fk4Pw")}) {
        EXPECT_EQ(out.find(secret), std::string::npos) << format << " stdout shows " << secret << ":\n" << out;
        EXPECT_EQ(result.err.find(secret), std::string::npos) << format << " stderr shows " << secret << ":\n"
                                                              << result.err;
      }
    }
  }
  // A URI that does not parse is a usage error that names it, without its password.
  auto bad = run_dedupctl({"audit", "--input", "-", "--store", "redis://app:BadUr1Pw@host:notaport", "-o", "json"}, "");
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_EQ(bad.out.find("BadUr1Pw"), std::string::npos) << bad.out;
  EXPECT_EQ(bad.err.find("BadUr1Pw"), std::string::npos) << bad.err;
}

// A secret that spells a piece of the report's syntax ("null" is in every JSON report) is scrubbed
// from the report's strings, never from its syntax: the document still parses.
TEST(SecretsInAnyInput, ASecretSpelledLikeJsonSyntaxLeavesTheReportValid) {
  auto result = run_dedupctl({"audit", "--input", "-", "--store",
                              fmt::format("redis://:null@127.0.0.1:{}", free_port()), "--ttl", "1h", "-o", "json"},
                             "");
  EXPECT_EQ(result.exit_code, 3) << result.err;
  nlohmann::json doc;
  ASSERT_NO_THROW(doc = nlohmann::json::parse(result.out)) << result.out;
  EXPECT_EQ(doc.at("placement").at("store").get<std::string>().find("null"), std::string::npos) << result.out;
  EXPECT_TRUE(doc.at("placement").at("ttl_estimate_ms").is_null());
}

// A -X that librdkafka refuses (a misspelt name, a value it cannot take) or that lacks '=' is exit 2
// before anything is contacted, naming the property where there is one, and never echoing a value:
// `-X sasl.pasword=…` is a password typed with a typo.
TEST(SecretsInKafkaProperties, ARefusedPropertyIsNamedAndItsValueNeverShown) {
  struct Case {
    std::string property;
    std::string secret;
    std::string says;
  };
  const std::vector<Case> cases{
      {"sasl.pasword=Typ0dSecret", "Typ0dSecret", "invalid -X sasl.pasword: "},
      {"linger.ms=Bad1Value", "Bad1Value", "invalid -X linger.ms: "},
      {"sasl.password:C0lonSecret", "C0lonSecret", "expected PROP=VALUE"},
  };
  for (const auto& c : cases) {
    for (std::string format : {"text", "json"}) {
      auto result = run_dedupctl({"scan", "--topic", "orders", "-b", "127.0.0.1:1", "-X", c.property, "-o", format});
      EXPECT_EQ(result.exit_code, 2) << c.property << ": " << result.err;
      EXPECT_NE(result.err.find(c.says), std::string::npos) << c.property << ": " << result.err;
      EXPECT_EQ(result.err.find(c.secret), std::string::npos) << c.property << " stderr: " << result.err;
      EXPECT_EQ(result.out.find(c.secret), std::string::npos) << c.property << " stdout: " << result.out;
    }
  }
}

// discover prints the audit command it found with the store's password redacted, and says what it
// tried without it, in text and JSON, found or not.
TEST(SecretsInDiscover, TheCommandItPrintsAndWhatItTriedNeverShowThePassword) {
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  ASSERT_EQ(redis.command("SET dedup:36824dd6-b804-49b8-8b2d-451c62f746b4 done"), "+OK\r\n");
  ASSERT_EQ(redis.command("RENAME dedup:36824dd6-b804-49b8-8b2d-451c62f746b4 hidden"), "+OK\r\n");
  ASSERT_EQ(redis.command("CONFIG SET requirepass D1scPw"), "+OK\r\n");
  const std::string orders = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/orders.ndjson";
  const std::string store = fmt::format("redis://:D1scPw@127.0.0.1:{}", redis.port());
  for (bool found : {false, true}) {
    if (found) { // one connection: AUTH, then the record of the dump's first event back under its key
      redis.command("AUTH D1scPw\r\nRENAME hidden dedup:36824dd6-b804-49b8-8b2d-451c62f746b4");
    }
    for (std::string format : {"text", "json"}) {
      auto result = run_dedupctl({"discover", "--input", orders, "--store", store, "-o", format});
      EXPECT_EQ(result.exit_code, found ? 0 : 1) << format << ": " << result.err;
      if (found) {
        EXPECT_NE(result.out.find("--store 'redis://:***@127.0.0.1"), std::string::npos) << result.out;
      }
      EXPECT_EQ(result.out.find("D1scPw"), std::string::npos) << format << ":\n" << result.out;
      EXPECT_EQ(result.err.find("D1scPw"), std::string::npos) << format << ":\n" << result.err;
    }
  }
}
