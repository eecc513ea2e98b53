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

TEST(Fixtures, ServersAreRequiredInCi) {
  // The contract of DEDUPCTL_REQUIRE_SERVER: in CI a missing server is a failure, not a skip.
  const char* ci = std::getenv("CI");
  const char* require = std::getenv("DEDUPCTL_REQUIRE_SERVERS");
  bool expected = (ci && std::string(ci) == "true") || (require && std::string(require) == "1");
  EXPECT_EQ(servers_required(), expected);
}
