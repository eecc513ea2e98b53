// Inputs that would change a verdict or exhaust the machine without a word: each is exit 2 with a
// message naming the input and what to give instead, before anything is contacted.
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::testing;

namespace {
const std::string k_orders = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/orders.ndjson";
} // namespace

TEST(Bounds, ExamplesAreANumberFromZeroToTheCap) {
  for (std::string command : {"scan", "audit", "trace", "replay"}) {
    for (std::string n : {"-1", "1000000", "many"}) {
      auto result = run_dedupctl({command, "--input", k_orders, "--examples", n});
      EXPECT_EQ(result.exit_code, 2) << command << " --examples " << n << ": " << result.err;
      EXPECT_NE(result.err.find("--examples"), std::string::npos) << result.err;
      EXPECT_NE(result.err.find("1000"), std::string::npos) << "says the bound: " << result.err;
    }
  }
  EXPECT_EQ(run_dedupctl({"scan", "--input", k_orders, "--examples", "0"}).exit_code, 1);
}

TEST(Bounds, ATtlOfZeroIsRefusedWithTheWayToSayNoExpiry) {
  for (std::vector<std::string> args :
       {std::vector<std::string>{"replay", "--input", k_orders, "--via", "redis://127.0.0.1:1", "--ttl", "0s"},
        std::vector<std::string>{"audit", "--input", k_orders, "--store", "redis://127.0.0.1:1", "--ttl", "0ms"},
        std::vector<std::string>{"audit", "--input", k_orders, "--store", "postgres://u@127.0.0.1:1/db",
                                 "--inbox-retention", "PT0S"}}) {
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_NE(result.err.find("say none"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("cannot reach"), std::string::npos) << "nothing is contacted: " << result.err;
  }
}

TEST(Bounds, ARangeThatIsEmptyWhateverTheLogHoldsIsRefusedNotReportedClean) {
  for (std::vector<std::string> range :
       {std::vector<std::string>{"--from", "50", "--to", "10"},
        std::vector<std::string>{"--from", "-10", "--to", "-50"},
        std::vector<std::string>{"--from", "@2026-11-22T00:00:00Z", "--to", "@2026-11-21T00:00:00Z"}}) {
    std::vector<std::string> args{"scan", "--input", k_orders};
    args.insert(args.end(), range.begin(), range.end());
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << range[1] << " " << range[3] << ": " << result.out;
    EXPECT_NE(result.err.find("comes after --to " + range[3]), std::string::npos) << result.err;
  }
}

TEST(Bounds, ADumpHasNoCommittedOffsetsToSeekFromAndNoBroker) {
  auto seek = run_dedupctl(
      {"audit", "--input", k_orders, "--group", "g", "--seek", "-5", "--store", "redis://127.0.0.1:1", "--ttl", "1h"});
  EXPECT_EQ(seek.exit_code, 2);
  EXPECT_NE(seek.err.find("--seek needs the group's committed offsets"), std::string::npos) << seek.err;
  auto broker = run_dedupctl({"scan", "--input", k_orders, "-b", "127.0.0.1:1"});
  EXPECT_EQ(broker.exit_code, 1) << broker.err;
  EXPECT_NE(broker.err.find("--bootstrap-server is not used"), std::string::npos) << broker.err;
  auto uncommitted = run_dedupctl({"scan", "--input", k_orders, "--read-uncommitted"});
  EXPECT_NE(uncommitted.err.find("--read-uncommitted is not used"), std::string::npos) << uncommitted.err;
}

// A PostgreSQL store that libpq cannot read is exit 2 before anything is contacted (it was 3, as if
// a server had refused), without its password.
TEST(Bounds, AConninfoLibpqCannotReadIsAUsageError) {
  for (const auto& [store, says] : std::vector<std::pair<std::string, std::string>>{
           {"postgresql://u:S3cPw@127.0.0.1:notaport/db", "the port 'notaport' is not a number"},
           {"host=127.0.0.1 bogus=1 password=S3cPw", "invalid connection option \"bogus\""},
           {"postgresql://u:S3cPw@127.0.0.1:5432/db?nonsense=1", "invalid URI query parameter"}}) {
    for (std::vector<std::string> args : {std::vector<std::string>{"audit", "--input", k_orders, "--store", store},
                                          std::vector<std::string>{"snapshot", "--store", store}}) {
      auto result = run_dedupctl(args);
      EXPECT_EQ(result.exit_code, 2) << args[0] << " " << store << ": " << result.err;
      EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
      EXPECT_EQ(result.err.find("S3cPw"), std::string::npos) << result.err;
    }
  }
}

// Messages that said the wrong thing: a directory read as an empty file, a time quoted without
// its @.
TEST(Bounds, MessagesNameTheInputAndWhatIsWrongWithIt) {
  TempDir dir;
  for (std::vector<std::string> args :
       {std::vector<std::string>{"audit", "--input", k_orders, "--store", "file:" + dir.path(), "--ttl", "1h"},
        std::vector<std::string>{"check", dir.path()}, std::vector<std::string>{"scan", "--input", dir.path()}}) {
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << args[0];
    EXPECT_NE(result.err.find(dir.path() + ": it is a directory"), std::string::npos) << result.err;
  }
  auto time = run_dedupctl({"scan", "--input", k_orders, "--from", "@2026-13-40T00:00:00Z"});
  EXPECT_EQ(time.exit_code, 2);
  EXPECT_NE(time.err.find("invalid --from '@2026-13-40T00:00:00Z'"), std::string::npos) << time.err;
}

// An empty `--NAME=` was read as taking the next argument ("--key-template= 1h" used the template
// "1h"); an inbox name the server would refuse was exit 3 after trying to connect.
TEST(Bounds, EmptyValuesAndBadInboxNamesAreRefusedBeforeAnythingIsContacted) {
  auto empty = run_dedupctl({"audit", "--input", k_orders, "--store", "redis://127.0.0.1:1", "--key-template=", "1h"});
  EXPECT_EQ(empty.exit_code, 2);
  EXPECT_NE(empty.err.find("--key-template= has an empty value"), std::string::npos) << empty.err;
  auto blank = run_dedupctl({"audit", "--input", k_orders, "--store", "redis://127.0.0.1:1", "--key-template", ""});
  EXPECT_EQ(blank.exit_code, 2);
  EXPECT_NE(blank.err.find("the template is empty"), std::string::npos) << blank.err;
  for (std::vector<std::string> args :
       {std::vector<std::string>{"audit", "--input", k_orders, "--store", "postgres://u@127.0.0.1:1/db"},
        std::vector<std::string>{"snapshot", "--store", "postgres://u@127.0.0.1:1/db"}}) {
    args.insert(args.end(), {"--inbox-table", "inbox;drop"});
    auto result = run_dedupctl(args);
    EXPECT_EQ(result.exit_code, 2) << args[0] << ": " << result.err;
    EXPECT_NE(result.err.find("invalid --inbox-table 'inbox;drop'"), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("cannot reach"), std::string::npos) << result.err;
  }
}

// A record layout that does not fit the rest of the command line is exit 2 naming both, before
// anything is contacted (the Redis and PostgreSQL below do not exist).
TEST(Bounds, ALayoutThatDoesNotFitTheStoreOrTheCommandIsRefused) {
  const std::string redis = "redis://127.0.0.1:1", postgres = "postgres://u@127.0.0.1:1/db";
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  TempDir dir;
  write_file(dir.file("plain.tsv"), "# dedupctl-snapshot v1\ttaken_at=1795000000000\tstore=redis://x\tmatch=*\n");
  write_file(dir.file("inbox.tsv"),
             "# dedupctl-inbox-snapshot v1\ttaken_at=1795000000000\tstore=postgres://x\ttable=processed_events\n");
  std::vector<Case> cases{
      {{"audit", "--input", k_orders, "--store", redis, "--layout", "powertools-python"}, "give --key-prefix PREFIX"},
      {{"audit", "--input", k_orders, "--store", redis, "--layout", "powertools-python", "--key-prefix", "f",
        "--collection", "x"},
       "--collection x: --layout powertools-python keeps a key per id"},
      {{"audit", "--input", k_orders, "--store", postgres, "--layout", "spring-hash"},
       "--layout spring-hash is a Redis layout"},
      // A prefix that nothing would use is refused, as --collection is: the audit would look up other keys.
      {{"audit", "--input", k_orders, "--store", redis, "--layout", "powertools-python", "--key-prefix", "f",
        "--key-template", "dedup:{event_id}"},
       "--key-prefix f: --key-template gives the whole key"},
      {{"audit", "--input", k_orders, "--store", redis, "--key-prefix", "billing", "--key-template",
        "dedup:{event_id}"},
       "--key-prefix billing: --key-template gives the whole key"},
      {{"audit", "--input", k_orders, "--store", redis, "--layout", "spring-hash", "--key-prefix", "f"},
       "--key-prefix f: --layout spring-hash derives its keys without a prefix"},
      {{"audit", "--input", k_orders, "--store", redis, "--key-prefix", "f"},
       "--key-prefix f: --layout plain derives its keys without a prefix"},
      {{"audit", "--input", k_orders, "--store", redis, "--layout", "eventuate"},
       "--layout eventuate is an inbox layout"},
      {{"audit", "--input", k_orders, "--store", redis, "--layout", "plain", "--layout-option", "status-field=s"},
       "only the json layouts take options"},
      {{"audit", "--input", k_orders, "--store", "file:" + dir.file("plain.tsv"), "--ttl", "1h", "--layout",
        "powertools-python", "--key-prefix", "f"},
       "the snapshot holds records of --layout plain, not powertools-python"},
      {{"audit", "--input", k_orders, "--store", "file:" + dir.file("inbox.tsv"), "--ttl", "1h", "--layout", "zset",
        "--collection", "z"},
       "an inbox snapshot holds rows, not records of --layout zset"},
      {{"snapshot", "--store", postgres, "--layout", "wolverine"}, "its rows say when they lapse"},
      {{"snapshot", "--store", postgres, "--layout", "powertools-python"}, "is a Redis layout"},
      {{"snapshot", "--store", redis, "--layout", "eventuate"}, "--layout eventuate is an inbox layout"},
      {{"replay", "--input", k_orders, "--via", redis, "--ttl", "none", "--layout", "powertools-python", "--key-prefix",
        "f", "--sink", "file:" + dir.file("out.ndjson"), "--execute"},
       "--layout powertools-python writes records that carry their expiration: --ttl none cannot be written"},
      {{"replay", "--input", k_orders, "--via", redis, "--ttl", "none", "--layout", "camel-set", "--collection", "x",
        "--sink", "file:" + dir.file("out.ndjson"), "--execute"},
       "--layout camel-set: its records are members of one key with no value to hold a claim"},
      {{"replay", "--input", k_orders, "--via", redis, "--layout", "redis-bloom", "--collection", "seen", "--sink",
        "file:" + dir.file("out.ndjson"), "--execute"},
       "--layout redis-bloom: an id added to a Bloom filter cannot be taken out again"},
      {{"replay", "--input", k_orders, "--via", redis, "--layout", "redis-bloom", "--collection", "seen",
        "--repair-lost", "--effects", "redis://127.0.0.1:1", "--effects-key-template", "e:{event_id}", "--sink",
        "file:" + dir.file("out.ndjson")},
       "--repair-lost --layout redis-bloom: its records are members of one key"},
      {{"replay", "--input", k_orders, "--via", "file:" + dir.file("plain.tsv"), "--layout", "bloom", "--layout-option",
        "bloom-impl=guava", "--sink", "file:" + dir.file("out.ndjson")},
       "--via file: is a snapshot and cannot claim events"},
      {{"replay", "--input", k_orders, "--via", redis, "--ttl", "7d", "--layout", "spring-hash", "--sink",
        "file:" + dir.file("out.ndjson")},
       "--ttl 7d: --layout spring-hash writes records that never expire"},
      {{"replay", "--input", k_orders, "--via", postgres, "--layout", "masstransit", "--sink",
        "file:" + dir.file("out.ndjson")},
       "--layout masstransit: its rows carry columns of the library's own"},
      {{"discover", "--input", k_orders, "--store", redis, "-o", "markdown"}, "discover writes text or json"},
      {{"discover", "--input", k_orders, "--store", "memory:"}, "discover reads Redis stores"},
      {{"discover", "--input", k_orders, "--store", "postgres://h/db?no_such_keyword=1"}, "no_such_keyword"},
      {{"discover", "--input", k_orders, "--store", redis, "--id", "header:no_such_header"},
       "no event in the range carries an id"},
  };
  for (const auto& c : cases) {
    auto result = run_dedupctl(c.args);
    EXPECT_EQ(result.exit_code, 2) << c.args[0] << " " << c.says << ": " << result.err;
    EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
  }
}
