// The CI templates as CI runs them: the GitHub Action (action.yml) step by step as the runner runs a
// composite action (tests/support/ci/run_action.py: its bash steps with the inputs as GitHub sets
// them, GITHUB_OUTPUT and GITHUB_STEP_SUMMARY files, `if:` conditions, the SARIF upload recorded with
// what it would upload), and the GitLab job of examples/ci/gitlab-ci.yml, its script run in a shell
// and its Code Quality artifact checked.
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

const std::string k_source = DEDUPCTL_SOURCE_DIR;
const std::string k_example = k_source + "/examples/dedupctl.toml";

struct ActionRun {
  int exit_code = -1;
  std::string out;
  std::string err;
  Json result;
};

// The action in a workspace holding the example declarations as dedupctl.toml.
ActionRun run_action(const TempDir& workspace, const std::vector<std::string>& inputs) {
  std::filesystem::copy_file(k_example, workspace.file("dedupctl.toml"),
                             std::filesystem::copy_options::overwrite_existing);
  std::vector<std::string> argv{"python3", k_source + "/tests/support/ci/run_action.py", k_source + "/action.yml",
                                workspace.path(), workspace.file("result.json")};
  argv.insert(argv.end(), inputs.begin(), inputs.end());
  auto done = run_command(argv);
  ActionRun run{done.exit_code, done.out, done.err, Json::object()};
  try {
    run.result = Json::parse(read_file(workspace.file("result.json")));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "no result from run_action.py: " << e.what() << "\n" << done.err;
  }
  return run;
}

const Json* step_using(const Json& result, const std::string& prefix) {
  for (const auto& step : result.at("steps")) {
    if (step.contains("uses") && step.at("uses").get<std::string>().starts_with(prefix)) {
      return &step;
    }
  }
  return nullptr;
}

bool skipped_upload(const Json& result) {
  for (const auto& step : result.at("steps")) {
    if (step.value("skipped", false) && step.at("index") == 1) {
      return true;
    }
  }
  return false;
}

} // namespace

// The example's two findings (an error at line 30, a warning at line 13): the step fails with
// dedupctl's exit status 1 after the SARIF is written and handed to upload-sarif; the TOML lines
// are annotated; the outputs and the job summary say the same.
TEST(GithubAction, GatesOnTheFindingsWithSarifAnnotationsOutputsAndSummary) {
  TempDir workspace;
  auto run = run_action(workspace, {"dedupctl=" + std::string(DEDUPCTL_BINARY)});
  ASSERT_EQ(run.exit_code, 1) << run.out << run.err;
  const Json& outputs = run.result.at("outputs");
  EXPECT_EQ(outputs.at("exit-code"), "1");
  EXPECT_EQ(outputs.at("findings"), "2");
  EXPECT_EQ(outputs.at("report-file"), "dedupctl.sarif");
  Json sarif = Json::parse(read_file(workspace.file("dedupctl.sarif")));
  EXPECT_EQ(sarif.at("runs")[0].at("results").size(), 2u);
  const Json* upload = step_using(run.result, "github/codeql-action/upload-sarif@");
  ASSERT_NE(upload, nullptr) << run.result.dump(2);
  EXPECT_EQ(upload->at("with").at("sarif_file"), "dedupctl.sarif");
  EXPECT_NE(run.out.find("::error file=dedupctl.toml,line=30,col=1,title=dedupctl ttl-shorter-than-retention::"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("::warning file=dedupctl.toml,line=13,col=1,title=dedupctl ttl-margin-thin::"),
            std::string::npos)
      << run.out;
  std::string summary = run.result.at("step_summary");
  EXPECT_NE(summary.find("# dedupctl check"), std::string::npos) << summary;
  EXPECT_NE(summary.find("exit 1, --fail-on error"), std::string::npos) << summary;
  EXPECT_NE(summary.find("ttl-shorter-than-retention"), std::string::npos) << summary;
}

// fail-on none passes the same findings; warning keeps failing; the GitLab format goes to its file
// and is not handed to upload-sarif.
TEST(GithubAction, FailOnAndFormatInputsAreDedupctlsOwn) {
  TempDir passing;
  auto none = run_action(passing, {"dedupctl=" + std::string(DEDUPCTL_BINARY), "fail-on=none"});
  EXPECT_EQ(none.exit_code, 0) << none.out << none.err;
  EXPECT_EQ(none.result.at("outputs").at("exit-code"), "0");
  EXPECT_EQ(none.result.at("outputs").at("findings"), "2");

  TempDir gitlab;
  auto run = run_action(gitlab, {"dedupctl=" + std::string(DEDUPCTL_BINARY), "format=gitlab",
                                 "report-file=gl-code-quality-report.json", "fail-on=warning"});
  EXPECT_EQ(run.exit_code, 1) << run.out << run.err;
  EXPECT_EQ(run.result.at("outputs").at("report-file"), "gl-code-quality-report.json");
  EXPECT_TRUE(skipped_upload(run.result)) << run.result.dump(2);
  Json issues = Json::parse(read_file(gitlab.file("gl-code-quality-report.json")));
  ASSERT_EQ(issues.size(), 2u);
  EXPECT_EQ(issues[0].at("location").at("path"), "dedupctl.toml");
}

// A file that cannot be read, a bad input, and no dedupctl to run: exit status 2 with an
// annotation that says what to do; dedupctl's own failure document is handed on when it wrote one.
TEST(GithubAction, BadInputsAndAMissingDedupctlAreExit2WithAnAnnotation) {
  TempDir missing_file;
  auto unreadable = run_action(missing_file, {"dedupctl=" + std::string(DEDUPCTL_BINARY), "config=nope.toml"});
  EXPECT_EQ(unreadable.exit_code, 2) << unreadable.out << unreadable.err;
  // The failure's own SARIF is written where the action asked (issue 60: a failure writes its document
  // where --output says), and handed on: it says why (executionSuccessful false).
  EXPECT_EQ(unreadable.result.at("outputs").at("report-file"), "dedupctl.sarif");
  EXPECT_FALSE(skipped_upload(unreadable.result));
  EXPECT_NE(unreadable.out.find("::error title=dedupctl check::nope.toml cannot be checked"), std::string::npos)
      << unreadable.out;

  TempDir bad_input;
  auto live = run_action(bad_input, {"dedupctl=" + std::string(DEDUPCTL_BINARY), "live=yes"});
  EXPECT_EQ(live.exit_code, 2);
  EXPECT_NE(live.out.find("::error title=dedupctl action::input live is 'yes': expected true or false"),
            std::string::npos)
      << live.out;

  TempDir not_installed; // PATH without dedupctl (the tests never put the build dir on it)
  auto absent = run_action(not_installed, {});
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_NE(absent.out.find("dedupctl is not installed: install the .deb scripts/package builds"), std::string::npos)
      << absent.out;
}

// The GitLab job of examples/ci/gitlab-ci.yml: its script, run in a shell with dedupctl on PATH as
// the image has it, fails the job on the example's error and leaves the Code Quality report where
// artifacts:reports:codequality says, kept when the job fails.
TEST(GitlabTemplate, TheJobsScriptWritesItsCodeQualityArtifactAndFailsOnFindings) {
  TempDir workspace;
  std::filesystem::copy_file(k_example, workspace.file("dedupctl.toml"));
  auto parsed =
      run_command({"python3", "-c", "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
                   k_source + "/examples/ci/gitlab-ci.yml"});
  ASSERT_EQ(parsed.exit_code, 0) << parsed.err;
  Json job = Json::parse(parsed.out).at("dedupctl");
  EXPECT_EQ(job.at("artifacts").at("when"), "always");
  std::string artifact = job.at("artifacts").at("reports").at("codequality");
  std::string script;
  for (const auto& [name, value] : job.at("variables").items()) {
    script += fmt::format("export {}='{}'\n", name, value.get<std::string>());
  }
  for (const auto& line : job.at("script")) {
    script += line.get<std::string>() + "\n";
  }
  std::string path = std::filesystem::path(DEDUPCTL_BINARY).parent_path().string() + ":" + std::getenv("PATH");
  auto ran = run_command({"sh", "-ec", "cd \"$1\" && eval \"$2\"", "sh", workspace.path(), script}, {},
                         std::chrono::seconds(60), {{"PATH", path}});
  EXPECT_EQ(ran.exit_code, 1) << ran.out << ran.err;
  Json issues = Json::parse(read_file(workspace.file(artifact)));
  ASSERT_EQ(issues.size(), 2u);
  for (const auto& issue : issues) {
    for (const char* field : {"type", "check_name", "description", "categories", "fingerprint", "severity"}) {
      EXPECT_TRUE(issue.contains(field)) << field << " in " << issue.dump();
    }
    EXPECT_EQ(issue.at("location").at("path"), "dedupctl.toml");
  }
  EXPECT_EQ(issues[0].at("location").at("lines").at("begin"), 30);
  EXPECT_EQ(issues[0].at("severity"), "critical");
  // The same findings from a second run keep their fingerprints.
  auto again = run_command({"sh", "-ec", "cd \"$1\" && eval \"$2\"", "sh", workspace.path(), script}, {},
                           std::chrono::seconds(60), {{"PATH", path}});
  Json second = Json::parse(read_file(workspace.file(artifact)));
  EXPECT_EQ(second[0].at("fingerprint"), issues[0].at("fingerprint"));
  EXPECT_EQ(second[1].at("fingerprint"), issues[1].at("fingerprint"));
  EXPECT_NE(issues[0].at("fingerprint"), issues[1].at("fingerprint"));
}
