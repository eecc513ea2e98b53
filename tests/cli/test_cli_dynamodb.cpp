// dynamodb:// as a placement, end to end against moto's server with IAM authentication on (every
// request's SigV4 signature checked against the key it issued): the records Powertools keeps in its
// table, read live, from `aws dynamodb scan --output json`, from an export's gzipped lines and from a
// snapshot; throttling and partial batches from a fault proxy; credentials from every source; refusals.
#include "tests/support/dynamodb_server.hpp"
#include "tests/support/fixtures.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

constexpr const char* k_table = "idempotency";
constexpr const char* k_prefix = "charge";

std::int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Item of a Powertools record "charge#ID" (the key template below keeps the id readable).
std::string item(const std::string& id, const std::string& status, std::int64_t expiration,
                 std::optional<std::int64_t> lease_ms = std::nullopt) {
  Json out{{"id", {{"S", fmt::format("{}#{}", k_prefix, id)}}},
           {"status", {{"S", status}}},
           {"expiration", {{"N", std::to_string(expiration)}}},
           {"data", {{"S", "{\"charged\": true}"}}}};
  if (lease_ms) {
    out["in_progress_expiration"] = {{"N", std::to_string(*lease_ms)}};
  }
  return out.dump();
}

// A kcat -J dump of topic payments, partition 0: one event a millisecond from `first_ms`, ids
// PREFIX0, PREFIX1 … in the JSON payload.
void write_events(const std::string& path, const std::string& prefix, int count, std::int64_t first_ms) {
  std::string dump;
  for (int i = 0; i < count; ++i) {
    dump += Json{{"topic", "payments"},
                 {"partition", 0},
                 {"offset", i},
                 {"tstype", "create"},
                 {"ts", first_ms + i},
                 {"broker", 1},
                 {"headers", Json::array()},
                 {"key", nullptr},
                 {"payload", Json{{"event_id", fmt::format("{}{}", prefix, i)}}.dump()}}
                .dump() +
            "\n";
  }
  write_file(path, dump);
}

class Dynamo : public ::testing::Test {
protected:
  // The table and its records: e0-e2 completed, e3 a claim whose lease passed (a handler killed
  // mid-event: Powertools takes it over and applies again), e4 expired though DynamoDB has not deleted
  // it yet, e5 none; and a record of another function beside them.
  static void seed(const DynamoServer& server) {
    server.create_table(k_table);
    std::int64_t now = now_s();
    auto put = [&](const std::string& item_json) {
      server.admin({"put-item", server.endpoint(), DynamoServer::k_region, k_table, item_json});
    };
    for (const char* id : {"e0", "e1", "e2"}) {
      put(item(id, "COMPLETED", now + 30 * 86400));
    }
    put(item("e3", "INPROGRESS", now + 3600, (now - 60) * 1000));
    put(item("e4", "COMPLETED", now - 10));
    put(Json{{"id", {{"S", "other#e0"}}}, {"status", {{"S", "COMPLETED"}}}}.dump());
  }

  void SetUp() override {
    DEDUPCTL_REQUIRE_SERVER(m_server.available(), m_server.why_unavailable());
    seed(m_server);
    write_events(m_dir.file("events.ndjson"), "e", 6, (now_s() - 600) * 1000);
  }

  // An audit of events.ndjson against `store` as a JSON report; `keys` say how the layout's keys are
  // made (by default a template that keeps the id readable in the table).
  std::vector<std::string> audit_args(const std::string& store, std::vector<std::string> keys = {}) const {
    if (keys.empty()) {
      keys = {"--key-template", std::string(k_prefix) + "#{event_id}"};
    }
    std::vector<std::string> args{"audit", "--input",  m_dir.file("events.ndjson"), "--id", "json:/event_id", "--store",
                                  store,   "--layout", "powertools-python"};
    args.insert(args.end(), keys.begin(), keys.end());
    args.insert(args.end(), {"--retention", "7d", "--ttl", "8d", "--fail-on", "none", "-o", "json"});
    return args;
  }

  // replay --execute of the events of `input` through the table into the file `sink`, 10 a batch,
  // each id's record under `key_template`.
  std::vector<std::string> replay_args(const std::string& input, const std::string& key_template,
                                       const std::string& sink) const {
    return {"replay",
            "--input",
            input,
            "--id",
            "json:/event_id",
            "--via",
            m_server.uri(k_table),
            "--layout",
            "powertools-python",
            "--key-template",
            key_template,
            "--ttl",
            "1h",
            "--batch",
            "10",
            "--sink",
            "file:" + sink,
            "--execute"};
  }

  Json audit(const std::string& store, const std::map<std::string, std::string>& env, int expect = 0) {
    auto result = run_dedupctl(audit_args(store), "", env);
    EXPECT_EQ(result.exit_code, expect) << result.err;
    EXPECT_EQ(result.err.find(m_server.secret()), std::string::npos) << result.err;
    EXPECT_EQ(result.out.find(m_server.secret()), std::string::npos);
    return Json::parse(result.out, nullptr, false);
  }

  static void expect_powertools_states(const Json& report) {
    ASSERT_TRUE(report.is_object());
    const auto& summary = report.at("summary");
    EXPECT_EQ(summary.at("covered"), 3) << summary.dump();
    EXPECT_EQ(summary.at("orphaned"), 1) << summary.dump();
    EXPECT_EQ(summary.at("expired"), 1) << summary.dump();
    EXPECT_EQ(summary.at("missing"), 1) << summary.dump();
    std::set<std::string> reapplied;
    for (const auto& finding : report.at("findings")) {
      if (finding.at("id") == "replay-risk") {
        for (const auto& example : finding.at("examples")) {
          reapplied.insert(example.at("event_id").get<std::string>());
        }
      }
    }
    EXPECT_EQ(reapplied, (std::set<std::string>{"e3", "e4", "e5"})) << report.at("findings").dump();
  }

  DynamoServer m_server{true};
  TempDir m_dir;
};

} // namespace

TEST_F(Dynamo, PowertoolsRecordsReadLiveFromAScanAnExportAndASnapshotGiveOneVerdict) {
  Json live = audit(m_server.uri(k_table), m_server.env());
  expect_powertools_states(live);
  EXPECT_EQ(live.at("placement").at("kind"), "dynamodb");
  EXPECT_TRUE(live.at("complete").get<bool>());

  // `aws dynamodb scan --output json`, by the AWS CLI itself.
  std::string scan = m_dir.file("scan.json");
  write_file(scan, m_server.admin({"scan-json", m_server.endpoint(), DynamoServer::k_region, k_table}));
  expect_powertools_states(audit("file:" + scan, {}));

  // An export to S3 in DYNAMODB_JSON: data/*.json.gz of {"Item":…} lines.
  Json items = Json::parse(read_file(scan)).at("Items");
  std::filesystem::create_directories(m_dir.file("export/data"));
  std::string lines;
  for (std::size_t i = 0; i < items.size(); ++i) {
    lines += Json{{"Item", items[i]}}.dump() + "\n";
  }
  write_file(m_dir.file("export/data/part.json"), lines);
  ASSERT_EQ(run_command({"gzip", m_dir.file("export/data/part.json")}).exit_code, 0);
  write_file(m_dir.file("export/manifest-summary.json"), "{}");
  expect_powertools_states(audit("file:" + m_dir.file("export"), {}));

  // dedupctl's own snapshot, by a parallel scan.
  std::string snapshot = m_dir.file("records.snapshot");
  auto taken = run_dedupctl({"snapshot", "--store", m_server.uri(k_table), "--layout", "powertools-python",
                             "--segments", "3", "--output", snapshot},
                            "", m_server.env());
  ASSERT_EQ(taken.exit_code, 0) << taken.err;
  expect_powertools_states(audit("file:" + snapshot, {}));
}

TEST_F(Dynamo, AWrongSecretRegionOrTableIsNamedWithoutAVerdict) {
  auto env = m_server.env();
  env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret-of-this-key";
  auto refused = run_dedupctl(audit_args(m_server.uri(k_table)), "", env);
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_NE(refused.err.find("refused DescribeTable on table idempotency"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("SignatureDoesNotMatch"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.err.find("not-the-secret-of-this-key"), std::string::npos);
  Json report = Json::parse(refused.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << refused.out;
  EXPECT_FALSE(report.at("complete").get<bool>());

  std::string elsewhere = fmt::format("dynamodb://{}?region=us-west-2&endpoint={}", k_table, m_server.endpoint());
  auto wrong_region = run_dedupctl(audit_args(elsewhere), "", m_server.env());
  EXPECT_EQ(wrong_region.exit_code, 2) << wrong_region.err;
  EXPECT_NE(wrong_region.err.find("has no table idempotency in region us-west-2"), std::string::npos)
      << wrong_region.err;

  auto wrong_table = run_dedupctl(audit_args(m_server.uri("idempotency-typo")), "", m_server.env());
  EXPECT_EQ(wrong_table.exit_code, 2) << wrong_table.err;
  EXPECT_NE(wrong_table.err.find("no table idempotency-typo"), std::string::npos) << wrong_table.err;

  // Nothing listening: three tries, then exit 3 with an incomplete report.
  auto unreachable = run_dedupctl(
      audit_args(fmt::format("dynamodb://{}?region=eu-west-1&endpoint=http://127.0.0.1:{}", k_table, free_port())), "",
      m_server.env());
  EXPECT_EQ(unreachable.exit_code, 3) << unreachable.err;
  EXPECT_NE(unreachable.err.find("cannot reach DynamoDB at http://127.0.0.1:"), std::string::npos) << unreachable.err;
  EXPECT_FALSE(Json::parse(unreachable.out).at("complete").get<bool>());

  auto no_credentials = run_dedupctl(audit_args(m_server.uri(k_table)), "",
                                     {{"AWS_SHARED_CREDENTIALS_FILE", "/nonexistent"},
                                      {"AWS_CONFIG_FILE", "/nonexistent"},
                                      {"AWS_ACCESS_KEY_ID", ""},
                                      {"AWS_SECRET_ACCESS_KEY", ""}});
  EXPECT_EQ(no_credentials.exit_code, 2) << no_credentials.err;
  EXPECT_NE(no_credentials.err.find("no AWS credentials"), std::string::npos) << no_credentials.err;
}

TEST_F(Dynamo, ThrottlingAndUnprocessedKeysAreAskedAgainUntilEveryKeyIsRead) {
  FaultProxy proxy(m_server, {"--throttle", "3", "--unprocessed", "2"});
  expect_powertools_states(audit(m_server.uri(k_table, proxy.port()), m_server.env()));
  auto stats = proxy.stats();
  EXPECT_EQ(stats["throttled"], 3);
  EXPECT_EQ(stats["unprocessed"], 2);
  EXPECT_GE(stats["batch_gets"], 3) << "the unprocessed keys were asked again";

  // Throttled for good: exit 3, and no verdict over the keys never read.
  FaultProxy throttled(m_server, {"--throttle", "100000"});
  auto result = run_dedupctl(audit_args(m_server.uri(k_table, throttled.port())), "", m_server.env());
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("ProvisionedThroughputExceededException"), std::string::npos) << result.err;
  Json report = Json::parse(result.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << result.out;
  EXPECT_FALSE(report.at("complete").get<bool>());
}

TEST_F(Dynamo, AServerDyingMidRunIsExit3WithoutAVerdict) {
  // 3000 events: 30 BatchGetItem requests of 100 keys; the proxy dies after the table's description and 5 of them.
  write_events(m_dir.file("many.ndjson"), "m", 3000, now_s() * 1000);
  FaultProxy dying(m_server, {"--die-after", "6"});
  auto args = audit_args(m_server.uri(k_table, dying.port()));
  args[2] = m_dir.file("many.ndjson");
  auto result = run_dedupctl(args, "", m_server.env());
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("cannot reach DynamoDB"), std::string::npos) << result.err;
  Json report = Json::parse(result.out, nullptr, false);
  ASSERT_TRUE(report.is_object()) << result.out;
  EXPECT_FALSE(report.at("complete").get<bool>());
  EXPECT_LT(report.at("summary").value("covered", 0) + report.at("summary").value("missing", 0), 3000)
      << "no verdict over the keys never read";
  // Nor where a seek is safe from, or what it would re-apply: both are answers about those keys too.
  ASSERT_TRUE(report.contains("replay")) << result.out;
  const Json& replay = report.at("replay");
  EXPECT_TRUE(replay.at("safe_from").is_null()) << replay.dump();
  EXPECT_TRUE(replay.at("would_reapply").is_null()) << replay.dump();
  EXPECT_TRUE(replay.at("by_type").is_null()) << replay.dump();
  for (const auto& f : report.at("findings")) {
    EXPECT_NE(f.at("id"), "replay-risk") << f.dump();
  }
  // The text report, through a proxy of its own that dies at the same point.
  FaultProxy dying_again(m_server, {"--die-after", "6"});
  auto text_args = audit_args(m_server.uri(k_table, dying_again.port()));
  text_args[2] = m_dir.file("many.ndjson");
  text_args.back() = "text"; // audit_args ends with -o json
  auto text = run_dedupctl(text_args, "", m_server.env());
  EXPECT_EQ(text.exit_code, 3) << text.err;
  EXPECT_NE(text.out.find("REPLAY WINDOW"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("not known"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("safe from "), std::string::npos) << text.out;
}

TEST_F(Dynamo, CredentialsComeFromAProfileACredentialProcessAndAWebIdentity) {
  auto base = m_server.env();
  base.erase("AWS_ACCESS_KEY_ID");
  base.erase("AWS_SECRET_ACCESS_KEY");
  // A profile's keys, named by --aws-profile, over the environment's (wrong) keys.
  write_file(m_dir.file("credentials"),
             fmt::format("[default]\naws_access_key_id = AKIAWRONG\naws_secret_access_key = wrong\n\n"
                         "# the team's\n[billing]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
                         m_server.key_id(), m_server.secret()));
  auto env = base;
  env["AWS_SHARED_CREDENTIALS_FILE"] = m_dir.file("credentials");
  env["AWS_ACCESS_KEY_ID"] = "AKIAWRONG";
  env["AWS_SECRET_ACCESS_KEY"] = "wrong";
  auto args = audit_args(m_server.uri(k_table));
  args.insert(args.begin() + 1, {"--aws-profile", "billing"});
  auto profiled = run_dedupctl(args, "", env);
  EXPECT_EQ(profiled.exit_code, 0) << profiled.err;
  expect_powertools_states(Json::parse(profiled.out, nullptr, false));

  // credential_process, its credentials lapsing within minutes: run again before they do, and the
  // secret it prints never shown.
  std::string runs = m_dir.file("runs");
  write_file(m_dir.file("process.sh"),
             fmt::format("#!/bin/sh\necho run >> {}\nexp=$(date -u -d '+4 minutes' +%Y-%m-%dT%H:%M:%SZ)\n"
                         "printf '{{\"Version\": 1, \"AccessKeyId\": \"{}\", \"SecretAccessKey\": \"{}\", "
                         "\"Expiration\": \"%s\"}}' \"$exp\"\n",
                         runs, m_server.key_id(), m_server.secret()));
  std::filesystem::permissions(m_dir.file("process.sh"), std::filesystem::perms::owner_all);
  write_file(m_dir.file("config"),
             fmt::format("[profile process]\nregion = eu-west-1\ncredential_process = {}\n", m_dir.file("process.sh")));
  env = base;
  env["AWS_CONFIG_FILE"] = m_dir.file("config");
  env["AWS_PROFILE"] = "process";
  expect_powertools_states(audit(m_server.uri(k_table), env));
  EXPECT_GE(std::count(read_file(runs).begin(), read_file(runs).end(), '\n'), 2)
      << "credentials that lapse within the refresh margin are fetched again";

  // A web identity token (EKS's IRSA): AssumeRoleWithWebIdentity at STS for temporary credentials.
  // STS takes that call unsigned, which moto's IAM authentication cannot (it fails on the missing
  // Authorization header), so this part runs on a server of its own without it.
  DynamoServer open(false);
  ASSERT_TRUE(open.available()) << open.why_unavailable();
  seed(open);
  std::string role = open.admin({"create-role", open.endpoint()});
  role = role.substr(0, role.find('\n'));
  write_file(m_dir.file("token"), "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQifQ.c2ln\n");
  env = base;
  env["AWS_WEB_IDENTITY_TOKEN_FILE"] = m_dir.file("token");
  env["AWS_ROLE_ARN"] = role;
  env["AWS_ENDPOINT_URL_STS"] = open.endpoint();
  auto assumed = run_dedupctl(audit_args(open.uri(k_table)), "", env);
  ASSERT_EQ(assumed.exit_code, 0) << assumed.err;
  expect_powertools_states(Json::parse(assumed.out, nullptr, false));

  // Credentials refused as expired mid-run are fetched again, and the run goes on.
  FaultProxy expiring(open, {"--expire-token", "1"});
  auto renewed = run_dedupctl(audit_args(open.uri(k_table, expiring.port())), "", env);
  ASSERT_EQ(renewed.exit_code, 0) << renewed.err;
  expect_powertools_states(Json::parse(renewed.out, nullptr, false));
  EXPECT_EQ(expiring.stats()["expired"], 1);
}

TEST_F(Dynamo, ABadScanFileIsNamedWithItsLine) {
  std::string scan = m_dir.file("scan.json");
  write_file(scan, "{\n  \"Items\": [\n    {\"id\": {\"S\": \"charge#e0\"}},\n    {\"id\": \n");
  auto broken = run_dedupctl(audit_args("file:" + scan));
  EXPECT_EQ(broken.exit_code, 2) << broken.err;
  EXPECT_NE(broken.err.find(scan + ": not JSON at line 5"), std::string::npos) << broken.err;

  write_file(scan, R"({"Items": [], "Count": 0, "NextToken": "eyJFeGNsdXNpdmVTdGFydEtleSI6IG51bGx9"})");
  auto cut = run_dedupctl(audit_args("file:" + scan));
  EXPECT_EQ(cut.exit_code, 2) << cut.err;
  EXPECT_NE(cut.err.find("NextToken"), std::string::npos) << cut.err;
  // One page, as `--no-paginate` or boto3's scan() writes it: refused too, and nothing audited.
  write_file(scan, R"({"Items": [{"id": {"S": "charge#e0"}}], "Count": 1, "ScannedCount": 1, )"
                   R"("LastEvaluatedKey": {"id": {"S": "charge#e0"}}})");
  auto page = run_dedupctl(audit_args("file:" + scan));
  EXPECT_EQ(page.exit_code, 2) << page.err;
  EXPECT_NE(page.err.find("LastEvaluatedKey"), std::string::npos) << page.err;
  EXPECT_EQ(page.out.find("\"covered\""), std::string::npos) << "no verdict over one page: " << page.out;

  std::filesystem::create_directories(m_dir.file("export/data"));
  write_file(m_dir.file("export/data/a.json"), "{\"Item\": {\"id\": {\"S\": \"charge#e0\"}}}\n{\"Item\": [}\n");
  ASSERT_EQ(run_command({"gzip", m_dir.file("export/data/a.json")}).exit_code, 0);
  auto line = run_dedupctl(audit_args("file:" + m_dir.file("export")));
  EXPECT_EQ(line.exit_code, 2) << line.err;
  EXPECT_NE(line.err.find("a.json.gz:2: "), std::string::npos) << line.err;
}

TEST_F(Dynamo, CheckLiveReadsTheTablesTtlAndSize) {
  m_server.admin({"create-table", m_server.endpoint(), DynamoServer::k_region, "NoTtl", "-", ""});
  m_server.admin({"create-table", m_server.endpoint(), DynamoServer::k_region, "OtherTtl", "-", "ttl"});
  std::string declarations;
  for (const char* table : {k_table, "NoTtl", "OtherTtl"}) {
    declarations += fmt::format("[[consumer]]\nname = \"{}\"\ntopic = \"payments\"\nplacement = \"dynamodb\"\n"
                                "store = \"{}\"\nlayout = \"powertools-python\"\nkey_prefix = \"charge\"\n"
                                "ttl = \"8d\"\nretention = \"7d\"\n\n",
                                table, m_server.uri(table));
  }
  write_file(m_dir.file("dedupctl.toml"), declarations);
  auto result = run_dedupctl({"check", m_dir.file("dedupctl.toml"), "--live", "-o", "json", "--fail-on", "none"}, "",
                             m_server.env());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Json report = Json::parse(result.out, nullptr, false);
  std::multiset<std::string> found;
  for (const auto& finding : report.at("findings")) {
    std::string title = finding.at("title");
    found.insert(finding.at("id").get<std::string>() + " " + title.substr(0, title.find(':')));
  }
  EXPECT_EQ(found.count("dynamodb-ttl-disabled NoTtl"), 1u) << result.out;
  EXPECT_EQ(found.count("dynamodb-ttl-attribute OtherTtl"), 1u) << result.out;
  EXPECT_EQ(found.count("dynamodb-ttl-disabled idempotency"), 0u) << result.out;
  EXPECT_EQ(found.count("dynamodb-ttl-attribute idempotency"), 0u) << result.out;
  // moto's DescribeTable says TableSizeBytes 0 (DynamoDB's own estimate is renewed every six hours), so
  // max_read_units is judged by the unit tests (CheckLive.ADynamoTablesTtlAndReadCostBecomeFindings).
  EXPECT_TRUE(report.at("complete").get<bool>());
}

TEST_F(Dynamo, TwoReplaysAtOnceThroughTheTablePublishEachEventOnce) {
  // 200 events of ids nobody recorded: two runs at once, each claiming by a conditional PutItem.
  write_events(m_dir.file("replay.ndjson"), "r", 200, now_s() * 1000);
  auto args = [&](const std::string& sink) {
    return replay_args(m_dir.file("replay.ndjson"), std::string(k_prefix) + "#{event_id}", sink);
  };
  std::string a = m_dir.file("a.ndjson");
  std::string b = m_dir.file("b.ndjson");
  CommandResult first;
  std::thread other([&] { first = run_dedupctl(args(a), "", m_server.env()); });
  auto second = run_dedupctl(args(b), "", m_server.env());
  other.join();
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  std::multiset<std::string> published;
  for (const auto& file : {a, b}) {
    std::istringstream lines(read_file(file));
    for (std::string line; std::getline(lines, line);) {
      published.insert(Json::parse(Json::parse(line).at("payload").get<std::string>()).at("event_id"));
    }
  }
  EXPECT_EQ(published.size(), 200u);
  EXPECT_EQ(std::set<std::string>(published.begin(), published.end()).size(), 200u) << "an event published twice";
  // Each record is the library's completed one now.
  std::string scan = m_server.admin({"scan-json", m_server.endpoint(), DynamoServer::k_region, k_table});
  EXPECT_EQ(std::count(scan.begin(), scan.end(), '\n') > 0, true);
  Json items = Json::parse(scan).at("Items");
  int completed = 0;
  for (const auto& item : items) {
    if (item.at("id").at("S").get<std::string>().starts_with("charge#r") && item.at("status").at("S") == "COMPLETED") {
      ++completed;
    }
  }
  EXPECT_EQ(completed, 200);
}

// Powertools' other table shape: one static partition key (static_pk_value) and the record's key as
// the sort key, written by Powertools for Python itself, beside another function's records.
TEST_F(Dynamo, AStaticPartitionKeyWithTheHashAsSortKeyIsReadThroughLayoutOptions) {
  m_server.admin({"create-table", m_server.endpoint(), DynamoServer::k_region, "Shared", "sk"});
  m_server.admin(
      {"powertools", m_server.endpoint(), DynamoServer::k_region, "Shared", "sk", "idempotency#billing", "e0", "e1"});
  m_server.admin(
      {"powertools", m_server.endpoint(), DynamoServer::k_region, "Shared", "sk", "idempotency#fraud", "e2"});
  auto args = audit_args(m_server.uri("Shared"), {"--key-prefix", "charge", "--layout-option", "sort-key=sk",
                                                  "--layout-option", "static-partition-key=idempotency#billing"});
  auto result = run_dedupctl(args, "", m_server.env());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  Json summary = Json::parse(result.out).at("summary");
  EXPECT_EQ(summary.at("covered"), 2) << summary.dump();
  EXPECT_EQ(summary.at("missing"), 4) << "e2 is another partition's: " << summary.dump();

  // Without the sort key the table's key schema is not the layout's: said, exit 2.
  auto plain = run_dedupctl({"audit", "--input", m_dir.file("events.ndjson"), "--id", "json:/event_id", "--store",
                             m_server.uri("Shared"), "--layout", "powertools-python", "--key-prefix", "charge"},
                            "", m_server.env());
  EXPECT_EQ(plain.exit_code, 2) << plain.err;
  EXPECT_NE(plain.err.find("table Shared's key is id (partition), sk (sort), not the layout's id (partition)"),
            std::string::npos)
      << plain.err;
}

// The kill loop through the table: a replay SIGKILLed at ten points of its life (before its first
// claim, mid-claim, mid-publish, mid-settle, after it ended), then the same command again: every id is
// in the sink exactly once. The rerun finds the killed run's own INPROGRESS claims (its run id in
// dedupctl_run) and takes them again; the completed ones it skips.
TEST_F(Dynamo, AReplayKilledAtAnyPointTheRerunLeavesEveryIdInTheSinkExactlyOnce) {
  constexpr int k_events = 200;
  constexpr int k_points = 10;
  constexpr int k_run_ms = 600; // 200 events at --max-rate 400, and the start
  write_events(m_dir.file("kill.ndjson"), "k", k_events, now_s() * 1000);
  for (int point = 0; point < k_points; ++point) {
    int after_ms = point * k_run_ms / k_points;
    SCOPED_TRACE(fmt::format("killed after {} ms", after_ms));
    TempDir dir;
    auto command =
        replay_args(m_dir.file("kill.ndjson"), fmt::format("kill{}#{{event_id}}", point), dir.file("out.ndjson"));
    command.insert(command.end(), {"--checkpoint", dir.file("cp")});
    SpawnOptions options;
    options.silence = true;
    options.env = m_server.env();
    std::vector<std::string> argv{DEDUPCTL_BINARY};
    argv.insert(argv.end(), command.begin(), command.end());
    argv.insert(argv.end(), {"--max-rate", "400"});
    Process run(argv, options);
    std::this_thread::sleep_for(std::chrono::milliseconds(after_ms));
    run.signal(SIGKILL);
    int killed = run.wait();
    EXPECT_TRUE(killed == 128 + SIGKILL || killed == 0) << killed;
    auto rerun = run_dedupctl(command, "", m_server.env());
    ASSERT_EQ(rerun.exit_code, 0) << rerun.err;
    auto scan = run_dedupctl({"scan", "--input", dir.file("out.ndjson"), "-o", "json", "-q", "--id", "json:/event_id"});
    ASSERT_EQ(scan.exit_code, 0) << scan.err;
    Json report = Json::parse(scan.out);
    EXPECT_EQ(report.at("summary").at("events"), k_events) << "each id once, no more, no fewer";
    EXPECT_EQ(report.at("summary").at("log_duplicates"), 0);
    EXPECT_EQ(report.at("source").value("invalid_lines", 0), 0) << "no torn line";
    // A record published twice repeats its topic, partition and offset: scan counts it apart.
    EXPECT_EQ(report.at("source").value("repeated_records", 0), 0) << "a record published twice";
    std::string lines = read_file(dir.file("out.ndjson"));
    EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), k_events);
  }
}
