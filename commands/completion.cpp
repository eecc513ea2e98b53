// `dedupctl completion bash|zsh|fish`: a completion script for every subcommand and flag, written
// from the parsed command line itself so that it never falls behind a new option.
#include "commands/context.hpp"
#include "commands/options.hpp"
#include "core/util/errors.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace dedupctl::commands {

namespace {

struct Flag {
  std::vector<std::string> names; // "--store", "-b"
  std::string help;
  bool takes_value = false;
  bool file = false; // its value is a path
};

// Appends the flags of `from` that `into` does not have yet (every option group has its --help).
void add_unique(std::vector<Flag>& into, const std::vector<Flag>& from) {
  for (const auto& flag : from) {
    bool known = std::any_of(into.begin(), into.end(), [&](const Flag& f) { return f.names == flag.names; });
    if (!known) {
      into.push_back(flag);
    }
  }
}

// The flags of `app` and of its option groups (nameless sub-apps in CLI11).
std::vector<Flag> flags_of(const CLI::App& app) {
  std::vector<Flag> out;
  for_each_own_option(app, [&](const CLI::Option& option) {
    if (option.get_positional()) {
      return;
    }
    Flag flag;
    for (const auto& name : option.get_lnames()) {
      flag.names.push_back("--" + name);
    }
    for (const auto& name : option.get_snames()) {
      flag.names.push_back("-" + name);
    }
    flag.help = option.get_description();
    flag.takes_value = option.get_type_size_min() > 0 && option.get_expected_min() > 0;
    std::string type = option.get_type_name();
    flag.file = type.find("FILE") != std::string::npos || type.find("PATH") != std::string::npos;
    add_unique(out, {flag});
  });
  return out;
}

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
  std::vector<const CLI::App*> out;
  for (const auto* sub : app.get_subcommands([](const CLI::App* s) { return !s->get_name().empty(); })) {
    out.push_back(sub);
  }
  return out;
}

// A command's flags, and those of its own subcommands (schemas export): completion does not tell
// `dedupctl schemas export --` from `dedupctl schemas --`.
std::vector<Flag> command_flags(const CLI::App& command) {
  auto flags = flags_of(command);
  for (const auto* nested : commands_of(command)) {
    add_unique(flags, flags_of(*nested));
  }
  return flags;
}

std::string words(const std::vector<Flag>& flags) {
  std::string out;
  for (const auto& flag : flags) {
    for (const auto& name : flag.names) {
      out += (out.empty() ? "" : " ") + name;
    }
  }
  return out;
}

// Options taking a path complete file names; other values are left to the user.
std::string value_cases(const std::vector<Flag>& flags) {
  std::string files, values;
  for (const auto& flag : flags) {
    if (!flag.takes_value) {
      continue;
    }
    std::string& into = flag.file ? files : values;
    for (const auto& name : flag.names) {
      into += (into.empty() ? "" : "|") + name;
    }
  }
  std::string out;
  if (!files.empty()) {
    out += fmt::format("    {}) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", files);
  }
  if (!values.empty()) {
    out += fmt::format("    {}) return ;;\n", values);
  }
  return out;
}

std::vector<std::string> names_of(const CLI::App& app) {
  std::vector<std::string> out;
  for (const auto* sub : commands_of(app)) {
    out.push_back(sub->get_name());
  }
  return out;
}

std::string bash_script(const CLI::App& app) {
  auto globals = flags_of(app);
  std::string names;
  std::string cases;
  std::vector<Flag> all_flags = globals;
  for (const auto* sub : commands_of(app)) {
    names += (names.empty() ? "" : " ") + sub->get_name();
    auto flags = command_flags(*sub);
    add_unique(flags, globals); // global options follow a command too
    std::string opts = words(flags);
    if (sub->get_name() == "completion") {
      opts = "bash zsh fish " + opts;
    }
    for (const auto& nested : names_of(*sub)) {
      opts = nested + " " + opts;
    }
    cases += fmt::format("    {}) opts=\"{}\" ;;\n", sub->get_name(), opts);
    add_unique(all_flags, flags);
  }
  return fmt::format(R"(# dedupctl completion for bash: source it, or put it in
# /etc/bash_completion.d/dedupctl (~/.local/share/bash-completion/completions/dedupctl for one user).
_dedupctl() {{
  local cur="${{COMP_WORDS[COMP_CWORD]}}" prev="" cmd="" opts i
  [ "$COMP_CWORD" -gt 0 ] && prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  case "$prev" in
{}  esac
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in
      {}) cmd="${{COMP_WORDS[i]}}"; break ;;
    esac
  done
  case "$cmd" in
    "") if [[ "$cur" == -* ]]; then opts="{}"; else opts="{}"; fi ;;
{}  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  return 0
}}
complete -F _dedupctl dedupctl
)",
                     value_cases(all_flags), fmt::join(names_of(app), "|"), words(globals), names, cases);
}

std::string fish_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("\\'") : c == '\\' ? std::string("\\\\") : std::string(1, c);
  }
  return out + "'";
}

std::string fish_lines(const std::vector<Flag>& flags, const std::string& condition) {
  std::string out;
  for (const auto& flag : flags) {
    std::string spec;
    for (const auto& name : flag.names) {
      spec += name.starts_with("--") ? " -l " + name.substr(2) : " -s " + name.substr(1);
    }
    out += fmt::format("complete -c dedupctl -n {}{}{} -d {}\n", fish_quote(condition), spec,
                       flag.takes_value ? (flag.file ? " -r -F" : " -x") : "", fish_quote(flag.help));
  }
  return out;
}

std::string fish_script(const CLI::App& app) {
  std::string out = "# dedupctl completion for fish: save as ~/.config/fish/completions/dedupctl.fish\n"
                    "complete -c dedupctl -f\n";
  for (const auto* sub : commands_of(app)) {
    out += fmt::format("complete -c dedupctl -n '__fish_use_subcommand' -a {} -d {}\n", sub->get_name(),
                       fish_quote(sub->get_description()));
  }
  out += fish_lines(flags_of(app), "true");
  for (const auto* sub : commands_of(app)) {
    for (const auto* nested : commands_of(*sub)) {
      out += fmt::format("complete -c dedupctl -n {} -a {} -d {}\n",
                         fish_quote("__fish_seen_subcommand_from " + sub->get_name()), nested->get_name(),
                         fish_quote(nested->get_description()));
    }
    out += fish_lines(command_flags(*sub), "__fish_seen_subcommand_from " + sub->get_name());
  }
  return out;
}

} // namespace

CommandRunner register_completion(CLI::App& app, Context& context) {
  auto shell = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("completion", "Print a shell completion script (bash, zsh or fish)");
  sub->add_option("shell", *shell, "bash, zsh or fish")->required();
  return [sub, shell, &app, &context]() -> int {
    if (!sub->parsed()) {
      return -1;
    }
    context.command = "completion";
    if (*shell == "bash") {
      fmt::print("{}", bash_script(app));
    } else if (*shell == "zsh") {
      // zsh runs bash completion functions through bashcompinit. The same text serves both ways
      // zsh takes it: sourced from ~/.zshrc, or found by compinit in a folder of $fpath as
      // _dedupctl (its first line is #compdef, as packages install it); then the file is the body
      // of the first _dedupctl call, which defines the bash function and answers that call too.
      fmt::print("#compdef dedupctl\n"
                 "# dedupctl completion for zsh: source it from ~/.zshrc, or save it as _dedupctl in a\n"
                 "# folder of $fpath (/usr/share/zsh/vendor-completions for everyone).\n"
                 "autoload -U +X bashcompinit && bashcompinit\n{}"
                 "if [[ ${{funcstack[1]}} == _dedupctl ]]; then\n"
                 "  _bash_complete -F _dedupctl\n"
                 "fi\n",
                 bash_script(app));
    } else if (*shell == "fish") {
      fmt::print("{}", fish_script(app));
    } else {
      throw UsageError(fmt::format("unknown shell '{}' for completion: bash, zsh or fish", *shell));
    }
    return 0;
  };
}

} // namespace dedupctl::commands
