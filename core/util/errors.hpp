#pragma once

#include <stdexcept>
#include <string>

namespace dedupctl {

// Exit codes of dedupctl(1). The exit code never depends on --format.
inline constexpr int k_exit_ok = 0;
inline constexpr int k_exit_findings = 1;
inline constexpr int k_exit_usage = 2;
inline constexpr int k_exit_unreachable = 3;
inline constexpr int k_exit_internal = 4;
inline constexpr int k_exit_interrupted = 130;

// Bad flag, bad spec, unreadable or malformed input: nothing was contacted, exit 2.
class UsageError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A system could not be reached, refused us, or timed out: exit 3, report incomplete.
class UnreachableError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// The user interrupted us (SIGINT/SIGTERM): exit 130, report incomplete.
class InterruptedError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace dedupctl
