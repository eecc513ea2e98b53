#pragma once

#include <cstdint>
#include <string>

// Runs a user's command (a token command, a password command) through /bin/sh, as git runs its
// credential helpers: its stdout is captured, its stderr goes to ours (its own diagnostics).
namespace dedupctl::connectors::process {

struct ShellResult {
  int exit_code = -1;     // 128 + signal when killed; -1 when it could not be started
  bool timed_out = false; // killed after timeout_ms, with every process it started (its process group)
  std::string out;
  std::string error; // why it could not be started
};

ShellResult run_shell(const std::string& command, std::int64_t timeout_ms);

// Why a run failed, in words ("it exited with status 1"), or empty when it succeeded; never its
// output, which may be a secret.
std::string failure_of(const ShellResult& run, std::int64_t timeout_ms);

} // namespace dedupctl::connectors::process
