// Output that never destroys or silently loses: a device or FIFO is written in place, a directory
// is refused, and a write that fails (a full disk) is an error with a non-zero exit, never exit 0.
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace dedupctl::testing;

namespace {

const std::string k_orders = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/orders.ndjson";

std::string shell_quote(const std::string& s) { return "'" + s + "'"; }

} // namespace

TEST(Output, AFailedWriteToStdoutIsAnErrorNotASuccess) {
  for (std::string format : {"text", "json"}) {
    auto result = run_command(
        {"sh", "-c",
         shell_quote(DEDUPCTL_BINARY) + " scan --input " + shell_quote(k_orders) + " -o " + format + " > /dev/full"});
    EXPECT_EQ(result.exit_code, 3) << format << ": " << result.err;
    EXPECT_NE(result.err.find("cannot write the report to standard output: No space left on device"), std::string::npos)
        << result.err;
  }
}

// A reader that went away (`| head` that has its lines, a pager quit) is a failed write like any:
// exit 3 and why, not a silent death by SIGPIPE. SIGPIPE is ignored because a Redis or PostgreSQL
// connection the server closed mid-pipeline must fail as an error the run reports, not kill it.
TEST(Output, AReaderThatWentAwayIsAFailedWriteNotADeathBySigpipe) {
  auto result = run_command({"bash", "-c",
                             "{ sleep 0.3; exec " + shell_quote(DEDUPCTL_BINARY) + " scan --input " +
                                 shell_quote(k_orders) + " -o json; } | true; echo ${PIPESTATUS[0]}"});
  EXPECT_EQ(result.out, "3\n") << result.err;
  EXPECT_NE(result.err.find("cannot write the report to standard output: Broken pipe"), std::string::npos)
      << result.err;
}

// `dedupctl … 2>&1 | head`: the error and notes go where the report went. A line on stderr that
// cannot be written is dropped (there is nowhere to say so); it must not abort the run (SIGABRT, 134,
// a core file) or turn its exit code into an internal error's.
TEST(Output, AReaderThatWentAwayFromStdoutAndStderrIsStillExit3) {
  for (std::string format : {"text", "json"}) {
    auto result = run_command({"bash", "-c",
                               "{ sleep 0.3; exec " + shell_quote(DEDUPCTL_BINARY) + " scan --input " +
                                   shell_quote(k_orders) + " -o " + format + " 2>&1; } | true; echo ${PIPESTATUS[0]}"});
    EXPECT_EQ(result.out, "3\n") << format << ": " << result.err;
  }
}

TEST(Output, ADeviceIsWrittenInPlaceNeverReplaced) {
  struct stat before {};
  ASSERT_EQ(::stat("/dev/null", &before), 0);
  auto result = run_dedupctl({"scan", "--input", k_orders, "--output", "/dev/null"});
  EXPECT_EQ(result.exit_code, 1) << result.err; // the example's findings
  struct stat after {};
  ASSERT_EQ(::stat("/dev/null", &after), 0);
  EXPECT_TRUE(S_ISCHR(after.st_mode)) << "/dev/null must stay a character device";
  EXPECT_EQ(after.st_rdev, before.st_rdev);
  auto full = run_dedupctl({"scan", "--input", k_orders, "--output", "/dev/full"});
  EXPECT_EQ(full.exit_code, 3) << full.err;
  EXPECT_NE(full.err.find("cannot write the report to --output /dev/full"), std::string::npos) << full.err;
}

TEST(Output, AFifoGetsTheWholeReport) {
  TempDir dir;
  std::string fifo = dir.file("report.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] {
    std::ifstream in(fifo);
    received.assign(std::istreambuf_iterator<char>(in), {});
  });
  auto result = run_dedupctl({"scan", "--input", k_orders, "-o", "json", "--output", fifo});
  reader.join();
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_NE(received.find("\"schema\": \"dedupctl.report/v1\""), std::string::npos) << received;
  struct stat st {};
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO must stay a FIFO";
}

TEST(Output, ADirectoryIsAUsageErrorNamingIt) {
  TempDir dir;
  auto result = run_dedupctl({"scan", "--input", k_orders, "--output", dir.path()});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("it is a directory"), std::string::npos) << result.err;
}

// Where the report cannot go, the message says why in terms of the path given (it said "No such
// file or directory" for /proc/version, which exists).
TEST(Output, APathThatCannotTakeTheReportSaysWhy) {
  TempDir dir;
  write_file(dir.file("plain"), "x");
  for (const auto& [path, says] : std::vector<std::pair<std::string, std::string>>{
           {dir.file("missing/report.json"), "the directory " + dir.file("missing") + " does not exist"},
           {dir.file("plain/report.json"), dir.file("plain") + " is not a directory"},
           // As root: procfs takes no new file; as anyone else the file itself is not writable.
           {"/proc/version",
            ::geteuid() == 0 ? "no new file can be created in /proc" : "is not writable by this user"}}) {
    auto result = run_dedupctl({"scan", "--input", k_orders, "--output", path});
    EXPECT_EQ(result.exit_code, 2) << path;
    EXPECT_NE(result.err.find("cannot write --output " + path + ": "), std::string::npos) << result.err;
    EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
  }
  std::ifstream version("/proc/version");
  std::string first;
  std::getline(version, first);
  EXPECT_EQ(first.rfind("Linux", 0), 0u) << "/proc/version is untouched";
}

// -q keeps the notes off stderr, not the error that ends a run: a CI job run with -q that exits 3
// says why on stderr too, in one line, as well as in its report.
TEST(Output, QuietKeepsTheErrorThatEndsTheRun) {
  auto result = run_dedupctl({"scan", "-b", fmt::format("127.0.0.1:{}", free_port()), "--topic", "orders", "--timeout",
                              "1s", "-o", "json", "-q"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_TRUE(result.err.starts_with("dedupctl: error: cannot reach Kafka at 127.0.0.1:")) << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_NE(result.out.find("\"complete\": false"), std::string::npos) << result.out;
}

// A run that fails writes its document where --output says, as a run that succeeds does: the report
// with -o json, GitLab's code-quality file, SARIF and JUnit for the CI that reads them (a usage
// error such as a declarations file's bad line included), and nothing of it on stdout.
TEST(Output, AFailureWritesItsDocumentWhereOutputSays) {
  TempDir dir;
  write_file(dir.file("bad.toml"), "[[consumer]]\nname = \"a\"\ntopic = \"t\"\nplacment = \"redis\"\n");
  for (std::string format : {"json", "gitlab", "sarif", "junit", "github", "markdown", "html"}) {
    std::string out = dir.file("report." + format);
    auto result = run_dedupctl({"check", dir.file("bad.toml"), "-o", format, "--output", out});
    EXPECT_EQ(result.exit_code, 2) << format << ": " << result.err;
    EXPECT_EQ(result.out, "") << format << ": the document goes to --output, not stdout";
    ASSERT_TRUE(std::filesystem::exists(out)) << format << ": no document written; " << result.err;
    std::string text = read_file(out);
    EXPECT_NE(text.find("bad.toml:1:1"), std::string::npos) << format << ": the first error's place; " << text;
  }
  // Without --output, the document is on stdout; with -o text, only the error line on stderr.
  auto json = run_dedupctl({"check", dir.file("bad.toml"), "-o", "json"});
  EXPECT_EQ(json.exit_code, 2);
  EXPECT_NE(json.out.find("\"complete\": false"), std::string::npos) << json.out;
  auto text = run_dedupctl({"check", dir.file("bad.toml"), "--output", dir.file("report.txt")});
  EXPECT_EQ(text.exit_code, 2);
  EXPECT_FALSE(std::filesystem::exists(dir.file("report.txt")));
  EXPECT_NE(text.err.find("bad.toml:4:1: error: unknown key"), std::string::npos)
      << "every error on stderr: " << text.err;
  // An unreachable system (exit 3) writes its document there too.
  std::string unreachable = dir.file("unreachable.json");
  auto down = run_dedupctl(
      {"scan", "-b", "127.0.0.1:1", "--topic", "t", "--timeout", "2s", "-o", "json", "--output", unreachable});
  EXPECT_EQ(down.exit_code, 3) << down.err;
  EXPECT_EQ(down.out, "");
  EXPECT_NE(read_file(unreachable).find("\"complete\": false"), std::string::npos);
  // snapshot's --output is the snapshot itself: a failure never stands in for one there; its document
  // goes to stdout.
  std::string snapshot = dir.file("keys.tsv");
  auto snap = run_dedupctl(
      {"snapshot", "--store", "redis://127.0.0.1:1", "--timeout", "2s", "-o", "json", "--output", snapshot});
  EXPECT_EQ(snap.exit_code, 3) << snap.err;
  EXPECT_FALSE(std::filesystem::exists(snapshot)) << read_file(snapshot);
  EXPECT_NE(snap.out.find("\"complete\": false"), std::string::npos) << snap.out;
}
