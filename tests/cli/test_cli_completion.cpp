// dedupctl completion bash|zsh|fish: the scripts know every subcommand and each one's flags. The
// bash one is sourced into a real bash and asked as the shell asks it (COMP_WORDS, COMP_CWORD).
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

using namespace dedupctl::testing;

namespace {

// What _dedupctl offers for the words typed so far (the last one being completed), one a line.
std::string complete(const std::string& script, const std::vector<std::string>& typed) {
  std::string words;
  for (const auto& word : typed) {
    words += fmt::format(" '{}'", word);
  }
  std::string program =
      fmt::format("source '{}' && complete -p dedupctl >/dev/null && COMP_WORDS=({}) && "
                  "COMP_CWORD={} && _dedupctl && for word in \"${{COMPREPLY[@]}}\"; do echo \"$word\"; done",
                  script, words, typed.size() - 1);
  auto result = run_command({"bash", "--norc", "--noprofile", "-c", program});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  return result.out;
}

} // namespace

TEST(Completion, BashCompletesEveryCommandAndEachCommandsFlags) {
  auto script = run_dedupctl({"completion", "bash"});
  ASSERT_EQ(script.exit_code, 0) << script.err;
  TempDir dir;
  write_file(dir.file("dedupctl.bash"), script.out);
  std::string path = dir.file("dedupctl.bash");
  EXPECT_EQ(complete(path, {"dedupctl", "au"}), "audit\n");
  EXPECT_EQ(complete(path, {"dedupctl", "audit", "--st"}), "--store\n");
  EXPECT_EQ(complete(path, {"dedupctl", "re"}), "replay\n");
  EXPECT_EQ(complete(path, {"dedupctl", "replay", "--exe"}), "--execute\n");
  EXPECT_EQ(complete(path, {"dedupctl", "-b", "k:9092", "audit", "--comm"}), "--committed\n")
      << "a global option before the command";
  EXPECT_EQ(complete(path, {"dedupctl", "scan", "--bootstrap"}), "--bootstrap-server\n") << "globals after it";
  EXPECT_EQ(complete(path, {"dedupctl", "scan", "--st"}), "") << "scan has no --store";
  EXPECT_EQ(complete(path, {"dedupctl", "completion", "f"}), "fish\n");
  EXPECT_EQ(complete(path, {"dedupctl", "watch", "--lis"}), "--listen\n");
  EXPECT_EQ(complete(path, {"dedupctl", "scan", "--registry-t"}), "--registry-token-file\n");
  // A command's own subcommands, and their flags.
  EXPECT_EQ(complete(path, {"dedupctl", "schemas", "ex"}), "export\n");
  EXPECT_EQ(complete(path, {"dedupctl", "schemas", "export", "--schema-"}), "--schema-id\n");
  // Every command is offered.
  std::string commands = complete(path, {"dedupctl", ""});
  for (const char* command : {"scan", "audit", "check", "snapshot", "replay", "trace", "merge", "watch", "version",
                              "completion", "schemas"}) {
    EXPECT_NE(commands.find(std::string(command) + "\n"), std::string::npos) << command << " in:\n" << commands;
  }
  // A path option completes file names.
  write_file(dir.file("orders.json"), "");
  EXPECT_EQ(complete(path, {"dedupctl", "scan", "--input", dir.file("orders.j")}), dir.file("orders.json") + "\n");
}

TEST(Completion, ZshAndFishScriptsAndAnUnknownShell) {
  auto zsh = run_dedupctl({"completion", "zsh"});
  ASSERT_EQ(zsh.exit_code, 0) << zsh.err;
  EXPECT_NE(zsh.out.find("bashcompinit"), std::string::npos);
  EXPECT_NE(zsh.out.find("complete -F _dedupctl dedupctl"), std::string::npos);
  auto fish = run_dedupctl({"completion", "fish"});
  ASSERT_EQ(fish.exit_code, 0) << fish.err;
  EXPECT_NE(fish.out.find("complete -c dedupctl -n '__fish_use_subcommand' -a audit"), std::string::npos);
  EXPECT_NE(fish.out.find("complete -c dedupctl -n '__fish_seen_subcommand_from audit' -l store -x"), std::string::npos)
      << fish.out.substr(0, 2000);
  auto other = run_dedupctl({"completion", "tcsh"});
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.err.find("unknown shell 'tcsh' for completion: bash, zsh or fish"), std::string::npos) << other.err;
}
