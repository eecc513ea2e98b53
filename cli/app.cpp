#include "cli/app.hpp"

#include "cli/signals.hpp"
#include "commands/context.hpp"
#include "commands/delivery.hpp"
#include "commands/options.hpp"
#include "connectors/file/text.hpp"
#include "core/check/config_check.hpp"
#include "core/store/secrets.hpp"
#include "core/util/errors.hpp"
#include "core/util/text.hpp"
#include "reports/report.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <unistd.h>

namespace dedupctl::cli {

namespace {

std::int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Every secret typed on the command line or given in a variable, to scrub from whatever is printed.
std::vector<std::string> secrets_of(int argc, char** argv) {
  std::vector<std::string> out;
  for (int i = 1; i < argc; ++i) {
    for (auto& secret : core::secrets_in(argv[i])) {
      out.push_back(std::move(secret));
    }
  }
  // redis-cli's password variable (commands/placement/redis.cpp).
  if (const char* auth = std::getenv("REDISCLI_AUTH"); auth && *auth) {
    out.emplace_back(auth);
  }
  return out;
}

// One error line on stderr, without the secrets typed on the command line.
class ErrorLine {
public:
  explicit ErrorLine(const std::vector<std::string>& secrets) : m_secrets(secrets) {}
  void operator()(std::string_view message) const {
    commands::print_stderr(fmt::format("dedupctl: error: {}\n", core::scrub_secrets(message, m_secrets)));
  }

private:
  const std::vector<std::string>& m_secrets;
};

// A failed run writes the document its format promises, where --output says (stdout without it):
// a report-v1 document with --format json, the SARIF, JUnit, GitLab or GitHub document a CI reads
// (a usage error such as bad.toml:24:1 included), a Markdown or HTML page. Text has the error line.
void failure_document(const commands::Context& context, std::string_view message, int exit_code) {
  if (context.command.empty()) {
    return;
  }
  try {
    reports::Format format = reports::parse_format(context.global.format);
    if (format == reports::Format::Text) {
      return;
    }
    reports::Report report;
    report.command = context.command;
    report.generated_at_ms = wall_clock_ms();
    report.complete = false;
    report.exit_code = exit_code;
    report.error = std::string(message);
    report.fail_on = context.global.fail_on;
    if (context.output_is_data) {
      // Its --output is the data itself (a snapshot), which a failure must not stand in for: its
      // document (report-v1, -o json) goes to stdout, and the file is never written.
      if (format == reports::Format::Json) {
        commands::write_report(report, format, context, ""); // stdout
      }
      return;
    }
    commands::write_report(report, format, context); // secrets scrubbed there
  } catch (...) {
    // An unknown format, or an output that cannot be written: the error line on stderr says it.
  }
}

// Calls visit(option, section) for every option of `app` and of its option groups (nameless
// sub-apps in CLI11), with the section a config file sets it in ("" at the top level), then for those
// of each subcommand `sub` selects, with the subcommand's name.
void for_each_option(CLI::App& app, const std::function<bool(CLI::App*)>& sub,
                     const std::function<void(const CLI::Option&, const std::string& section)>& visit) {
  commands::for_each_own_option(app, [&](const CLI::Option& option) { visit(option, ""); });
  for (auto* command : app.get_subcommands([&](CLI::App* s) { return !s->get_name().empty() && sub(s); })) {
    commands::for_each_own_option(*command, [&](const CLI::Option& option) { visit(option, command->get_name()); });
  }
}

// The option names a config file may set: per subcommand (its section), and at the top level.
std::map<std::string, std::set<std::string>> config_keys(CLI::App& app) {
  std::map<std::string, std::set<std::string>> known;
  known[""];
  for_each_option(
      app, [](CLI::App*) { return true; },
      [&](const CLI::Option& option, const std::string& section) {
        for (const auto& name : option.get_lnames()) {
          known[section].insert(name);
        }
      });
  return known;
}

// --config FILE (or DEDUPCTL_CONFIG) checked before CLI11 reads it, which ignores what it cannot
// parse and keys it does not know: every problem is FILE:LINE:COL and exit 2.
int check_config_file(CLI::App& app, int argc, char** argv, const std::string& config_default,
                      const ErrorLine& error_line, std::map<std::string, std::set<std::string>>& present) {
  std::string path = config_default;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--config" && i + 1 < argc) {
      path = argv[i + 1];
    } else if (arg.starts_with("--config=")) {
      path = std::string(arg.substr(9));
    }
  }
  if (path.empty()) {
    return 0;
  }
  std::string text;
  try {
    text = connectors::file::read_text_file(path, "--config");
  } catch (const UsageError& e) {
    error_line(e.what());
    return k_exit_usage;
  }
  auto problems = core::check_config(text, config_keys(app), &present);
  for (const auto& p : problems) {
    error_line(fmt::format("{}:{}:{}: {}", path, p.line, p.column, p.message));
  }
  return problems.empty() ? 0 : k_exit_usage;
}

// Where each option of the run that has a value got it (docs/design.md "The command line": flag > config > environment
// > default). CLI11 does not say, so: on the command line, else set by the config file (in the command's section or at
// the top level), else by its environment variable.
std::map<std::string, core::ValueOrigin> option_origins(CLI::App& app, int argc, char** argv,
                                                        const std::map<std::string, std::set<std::string>>& config) {
  std::set<std::string> typed;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      break;
    }
    if (arg.starts_with("--")) {
      typed.insert(std::string(arg.substr(2, arg.find('=') - 2)));
    } else if (arg.size() > 1 && arg[0] == '-') {
      typed.insert(std::string(1, arg[1])); // -b, -X, -vv
    }
  }
  auto in_config = [&](const std::string& section, const std::string& name) {
    for (const auto& where : {section, std::string()}) {
      auto it = config.find(where);
      if (it != config.end() && it->second.count(name)) {
        return true;
      }
    }
    return false;
  };
  std::map<std::string, core::ValueOrigin> origins;
  for_each_option(
      app, [](CLI::App* s) { return s->parsed(); },
      [&](const CLI::Option& option, const std::string& section) {
        if (option.get_lnames().empty()) {
          return;
        }
        const std::string& name = option.get_lnames().front();
        bool on_line = typed.count(name) != 0;
        for (const auto& short_name : option.get_snames()) {
          on_line = on_line || typed.count(short_name) != 0;
        }
        origins[name] = option.count() == 0             ? core::ValueOrigin::Default
                        : on_line                       ? core::ValueOrigin::Flag
                        : in_config(section, name)      ? core::ValueOrigin::Config
                        : !option.get_envname().empty() ? core::ValueOrigin::Environment
                                                        : core::ValueOrigin::Flag;
      });
  return origins;
}

} // namespace

namespace {

// CLI11 reads `--key-template= 1h` as the template "1h": an empty `--NAME=` is refused instead
// (true, said on stderr).
bool refuses_an_empty_value(int argc, char** argv, const ErrorLine& error_line) {
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      break;
    }
    if (arg.starts_with("--") && arg.size() > 3 && arg.back() == '=' && arg.find('=') == arg.size() - 1) {
      std::string name(arg.substr(0, arg.size() - 1));
      error_line(fmt::format("{} has an empty value: give one ({}=VALUE or {} VALUE)", arg, name, name));
      return true;
    }
  }
  return false;
}

// CLI11's parse, its errors worded as ours (exit 2; --help and --version exit 0); -1 when it parsed.
int parse_command_line(CLI::App& app, int argc, char** argv, const ErrorLine& error_line) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {
      return app.exit(e); // --help, --version
    }
    std::string names;
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known = known || (argc > 1 && sub->get_name() == argv[1]);
    }
    if (argc > 1 && argv[1][0] != '-' && !known) {
      error_line(fmt::format("unknown command '{}' (commands: {}); see dedupctl --help", argv[1], names));
      return k_exit_usage;
    }
    error_line(fmt::format("{}; see dedupctl --help", e.what()));
    return k_exit_usage;
  }
  return -1;
}

// The secrets a config file's kafka-property, a -F file or the Redis password file holds are
// scrubbed like those typed.
void add_file_secrets(commands::Context& context) {
  for (const auto& property : context.global.properties) {
    for (auto& secret : core::secrets_in(property)) {
      context.secrets.push_back(std::move(secret));
    }
  }
  if (!context.global.kafka_config.empty()) {
    std::ifstream file(context.global.kafka_config);
    for (std::string line; std::getline(file, line);) {
      for (auto& secret : core::secrets_in(line)) {
        context.secrets.push_back(std::move(secret));
      }
    }
  }
  // The Redis password file's password, in whatever it is written.
  if (!context.global.redis_password_file.empty()) {
    std::ifstream file(context.global.redis_password_file);
    for (std::string line; std::getline(file, line);) {
      if (auto secret = core::trim(line); !secret.empty()) {
        context.secrets.emplace_back(secret);
      }
    }
  }
}

// Where errors, notes and progress go: stderr, scrubbed, quieter with -q; progress only on a TTY.
void wire_diagnostics(commands::Context& context, const ErrorLine& error_line) {
  context.error = error_line;
  bool tty = ::isatty(STDERR_FILENO) == 1;
  context.note = [&context](std::string_view line) {
    if (context.global.quiet == 0) {
      commands::print_stderr(fmt::format("dedupctl: {}\n", core::scrub_secrets(line, context.secrets)));
    }
  };
  if (tty && !context.global.no_progress && context.global.quiet == 0) {
    context.progress = [](std::string_view line) {
      // \r and erase-to-end: one status line that the next one overwrites; empty clears it.
      commands::print_stderr(fmt::format("\r\x1b[K{}", line));
      std::fflush(stderr);
    };
  }
}

// The command that was named runs; what it throws becomes its exit code (the one catch ladder).
int run_commands(std::vector<commands::CommandRunner>& runners, commands::Context& context,
                 const ErrorLine& error_line) {
  try {
    for (auto& runner : runners) {
      int code = runner();
      if (code >= 0 || code == commands::k_run_again) {
        return code;
      }
    }
    error_line("no command given; see dedupctl --help");
    return k_exit_usage;
  } catch (const UsageError& e) {
    error_line(e.what());
    failure_document(context, e.what(), k_exit_usage);
    return k_exit_usage;
  } catch (const UnreachableError& e) {
    error_line(e.what());
    failure_document(context, e.what(), k_exit_unreachable);
    return k_exit_unreachable;
  } catch (const InterruptedError& e) {
    error_line(e.what());
    failure_document(context, e.what(), k_exit_interrupted);
    return k_exit_interrupted;
  } catch (const std::exception& e) {
    error_line(fmt::format("internal error: {}; please report it with the command line", e.what()));
    failure_document(context, e.what(), k_exit_internal);
    return k_exit_internal;
  }
}

// One run of the command line; with `validate_only`, its parse only (watch's check of a changed
// config file after SIGHUP), which touches no signal handler.
int run_once(int argc, char** argv, bool validate_only) {
  commands::Context context;
  context.now_ms = wall_clock_ms;
  context.secrets = secrets_of(argc, argv);
  context.validate_only = validate_only;
  context.validate = [argc, argv] { return run_once(argc, argv, true); };
  const ErrorLine error_line(context.secrets);
  if (!validate_only) {
    install_stop_handlers(context.stop);
    install_reload_handler(context.reload);
  }

  CLI::App app{"dedupctl: audit Kafka consumers' dedup placements before a seek or replay", "dedupctl"};
  app.option_defaults()->always_capture_default();
  app.require_subcommand(1);
  app.fallthrough();
  // CLI11 2.1 reads the config file before the environment, so an envname on --config would be
  // ignored: DEDUPCTL_CONFIG becomes the option's default file instead.
  const char* config_env = std::getenv("DEDUPCTL_CONFIG");
  std::string config_default = config_env ? config_env : "";
  if (!config_default.empty() && ::access(config_default.c_str(), R_OK) != 0) {
    error_line(fmt::format("cannot read DEDUPCTL_CONFIG={}; check the path", config_default));
    return k_exit_usage;
  }
  app.set_config("--config", config_default,
                 "TOML file of defaults for any flag (flag > config > environment > default); "
                 "env DEDUPCTL_CONFIG")
      ->type_name("FILE");
  app.footer("Exit codes: 0 clean, 1 findings at or above --fail-on, 2 usage error, 3 a system could not be "
             "reached (report incomplete), 4 internal error, 130 interrupted. See dedupctl(1).");
  commands::add_global_options(app, context.global);
  std::vector<commands::CommandRunner> runners{
      commands::register_scan(app, context),       commands::register_audit(app, context),
      commands::register_check(app, context),      commands::register_snapshot(app, context),
      commands::register_replay(app, context),     commands::register_trace(app, context),
      commands::register_merge(app, context),      commands::register_version(app, context),
      commands::register_completion(app, context), commands::register_watch(app, context),
      commands::register_schemas(app, context),    commands::register_discover(app, context)};
  for (auto* sub : app.get_subcommands({})) {
    sub->fallthrough();
  }

  if (refuses_an_empty_value(argc, argv, error_line)) {
    return k_exit_usage;
  }
  std::map<std::string, std::set<std::string>> config_present;
  if (int code = check_config_file(app, argc, argv, config_default, error_line, config_present); code != 0) {
    return code;
  }
  if (int code = parse_command_line(app, argc, argv, error_line); code >= 0) {
    return code;
  }
  context.origins = option_origins(app, argc, argv, config_present);
  add_file_secrets(context);
  wire_diagnostics(context, error_line);
  return run_commands(runners, context, error_line);
}
} // namespace

int run(int argc, char** argv) {
  for (;;) {
    int code = run_once(argc, argv, false);
    if (code != commands::k_run_again) {
      return code;
    }
  }
}

} // namespace dedupctl::cli
