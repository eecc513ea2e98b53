#include "commands/context.hpp"
#include "connectors/library_versions.hpp"
#include "core/util/build_info.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace dedupctl::commands {

CommandRunner register_version(CLI::App& app, Context& context) {
  auto* sub = app.add_subcommand("version", "Print the version and the client libraries it carries");
  return [sub, &context]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "version";
    // Its own version first (what scripts read), then how it was built, then what it carries, as
    // `kcat -V` does: a bug report quoting this says which build and which libraries it ran on.
    fmt::print("dedupctl {}\n", core::build::version());
    fmt::print("build {} ({})\n", core::build::build_type(), core::build::compiler());
    for (const auto& [name, version] : connectors::library_versions()) {
      fmt::print("{} {}\n", name, version);
    }
    return 0;
  };
}

} // namespace dedupctl::commands
