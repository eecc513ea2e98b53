#include "commands/context.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

CommandRunner register_version(CLI::App& app, Context& context) {
  auto* sub = app.add_subcommand("version", "Print the version");
  return [sub, &context]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "version";
    fmt::print("dedupctl {}\n", DEDUPCTL_VERSION);
    return 0;
  };
}

} // namespace dedupctl::commands
