// connectors/process/shell: a user's command (a token or password command) through /bin/sh, with
// real processes.
#include "connectors/process/shell.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fstream>
#include <string>
#include <thread>

#include <sys/types.h>

using dedupctl::connectors::process::failure_of;
using dedupctl::connectors::process::run_shell;

namespace {

// True while `pid` is a process that has not ended (a zombie has ended: only its parent's wait is due).
bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0 && errno == ESRCH) {
    return false;
  }
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z';
}

bool ends_within(pid_t pid, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (alive(pid)) {
    if (std::chrono::steady_clock::now() > deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

} // namespace

TEST(Shell, CapturesStdoutAndTheExitStatus) {
  auto run = run_shell("printf 'tok'; echo en; exit 3", 5000);
  EXPECT_EQ(run.out, "token\n");
  EXPECT_EQ(run.exit_code, 3);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(failure_of(run, 5000), "it exited with status 3");
}

TEST(Shell, ATimeoutKillsWhatTheShellStartedToo) {
  // The shell starts a grandchild that would sleep for a minute, says its pid, and waits for it.
  auto started = std::chrono::steady_clock::now();
  auto run = run_shell("sleep 60 & echo $!; wait", 400);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
  EXPECT_TRUE(run.timed_out);
  EXPECT_EQ(failure_of(run, 400), "it did not finish within 400 ms");
  ASSERT_FALSE(run.out.empty());
  pid_t grandchild = std::stoi(run.out);
  bool ended = ends_within(grandchild, std::chrono::seconds(3));
  if (!ended) {
    ::kill(grandchild, SIGKILL); // leave nothing behind for the next test
  }
  EXPECT_TRUE(ended) << "the shell's child " << grandchild << " outlived the timeout";
}

TEST(Shell, ACommandThatCannotRunSaysSoWithoutItsOutput) {
  auto run = run_shell("echo secret-token; exit 127", 5000);
  EXPECT_EQ(run.exit_code, 127);
  EXPECT_EQ(failure_of(run, 5000).find("secret-token"), std::string::npos);
}
