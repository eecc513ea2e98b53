// Payloads in a schema registry's wire format, end to end: records serialized by confluent-kafka's
// own Avro, Protobuf and JSON Schema serializers (PyPI) against the test registry, produced to the
// mock cluster and written to a kcat dump, then scanned, traced and exported by the binary.
#include "core/source/kcat_line.hpp"
#include "tests/support/fixtures.hpp"
#include "tests/support/planted.hpp"
#include "tests/support/schema_registry.hpp"

#include <filesystem>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace dedupctl::testing;
using Json = nlohmann::json;

namespace {

const std::string k_metadata = R"({"type":"record","name":"Metadata","namespace":"shop","fields":[
  {"name":"eventId","type":"string"},{"name":"type","type":["null","string"],"default":null}]})";
const std::string k_order_v1 = R"({"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"metadata","type":"shop.Metadata"},{"name":"orderId","type":"string"},{"name":"amount","type":"long"}]})";
// v2 adds an optional field: the same event written under it has the same content.
const std::string k_order_v2 = R"({"type":"record","name":"Order","namespace":"shop","fields":[
  {"name":"metadata","type":"shop.Metadata"},{"name":"orderId","type":"string"},{"name":"amount","type":"long"},
  {"name":"note","type":["null","string"],"default":null}]})";

Json avro(const std::string& schema, const std::string& id, const std::string& order, int amount) {
  return {{"format", "avro"},
          {"schema", schema},
          {"references", Json::array({{{"name", "shop.Metadata"}, {"subject", "shop.Metadata"}, {"version", 1}}})},
          {"data", {{"metadata", {{"eventId", id}, {"type", "OrderPlaced"}}}, {"orderId", order}, {"amount", amount}}}};
}

// Protobuf: orders.proto imports metadata.proto (a reference), and the record is the nested
// Envelope.Order, not the file's first message (message indexes [1, 0]).
const std::string k_meta_proto = R"(name: "metadata.proto" package: "shop" syntax: "proto3"
  message_type { name: "Meta"
    field { name: "event_id" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "eventId" }
    field { name: "type" number: 2 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "type" } })";
const std::string k_orders_proto = R"(name: "orders.proto" package: "shop" syntax: "proto3"
  dependency: "metadata.proto"
  message_type { name: "First" field { name: "x" number: 1 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "x" } }
  message_type { name: "Envelope" nested_type { name: "Order"
    field { name: "meta" number: 1 type: TYPE_MESSAGE type_name: ".shop.Meta" label: LABEL_OPTIONAL json_name: "meta" }
    field { name: "order_id" number: 2 type: TYPE_STRING label: LABEL_OPTIONAL json_name: "orderId" }
    field { name: "amount" number: 3 type: TYPE_INT64 label: LABEL_OPTIONAL json_name: "amount" } } })";

// v2 adds a field: proto3 leaves it out of the JSON while unset, so v1's events read the same.
const std::string k_orders_proto_v2 = k_orders_proto.substr(0, k_orders_proto.size() - 4) +
                                      R"( field { name: "note" number: 4 type: TYPE_STRING label: LABEL_OPTIONAL )"
                                      R"(json_name: "note" } } })";

Json protobuf(const std::string& id, const std::string& order, int amount, const std::string& schema = k_orders_proto) {
  return {{"format", "protobuf"},
          {"schema", schema},
          {"files", Json::array({k_meta_proto})},
          {"message", "shop.Envelope.Order"},
          {"data", fmt::format(R"(meta {{ event_id: "{}" type: "OrderPlaced" }} order_id: "{}" amount: {})", id, order,
                               amount)}};
}

const std::string k_key_schema = R"({"type":"object","properties":{"eventId":{"type":"string"}}})";
const std::string k_value_schema = R"({"type":"object","properties":{"n":{"type":"integer"}}})";

std::string frame_of(std::uint32_t id, const std::string& body) {
  std::string out(1, '\0');
  for (int shift = 24; shift >= 0; shift -= 8) {
    out += static_cast<char>((id >> shift) & 0xff);
  }
  return out + body;
}

std::uint32_t schema_id_of(const std::string& framed) {
  std::uint32_t id = 0;
  for (int i = 1; i < 5; ++i) {
    id = (id << 8) | static_cast<unsigned char>(framed[static_cast<std::size_t>(i)]);
  }
  return id;
}

// kcat -J lines of `records` in partition 0 of `topic`, offsets from 0.
std::string dump_of(const std::string& topic, const std::vector<Serialized>& records) {
  std::string out;
  std::int64_t offset = 0;
  for (const auto& record : records) {
    dedupctl::core::Event event;
    event.topic = topic;
    event.offset = offset++;
    event.timestamp_ms = 1'764'150'000'000 + event.offset * 1000;
    if (record.key) {
      event.key = std::string_view(*record.key);
    }
    if (record.value) {
      event.payload = std::string_view(*record.value);
    }
    out += dedupctl::core::format_kcat_line(event) + "\n";
  }
  return out;
}

class SchemaRegistryCli : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why;
    DEDUPCTL_REQUIRE_SERVER(!registry_python(why).empty(), why);
    DEDUPCTL_REQUIRE_SERVER(m_registry.available(), m_registry.why_unavailable());
  }

  // The Avro topic: two orders, the first re-sent after the schema upgrade (a log duplicate), the
  // second's id reused with other content, and three payloads no schema reads.
  std::vector<Serialized> avro_records() {
    Json plan{{"topic", "orders"},
              {"references", Json::array({{{"subject", "shop.Metadata"}, {"format", "avro"}, {"schema", k_metadata}}})},
              {"records", Json::array({{{"value", avro(k_order_v1, "e-1", "o-1", 5)}},
                                       {{"value", avro(k_order_v1, "e-2", "o-2", 6)}},
                                       {{"value", avro(k_order_v2, "e-1", "o-1", 5)}},
                                       {{"value", avro(k_order_v1, "e-2", "o-2", 7)}}})}};
    auto records = serialize_records(m_registry.url(), plan);
    std::uint32_t v1 = schema_id_of(*records[0].value);
    EXPECT_NE(v1, schema_id_of(*records[2].value)); // the upgrade wrote under another id
    records.push_back({std::nullopt, frame_of(999'999, "\x02x")});
    records.push_back({std::nullopt, frame_of(v1, "\x0a")});
    records.push_back({std::nullopt, std::string("\x01\x00\x00\x03\xe9xyz", 8)});
    return records;
  }

  std::vector<std::string> scan_args(std::vector<std::string> source) {
    std::vector<std::string> args{"scan",
                                  "-o",
                                  "json",
                                  "--fail-on",
                                  "none",
                                  "--id",
                                  "json:/metadata/eventId",
                                  "--type",
                                  "json:/metadata/type",
                                  "--entity",
                                  "json:/orderId"};
    args.insert(args.end(), source.begin(), source.end());
    return args;
  }

  SchemaRegistry m_registry;
  TempDir m_dir;
};

TEST_F(SchemaRegistryCli, AvroIdsTypesAndEntitiesFromNestedFieldsAndReferencedSchemas) {
  auto records = avro_records();
  write_file(m_dir.file("orders.ndjson"), dump_of("orders", records));
  std::uint32_t v1 = schema_id_of(*records[0].value);
  // What the serializers asked already; the scan's requests come on top.
  std::string reference = "GET /subjects/shop.Metadata/versions/1";
  int before_v1 = m_registry.requests(fmt::format("GET /schemas/ids/{}", v1));
  int before_reference = m_registry.requests(reference);
  auto result = run_dedupctl(scan_args({"--input", m_dir.file("orders.ndjson"), "--registry", m_registry.url()}));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("summary").at("events"), 7);
  EXPECT_EQ(doc.at("summary").at("no_id"), 3);
  EXPECT_EQ(doc.at("summary").at("log_duplicates"), 1) << doc.dump(1); // the re-send under v2
  EXPECT_EQ(doc.at("summary").at("id_reuse"), 1);                      // e-2 with another amount
  EXPECT_NE(doc.at("source").at("payload_decoding").get<std::string>().find("fingerprinted by its content"),
            std::string::npos);
  std::vector<std::string> notes;
  for (const auto& finding : doc.at("findings")) {
    if (finding.at("id") == "missing-event-id") {
      for (const auto& example : finding.at("examples")) {
        notes.push_back(example.at("note"));
      }
    }
  }
  ASSERT_EQ(notes.size(), 3u);
  EXPECT_EQ(notes[0], fmt::format("payload is framed with schema id 999999, which {} does not know", m_registry.url()));
  EXPECT_NE(notes[1].find(fmt::format("payload is framed with schema id {} (AVRO) but not a record of its Avro", v1)),
            std::string::npos)
      << notes[1];
  EXPECT_EQ(notes[2], "payload is binary, not JSON, and not in the schema registry's wire format (first byte 0x01, "
                      "not the magic byte 0x00)");
  // Each schema id was fetched once for the run (v1 frames four of the seven payloads), and the
  // reference once, by subject and version, though v1 and v2 both name it.
  EXPECT_EQ(m_registry.requests(fmt::format("GET /schemas/ids/{}", v1)) - before_v1, 1);
  EXPECT_EQ(m_registry.requests("GET /schemas/ids/999999"), 1);
  EXPECT_EQ(m_registry.requests(reference) - before_reference, 1); // named by v1 and v2
  // Without the registry the same topic is all binary: the reason names the way out.
  auto plain = Json::parse(run_dedupctl(scan_args({"--input", m_dir.file("orders.ndjson")})).out);
  EXPECT_EQ(plain.at("summary").at("no_id"), 7);
}

// The registry as a config file or the environment names it, as every other connection.
TEST_F(SchemaRegistryCli, TheRegistryFromTheConfigFileOrTheEnvironment) {
  write_file(m_dir.file("orders.ndjson"), dump_of("orders", avro_records()));
  write_file(m_dir.file("dedupctl.toml"), fmt::format("[scan]\nregistry = \"{}\"\n", m_registry.url()));
  auto from_config =
      run_dedupctl(scan_args({"--config", m_dir.file("dedupctl.toml"), "--input", m_dir.file("orders.ndjson")}));
  ASSERT_EQ(from_config.exit_code, 0) << from_config.err;
  EXPECT_EQ(Json::parse(from_config.out).at("summary").at("no_id"), 3);
  auto from_env = run_dedupctl(scan_args({"--input", m_dir.file("orders.ndjson")}), {},
                               {{"DEDUPCTL_REGISTRY_URL", m_registry.url()}});
  ASSERT_EQ(from_env.exit_code, 0) << from_env.err;
  EXPECT_EQ(Json::parse(from_env.out).at("summary").at("no_id"), 3);
}

TEST_F(SchemaRegistryCli, TheTopicAndItsDumpWithExportedSchemasGiveTheSameAudit) {
  auto records = avro_records();
  std::string dump = dump_of("orders", records);
  write_file(m_dir.file("orders.ndjson"), dump);
  MockBroker broker({"orders:1"});
  broker.seed("orders", dump);
  // The audit against a Redis that holds e-1's record for 30 days (e-2's is missing), as of a fixed time.
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  redis_command(redis.port(), "SET dedup:e-1 done EX 2592000");
  auto audit = [&](std::vector<std::string> source) {
    auto args = scan_args(std::move(source));
    args[0] = "audit";
    for (const std::string& flag :
         std::vector<std::string>{"--store", redis.uri(), "--key-template", "dedup:{event_id}", "--ttl", "7d",
                                  "--retention", "7d", "--now", "2025-11-26T10:00:00Z"}) {
      args.push_back(flag);
    }
    return run_dedupctl(args);
  };
  auto live = audit({"-b", broker.bootstrap(), "--topic", "orders", "--registry", m_registry.url()});
  ASSERT_EQ(live.exit_code, 0) << live.err;
  // The export takes the ids framed in the dump and their references; then no registry is needed.
  auto exported = run_dedupctl({"schemas", "export", "--registry", m_registry.url(), "--input",
                                m_dir.file("orders.ndjson"), "--out", m_dir.file("schemas")});
  EXPECT_EQ(exported.exit_code, 1) << exported.err; // 999999 is unknown: said, and not exported
  EXPECT_NE(exported.err.find("schema ids the registry does not know (not exported): 999999"), std::string::npos);
  EXPECT_NE(exported.out.find("exported 3 schemas (2 framed, 1 referenced)"), std::string::npos) << exported.out;
  EXPECT_TRUE(std::filesystem::exists(m_dir.file("schemas/1000.json"))); // shop.Metadata, the reference
  // Usage errors: no registry, no --out, nothing to export; and --schemas is not an export's flag.
  for (const auto& bad : std::vector<std::vector<std::string>>{
           {"schemas", "export", "--input", m_dir.file("orders.ndjson"), "--out", m_dir.file("x")},
           {"schemas", "export", "--registry", m_registry.url(), "--input", m_dir.file("orders.ndjson")},
           {"schemas", "export", "--registry", m_registry.url(), "--out", m_dir.file("x")},
           {"schemas", "export", "--registry", m_registry.url(), "--schemas", m_dir.path(), "--out", m_dir.file("x"),
            "--schema-id", "1000"}}) {
    EXPECT_EQ(run_dedupctl(bad).exit_code, 2) << bad.back();
  }
  auto offline = audit({"--input", m_dir.file("orders.ndjson"), "--schemas", m_dir.file("schemas")});
  ASSERT_EQ(offline.exit_code, 0) << offline.err;
  auto a = Json::parse(live.out);
  auto b = Json::parse(offline.out);
  EXPECT_EQ(a.at("summary"), b.at("summary"));
  EXPECT_EQ(a.at("summary").at("log_duplicates"), 1);
  EXPECT_EQ(a.at("summary").at("covered"), 2); // e-1 and its re-send under v2
  EXPECT_EQ(a.at("summary").at("missing"), 2); // e-2 twice
  EXPECT_EQ(a.at("replay"), b.at("replay"));
  ASSERT_EQ(a.at("findings").size(), b.at("findings").size());
  for (std::size_t i = 0; i < a.at("findings").size(); ++i) {
    auto& fa = a.at("findings")[i];
    auto& fb = b.at("findings")[i];
    EXPECT_EQ(fa.at("id"), fb.at("id"));
    EXPECT_EQ(fa.at("count"), fb.at("count"));
    if (fa.at("id") != "missing-event-id") { // whose notes name the registry or the directory
      EXPECT_EQ(fa.at("examples"), fb.at("examples"));
    }
  }
}

TEST_F(SchemaRegistryCli, ProtobufNestedMessageWithAnImportedFileAndASchemaUpgrade) {
  Json plan{{"topic", "orders-pb"},
            {"records", Json::array({{{"value", protobuf("p-1", "o-1", 5)}},
                                     {{"value", protobuf("p-2", "o-2", 6)}},
                                     {{"value", protobuf("p-1", "o-1", 5, k_orders_proto_v2)}}})}};
  auto records = serialize_records(m_registry.url(), plan);
  EXPECT_NE(schema_id_of(*records[0].value), schema_id_of(*records[2].value)); // the upgrade's new id
  // The nested message's indexes follow the header: count 2, then 1 and 0, zigzag-encoded.
  EXPECT_EQ(records[0].value->substr(5, 3), std::string("\x04\x02\x00", 3));
  write_file(m_dir.file("pb.ndjson"), dump_of("orders-pb", records));
  auto result =
      run_dedupctl({"scan", "-o", "json", "--fail-on", "none", "--input", m_dir.file("pb.ndjson"), "--registry",
                    m_registry.url(), "--id", "json:/meta/eventId", "--entity", "json:/orderId"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("summary").at("events"), 3);
  EXPECT_EQ(doc.at("summary").at("no_id"), 0) << doc.dump(1);
  EXPECT_EQ(doc.at("summary").at("log_duplicates"), 1); // p-1 re-sent under v2
  EXPECT_EQ(doc.at("summary").at("id_reuse"), 0);
}

TEST_F(SchemaRegistryCli, JsonSchemaKeysAndValues) {
  auto json = [](const std::string& schema, Json data) {
    return Json{{"format", "json"}, {"schema", schema}, {"data", std::move(data)}};
  };
  Json plan{{"topic", "jobs"},
            {"records",
             Json::array(
                 {{{"key", json(k_key_schema, {{"eventId", "k-1"}})}, {"value", json(k_value_schema, {{"n", 1}})}},
                  {{"key", json(k_key_schema, {{"eventId", "k-1"}})}, {"value", json(k_value_schema, {{"n", 2}})}},
                  {{"key", json(k_key_schema, {{"eventId", "k-2"}})}, {"value", json(k_value_schema, {{"n", 1}})}}})}};
  auto records = serialize_records(m_registry.url(), plan);
  write_file(m_dir.file("jobs.ndjson"), dump_of("jobs", records));
  auto result = run_dedupctl({"scan", "-o", "json", "--fail-on", "none", "--input", m_dir.file("jobs.ndjson"),
                              "--registry", m_registry.url(), "--id", "key-json:/eventId"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_EQ(doc.at("summary").at("no_id"), 0) << doc.dump(1);
  EXPECT_EQ(doc.at("summary").at("id_reuse"), 1); // k-1 with n 1, then n 2
}

TEST_F(SchemaRegistryCli, ARegistryThatCannotBeReachedIsExitThreeAndIncomplete) {
  auto records = avro_records();
  write_file(m_dir.file("orders.ndjson"), dump_of("orders", records));
  int closed = free_port();
  auto result = run_dedupctl(
      scan_args({"--input", m_dir.file("orders.ndjson"), "--registry", fmt::format("http://127.0.0.1:{}", closed)}));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  auto doc = Json::parse(result.out);
  EXPECT_FALSE(doc.at("complete").get<bool>());
  EXPECT_NE(doc.at("error").at("message").get<std::string>().find("cannot reach the schema registry"),
            std::string::npos);
  // A URL that is not http(s) is a usage error, before anything is read.
  EXPECT_EQ(run_dedupctl(scan_args({"--input", m_dir.file("orders.ndjson"), "--registry", "ftp://x"})).exit_code, 2);
  EXPECT_EQ(run_dedupctl(scan_args({"--input", m_dir.file("orders.ndjson"), "--registry", m_registry.url(), "--schemas",
                                    m_dir.path()}))
                .exit_code,
            2);
}

// What the user typed or pointed at is wrong: exit 2, naming it, before or as it is first needed.
TEST_F(SchemaRegistryCli, BadSchemaFilesAndFlagsAreUsageErrors) {
  auto records = avro_records();
  write_file(m_dir.file("orders.ndjson"), dump_of("orders", records));
  std::uint32_t v1 = schema_id_of(*records[0].value);
  auto scan = [&](std::vector<std::string> extra, std::map<std::string, std::string> env = {}) {
    auto args = scan_args({"--input", m_dir.file("orders.ndjson")});
    args.insert(args.end(), extra.begin(), extra.end());
    return run_dedupctl(args, {}, env);
  };
  // A schema file that is not one.
  std::filesystem::create_directories(m_dir.file("corrupt"));
  write_file(m_dir.file(fmt::format("corrupt/{}.json", v1)), "{\"id\": ");
  auto corrupt = scan({"--schemas", m_dir.file("corrupt")});
  EXPECT_EQ(corrupt.exit_code, 2) << corrupt.err;
  EXPECT_NE(corrupt.err.find(fmt::format("corrupt/{}.json is not a schema file", v1)), std::string::npos)
      << corrupt.err;
  // A reference without the id an export writes.
  std::filesystem::create_directories(m_dir.file("no-ids"));
  write_file(
      m_dir.file(fmt::format("no-ids/{}.json", v1)),
      Json{{"schema", k_order_v1},
           {"references", Json::array({{{"name", "shop.Metadata"}, {"subject", "shop.Metadata"}, {"version", 1}}})}}
          .dump());
  auto no_ids = scan({"--schemas", m_dir.file("no-ids")});
  EXPECT_EQ(no_ids.exit_code, 2) << no_ids.err;
  EXPECT_NE(no_ids.err.find("the reference shop.Metadata (subject shop.Metadata version 1) has no id"),
            std::string::npos)
      << no_ids.err;
  // Not a directory; a CA file that is not there; user info without a password.
  EXPECT_EQ(scan({"--schemas", m_dir.file("orders.ndjson")}).exit_code, 2);
  auto no_ca = scan({"--registry", m_registry.url(), "--registry-ca", m_dir.file("no-such-ca.pem")});
  EXPECT_EQ(no_ca.exit_code, 2);
  EXPECT_NE(no_ca.err.find("--registry-ca"), std::string::npos) << no_ca.err;
  auto no_colon = scan({"--registry", m_registry.url()}, {{"DEDUPCTL_REGISTRY_USER_INFO", "justaname"}});
  EXPECT_EQ(no_colon.exit_code, 2);
  EXPECT_NE(no_colon.err.find("is not USER:PASSWORD"), std::string::npos) << no_colon.err;
  // An export into a directory that cannot be made (its parent is a file).
  auto out_under_file = run_dedupctl({"schemas", "export", "--registry", m_registry.url(), "--schema-id",
                                      std::to_string(v1), "--out", m_dir.file("orders.ndjson") + "/schemas"});
  EXPECT_EQ(out_under_file.exit_code, 2);
  EXPECT_NE(out_under_file.err.find("not a directory that can be made"), std::string::npos) << out_under_file.err;
}

TEST(SchemaRegistryAuth, BasicAuthFromTheEnvironmentAndNoPasswordInAnyOutput) {
  std::string why;
  DEDUPCTL_REQUIRE_SERVER(!registry_python(why).empty(), why);
  SchemaRegistry registry({"--user-info", "ops:s3cr3t-pw"});
  DEDUPCTL_REQUIRE_SERVER(registry.available(), registry.why_unavailable());
  Json plan{{"topic", "orders"},
            {"registry_user_info", "ops:s3cr3t-pw"},
            {"references", Json::array({{{"subject", "shop.Metadata"}, {"format", "avro"}, {"schema", k_metadata}}})},
            {"records", Json::array({{{"value", avro(k_order_v1, "e-1", "o-1", 5)}}})}};
  auto records = serialize_records(registry.url(), plan);
  TempDir dir;
  write_file(dir.file("orders.ndjson"), dump_of("orders", records));
  std::vector<std::string> args{
      "scan", "--input", dir.file("orders.ndjson"), "--id", "json:/metadata/eventId", "--registry", registry.url()};
  auto ok = run_dedupctl(args, {}, {{"DEDUPCTL_REGISTRY_USER_INFO", "ops:s3cr3t-pw"}});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_NE(ok.out.find("1 events"), std::string::npos) << ok.out;
  // A wrong password: exit 3, the registry's refusal said, neither password shown.
  auto refused = run_dedupctl(args, {}, {{"DEDUPCTL_REGISTRY_USER_INFO", "ops:wr0ng-pw"}});
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_NE(refused.err.find("HTTP 401"), std::string::npos) << refused.err;
  // The password in the URL and in a file work too, and are never printed.
  write_file(dir.file("user-info"), "ops:s3cr3t-pw\n");
  auto from_file =
      run_dedupctl({"scan", "-o", "json", "--input", dir.file("orders.ndjson"), "--id", "json:/metadata/eventId",
                    "--registry", registry.url(), "--registry-user-info-file", dir.file("user-info")});
  EXPECT_EQ(from_file.exit_code, 0) << from_file.err;
  auto in_url =
      run_dedupctl({"scan", "-o", "json", "--input", dir.file("orders.ndjson"), "--id", "json:/metadata/eventId",
                    "--registry", fmt::format("http://ops:s3cr3t-pw@127.0.0.1:{}", registry.port())});
  EXPECT_EQ(in_url.exit_code, 0) << in_url.err;
  auto wrong_in_url =
      run_dedupctl({"scan", "-o", "json", "--input", dir.file("orders.ndjson"), "--id", "json:/metadata/eventId",
                    "--registry", fmt::format("http://ops:wr0ng-pw@127.0.0.1:{}", registry.port())});
  EXPECT_EQ(wrong_in_url.exit_code, 3);
  // Every report format scrubs the password typed in the URL.
  for (const std::string format : {"text", "markdown", "html", "sarif", "junit", "github", "gitlab"}) {
    auto run =
        run_dedupctl({"scan", "-o", format, "--input", dir.file("orders.ndjson"), "--id", "json:/metadata/eventId",
                      "--registry", fmt::format("http://ops:wr0ng-pw@127.0.0.1:{}", registry.port())});
    EXPECT_EQ(run.exit_code, 3) << format;
    EXPECT_EQ(run.out.find("wr0ng-pw"), std::string::npos) << format << ": " << run.out;
    EXPECT_EQ(run.err.find("wr0ng-pw"), std::string::npos) << format << ": " << run.err;
  }
  for (const auto* run : {&ok, &refused, &from_file, &in_url, &wrong_in_url}) {
    for (const std::string secret : {"s3cr3t-pw", "wr0ng-pw"}) {
      EXPECT_EQ(run->out.find(secret), std::string::npos) << run->out;
      EXPECT_EQ(run->err.find(secret), std::string::npos) << run->err;
    }
  }
}

// As managed registries are run: https with a private CA, and a bearer token from a file or the
// environment.
TEST(SchemaRegistryAuth, HttpsWithACaFileAndABearerToken) {
  std::string why;
  DEDUPCTL_REQUIRE_SERVER(!registry_python(why).empty(), why);
  TestCertificates certs;
  DEDUPCTL_REQUIRE_SERVER(certs.available(), certs.why_unavailable());
  SchemaRegistry registry({"--cert", certs.server_cert(), "--key", certs.server_key(), "--user-info", "producer:pw",
                           "--token", "t0ken-xyz"});
  DEDUPCTL_REQUIRE_SERVER(registry.available(), registry.why_unavailable());
  std::string url = fmt::format("https://127.0.0.1:{}", registry.port());
  Json plan{{"topic", "orders"},
            {"registry_user_info", "producer:pw"},
            {"registry_ca", certs.ca()},
            {"references", Json::array({{{"subject", "shop.Metadata"}, {"format", "avro"}, {"schema", k_metadata}}})},
            {"records", Json::array({{{"value", avro(k_order_v1, "e-1", "o-1", 5)}}})}};
  auto records = serialize_records(url, plan);
  TempDir dir;
  write_file(dir.file("orders.ndjson"), dump_of("orders", records));
  write_file(dir.file("token"), "t0ken-xyz\n");
  std::vector<std::string> args{"scan",
                                "-o",
                                "json",
                                "--fail-on",
                                "none",
                                "--input",
                                dir.file("orders.ndjson"),
                                "--id",
                                "json:/metadata/eventId",
                                "--registry",
                                url};
  auto with = [&](std::vector<std::string> extra) {
    auto all = args;
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  auto ok = run_dedupctl(with({"--registry-ca", certs.ca(), "--registry-token-file", dir.file("token")}));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(Json::parse(ok.out).at("summary").at("no_id"), 0);
  auto from_env =
      run_dedupctl(with({}), {}, {{"DEDUPCTL_REGISTRY_CA", certs.ca()}, {"DEDUPCTL_REGISTRY_TOKEN", "t0ken-xyz"}});
  EXPECT_EQ(from_env.exit_code, 0) << from_env.err;
  // A CA that did not sign the registry's certificate: exit 3, said.
  auto untrusted = run_dedupctl(with({"--registry-ca", certs.other_ca(), "--registry-token-file", dir.file("token")}));
  EXPECT_EQ(untrusted.exit_code, 3);
  EXPECT_NE(untrusted.err.find("cannot reach the schema registry"), std::string::npos) << untrusted.err;
  // A wrong token: refused, exit 3.
  auto refused = run_dedupctl(with({"--registry-ca", certs.ca()}), {}, {{"DEDUPCTL_REGISTRY_TOKEN", "t0ken-bad"}});
  EXPECT_EQ(refused.exit_code, 3);
  EXPECT_NE(refused.err.find("HTTP 401"), std::string::npos) << refused.err;
  for (const auto* run : {&ok, &from_env, &untrusted, &refused}) {
    for (const std::string secret : {"t0ken-xyz", "t0ken-bad"}) {
      EXPECT_EQ(run->out.find(secret), std::string::npos);
      EXPECT_EQ(run->err.find(secret), std::string::npos);
    }
  }
}

TEST_F(SchemaRegistryCli, TraceShowsEachOccurrencesDecodedPayload) {
  auto records = avro_records();
  write_file(m_dir.file("orders.ndjson"), dump_of("orders", records));
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  auto result =
      run_dedupctl({"trace", "-o", "json", "--input", m_dir.file("orders.ndjson"), "--registry", m_registry.url(),
                    "--id", "json:/metadata/eventId", "--store", redis.uri(), "--event-id", "e-1"});
  ASSERT_LE(result.exit_code, 1) << result.err;
  auto doc = Json::parse(result.out);
  const auto& occurrences = doc.at("traces")[0].at("occurrences");
  ASSERT_EQ(occurrences.size(), 2u);
  Json expected = {{"amount", 5}, {"metadata", {{"eventId", "e-1"}, {"type", "OrderPlaced"}}}, {"orderId", "o-1"}};
  EXPECT_EQ(occurrences[0].at("decoded_payload"), expected);
  EXPECT_EQ(occurrences[1].at("decoded_payload"), expected); // v2's null note is left out
  EXPECT_EQ(occurrences[0].at("fingerprint"), occurrences[1].at("fingerprint"));
  // A key template's {json:…} reads the decoded record too.
  auto keyed = run_dedupctl({"trace", "-o", "json", "--input", m_dir.file("orders.ndjson"), "--registry",
                             m_registry.url(), "--id", "json:/metadata/eventId", "--store", redis.uri(),
                             "--key-template", "dedup:{json:/orderId}", "--event-id", "e-1"});
  ASSERT_LE(keyed.exit_code, 1) << keyed.err;
  EXPECT_EQ(Json::parse(keyed.out).at("traces")[0].at("dedup_keys"), Json::array({"dedup:o-1"}));
}

// The payload's JSON string as a kcat -J line writes it (raw bytes, escaped alike for alike).
std::string payload_text(const std::string& line) {
  auto start = line.find("\"payload\":\"");
  if (start == std::string::npos) {
    return {};
  }
  start += 11;
  std::size_t end = start;
  while (end < line.size() && line[end] != '"') {
    end += line[end] == '\\' ? 2 : 1;
  }
  return line.substr(start, end - start);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    auto end = text.find('\n', start);
    out.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

TEST_F(SchemaRegistryCli, ReplayPublishesTheOriginalBytesNeverAReEncoding) {
  auto records = avro_records();
  records.resize(4); // the decodable ones: e-1, e-2, e-1 again (v2), e-2 reused
  std::string dump = dump_of("orders", records);
  write_file(m_dir.file("orders.ndjson"), dump);
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  auto result = run_dedupctl({"replay", "--input", m_dir.file("orders.ndjson"), "--registry", m_registry.url(), "--id",
                              "json:/metadata/eventId", "--via", redis.uri(), "--key-template", "dedup:{event_id}",
                              "--ttl", "1d", "--sink", "file:" + m_dir.file("out.ndjson"), "--execute", "-q"});
  ASSERT_LE(result.exit_code, 1) << result.err;
  auto in = lines_of(dump);
  auto out = lines_of(read_file(m_dir.file("out.ndjson")));
  // e-1 and e-2 pass; the re-send and the reuse are duplicates by id, and skipped.
  ASSERT_EQ(out.size(), 2u) << read_file(m_dir.file("out.ndjson"));
  EXPECT_EQ(payload_text(out[0]), payload_text(in[0]));
  EXPECT_EQ(payload_text(out[1]), payload_text(in[1]));
  EXPECT_FALSE(payload_text(out[0]).empty());
}

// watch names the registry as what it cannot see (not the brokers), and shows nothing meanwhile.
TEST_F(SchemaRegistryCli, WatchSaysWhenTheRegistryCannotBeReached) {
  auto records = avro_records();
  MockBroker broker({"orders:1"});
  broker.seed("orders", dump_of("orders", records));
  RedisServer redis;
  DEDUPCTL_REQUIRE_SERVER(redis.available(), redis.why_unavailable());
  auto watch = [&](const std::string& registry, int port) {
    return std::vector<std::string>{DEDUPCTL_BINARY,
                                    "watch",
                                    "-b",
                                    broker.bootstrap(),
                                    "--topic",
                                    "orders",
                                    "--store",
                                    redis.uri(),
                                    "--key-template",
                                    "dedup:{event_id}",
                                    "--ttl",
                                    "1h",
                                    "--retention",
                                    "7d",
                                    "--id",
                                    "json:/metadata/eventId",
                                    "--registry",
                                    registry,
                                    "--listen",
                                    fmt::format("127.0.0.1:{}", port),
                                    "--interval",
                                    "250ms",
                                    "--refresh",
                                    "3s"};
  };
  int down_port = free_port();
  auto down = spawn_watch(watch(fmt::format("http://127.0.0.1:{}", free_port()), down_port), m_dir.file("down.err"));
  auto seen = poll_http(down_port, "/metrics", [](const HttpAnswer& a) {
    return a.body.find("dedupctl_up{system=\"registry\"} 0") != std::string::npos &&
           a.body.find("dedupctl_up{system=\"kafka\"} 1") != std::string::npos;
  });
  ASSERT_TRUE(seen && seen->body.find("dedupctl_up{system=\"registry\"} 0") != std::string::npos &&
              seen->body.find("dedupctl_up{system=\"kafka\"} 1") != std::string::npos)
      << read_file(m_dir.file("down.err"));
  EXPECT_EQ(seen->body.find("dedupctl_events{"), std::string::npos) << seen->body;
  int up_port = free_port();
  auto up = spawn_watch(watch(m_registry.url(), up_port), m_dir.file("up.err"));
  auto shown = poll_http(up_port, "/metrics", [](const HttpAnswer& a) {
    return a.body.find("dedupctl_up{system=\"registry\"} 1") != std::string::npos &&
           a.body.find("dedupctl_events{") != std::string::npos;
  });
  ASSERT_TRUE(shown) << read_file(m_dir.file("up.err"));
  // Four of the seven are e-1 and e-2 and their second copies, none in Redis; three have no id.
  EXPECT_NE(shown->body.find(R"(dedupctl_events{topic="orders",partition="0",state="no_id"} 3)"), std::string::npos)
      << shown->body;
}

} // namespace
