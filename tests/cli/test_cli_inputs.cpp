// Dumps as they come in real life: two dumps concatenated, payloads that are not JSON.
#include "tests/support/fixtures.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

const std::string k_orders = std::string(DEDUPCTL_SOURCE_DIR) + "/examples/orders.ndjson";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Json scan_json(const std::string& path, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"scan", "--input", path, "-o", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto result = run_dedupctl(args);
  EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << result.err;
  return Json::parse(result.out);
}

} // namespace

// One record read twice is one event: the concatenation of a dump with itself (and with an
// overlapping later dump) gives the report of the dump alone, and says how many repeats it dropped.
TEST(Inputs, TheSameRecordReadTwiceIsOneEvent) {
  TempDir dir;
  std::string once = read_all(k_orders);
  auto lines = static_cast<std::int64_t>(std::count(once.begin(), once.end(), '\n'));
  write_file(dir.path() + "/twice.ndjson", once + once);
  Json alone = scan_json(k_orders);
  Json twice = scan_json(dir.path() + "/twice.ndjson");
  EXPECT_EQ(twice.at("summary"), alone.at("summary"));
  EXPECT_EQ(twice.at("findings"), alone.at("findings"));
  EXPECT_EQ(twice.at("source").at("partitions"), alone.at("source").at("partitions"));
  EXPECT_EQ(alone.at("source").at("repeated_records"), 0);
  EXPECT_EQ(twice.at("source").at("repeated_records"), lines);
  auto text = run_dedupctl({"scan", "--input", dir.path() + "/twice.ndjson"});
  EXPECT_NE(text.out.find(std::to_string(lines) + " records appeared more than once"), std::string::npos) << text.out;
}

// A dump of Avro/Protobuf payloads: kcat writes the raw bytes. Ids from headers and keys work; a
// json: spec yields nothing for those events and the finding says why.
TEST(Inputs, BinaryPayloadsAreReadAndJsonSpecsSayWhyTheyFindNothing) {
  TempDir dir;
  std::string dump;
  for (int i = 0; i < 6; ++i) {
    std::string payload = std::string("\x02\x0c", 2) + "e-" + std::to_string(i) + "\xff\xfe\x10";
    dump += R"({"topic":"pay","partition":0,"offset":)" + std::to_string(i) +
            R"(,"tstype":"create","ts":1795161600000,"headers":["event_id","e-)" + std::to_string(i % 4) +
            R"("],"key":"k-)" + std::to_string(i) + "\xc3\x28\",\"payload\":\"" + payload + "\"}\n";
  }
  write_file(dir.path() + "/avro.ndjson", dump);
  Json by_header = scan_json(dir.path() + "/avro.ndjson");
  EXPECT_EQ(by_header.at("summary").at("events"), 6);
  EXPECT_EQ(by_header.at("summary").at("no_id"), 0);
  EXPECT_EQ(by_header.at("summary").at("id_reuse"), 2) << "e-0 and e-1 come back with other payloads";
  Json by_key = scan_json(dir.path() + "/avro.ndjson", {"--id", "key"});
  EXPECT_EQ(by_key.at("summary").at("no_id"), 0);
  EXPECT_EQ(by_key.at("summary").at("id_reuse"), 0);
  Json by_json = scan_json(dir.path() + "/avro.ndjson", {"--id", "json:/event_id"});
  EXPECT_EQ(by_json.at("summary").at("no_id"), 6);
  ASSERT_EQ(by_json.at("findings").size(), 1u);
  const Json& finding = by_json.at("findings")[0];
  EXPECT_EQ(finding.at("id"), "missing-event-id");
  EXPECT_EQ(finding.at("title"),
            "6 events carry no event id (6 of them have a binary payload that json: specs cannot read)");
  EXPECT_NE(finding.at("advice").get<std::string>().find("--id header:event_id"), std::string::npos);
}
