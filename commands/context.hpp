#pragma once

#include "core/util/time.hpp"
#include "core/value_origin.hpp"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace CLI {
class App;
class Option;
class Option_group;
} // namespace CLI

namespace dedupctl::commands {

// The global options of dedupctl(1), shared by every command.
struct GlobalFlags {
  std::string bootstrap;
  std::vector<std::string> properties; // -X prop=value (or kafka-property in the config file)
  std::string kafka_config;            // -F FILE (or DEDUPCTL_KAFKA_CONFIG)
  std::string kafka_token_command;     // --kafka-token-command (or DEDUPCTL_KAFKA_TOKEN_COMMAND)
  std::string redis_password_file;     // --redis-password-file (or DEDUPCTL_REDIS_PASSWORD_FILE)
  std::string redis_password_command;  // --redis-password-command (or DEDUPCTL_REDIS_PASSWORD_COMMAND)
  std::string aws_profile;             // --aws-profile (or AWS_PROFILE): a dynamodb:// store's credentials
  std::string format = "text";
  std::string output;
  std::string fail_on = "error";
  std::string timeout = core::format_duration(core::k_default_timeout_ms);
  int verbose = 0;
  int quiet = 0;
  bool no_progress = false;
  bool no_color = false;
};

// Text for standard error, written or dropped, never thrown: a stderr that cannot be written (its
// reader gone, as in `2>&1 | head`) has nowhere to say so, and must not end or abort the run.
inline void print_stderr(std::string_view text) noexcept { std::fwrite(text.data(), 1, text.size(), stderr); }

// What the cli layer hands every command: options, the stop flag, the clock, diagnostics.
struct Context {
  GlobalFlags global;
  std::atomic<bool> stop{false};
  std::atomic<bool> reload{false}; // raised by SIGHUP: watch re-reads its config file
  // Parse the command line and the config file, connect to nothing, run nothing: how watch checks a
  // changed config file before it takes it (validate() runs a context in this mode).
  bool validate_only = false;
  std::function<int()> validate;                  // 0 when the command line and the config file as they are now parse
  std::function<std::int64_t()> now_ms;           // wall clock, epoch ms
  std::function<void(std::string_view)> progress; // a transient status line; empty when not a TTY
  std::function<void(std::string_view)> note;     // one diagnostic line on stderr (respects -q)
  std::function<void(std::string_view)> error;    // the error that ends the run, on stderr even with -q
  std::string command;                            // the subcommand that ran, for error reports
  // --output is the command's data, not its report (snapshot's file): a failure's document goes to
  // stdout then, and the file is never written.
  bool output_is_data = false;
  // The secrets on the command line (passwords in --store/--via URIs and conninfo, -X *.password):
  // nothing written to stdout or stderr may contain one, in any spelling (core/store/secrets.hpp).
  std::vector<std::string> secrets;
  // Where each option of the run got its value, Default when it kept it (long name without dashes:
  // "ttl", "max-lag"). Filled by the cli layer after parsing.
  std::map<std::string, core::ValueOrigin> origins;
  bool has_option(const std::string& name) const { return origins.count(name) != 0; }
  core::ValueOrigin origin_of(const std::string& name) const {
    auto it = origins.find(name);
    return it == origins.end() ? core::ValueOrigin::Default : it->second;
  }
};

// A subcommand: registers its flags on `app` and returns the function that runs it (after parsing)
// and returns the exit code.
using CommandRunner = std::function<int()>;

void add_global_options(CLI::App& app, GlobalFlags& global);
CommandRunner register_scan(CLI::App& app, Context& context);
CommandRunner register_audit(CLI::App& app, Context& context);
CommandRunner register_snapshot(CLI::App& app, Context& context);
CommandRunner register_check(CLI::App& app, Context& context);
CommandRunner register_replay(CLI::App& app, Context& context);
CommandRunner register_trace(CLI::App& app, Context& context);
CommandRunner register_discover(CLI::App& app, Context& context);
CommandRunner register_merge(CLI::App& app, Context& context);
CommandRunner register_version(CLI::App& app, Context& context);
CommandRunner register_completion(CLI::App& app, Context& context);
CommandRunner register_watch(CLI::App& app, Context& context);
CommandRunner register_schemas(CLI::App& app, Context& context);

// What a command returns to be run again from the start (watch after SIGHUP): never an exit code.
inline constexpr int k_run_again = -2;

} // namespace dedupctl::commands
