// The fixtures every later integration test stands on: each starts a real server on loopback and
// leaves nothing behind.
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <sys/stat.h>

using namespace dedupctl::testing;

TEST(Fixtures, RedisServerAnswersAndStopsWithItsFixture) {
  int port = 0;
  {
    RedisServer redis;
    DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
    EXPECT_EQ(redis.command("PING"), "+PONG\r\n");
    EXPECT_EQ(redis.command("SET k v"), "+OK\r\n");
    EXPECT_EQ(redis.command("CONFIG GET save"), "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
    port = redis.port();
  }
  EXPECT_EQ(redis_command(port, "PING"), "") << "the server must stop with its fixture";
}

TEST(Fixtures, PostgresStartsAsUnprivilegedUserAndCleansUp) {
  std::string dir;
  {
    PostgresServer pg;
    DEDUPCTL_REQUIRE_SERVER(pg.available(), pg.why_unavailable());
    auto result = pg.psql("SELECT 40 + 2");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, "42\n");
    auto user = pg.psql("SELECT current_setting('is_superuser')");
    EXPECT_EQ(user.out, "on\n");
    dir = pg.conninfo().substr(5, pg.conninfo().find(' ') - 5);
    EXPECT_TRUE(std::filesystem::exists(dir));
  }
  EXPECT_FALSE(std::filesystem::exists(dir)) << "the fixture must remove its data directory";
}

TEST(Fixtures, MockBrokerPrintsBootstrapAndTakesCommands) {
  MockBroker broker({"orders:3"});
  EXPECT_NE(broker.bootstrap().find("127.0.0.1:"), std::string::npos) << broker.bootstrap();
  EXPECT_EQ(broker.command("topic extra 2"), "ok");
  EXPECT_EQ(broker.command("rtt 1 0"), "ok");
  EXPECT_EQ(broker.command("nonsense"), "error: unknown command nonsense");
}

TEST(Fixtures, RunCommandCapturesBothStreamsAndTheExitCode) {
  auto result = run_command({"sh", "-c", "read x; echo out-$x; echo err >&2; exit 7"}, "in\n");
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_EQ(result.out, "out-in\n");
  EXPECT_EQ(result.err, "err\n");
}

// A test whose server is missing, for the test below: disabled, so it runs only when asked for.
TEST(FixturesProbe, DISABLED_AMissingServer) {
  DEDUPCTL_REQUIRE_SERVER(false, "the probe's server is missing on purpose");
}

// The contract CI depends on: with CI=true a test whose server is missing fails; elsewhere it is
// skipped. Runs this very binary on the probe above, as CI and as a developer.
TEST(Fixtures, ServersAreRequiredInCi) {
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::vector<std::string> probe{self, "--gtest_filter=FixturesProbe.DISABLED_AMissingServer",
                                 "--gtest_also_run_disabled_tests"};
  auto with_env = [&](std::vector<std::string> env) {
    env.insert(env.begin(), "env");
    env.insert(env.end(), probe.begin(), probe.end());
    return run_command(env);
  };
  auto in_ci = with_env({"-u", "DEDUPCTL_REQUIRE_SERVERS", "CI=true"});
  EXPECT_NE(in_ci.exit_code, 0) << in_ci.out;
  EXPECT_NE(in_ci.out.find("required server missing (CI): the probe's server is missing on purpose"), std::string::npos)
      << in_ci.out;
  auto required = with_env({"-u", "CI", "DEDUPCTL_REQUIRE_SERVERS=1"});
  EXPECT_NE(required.exit_code, 0) << required.out;
  auto locally = with_env({"-u", "CI", "-u", "DEDUPCTL_REQUIRE_SERVERS"});
  EXPECT_EQ(locally.exit_code, 0) << locally.out;
  EXPECT_NE(locally.out.find("[  SKIPPED ] FixturesProbe.DISABLED_AMissingServer"), std::string::npos) << locally.out;
}
