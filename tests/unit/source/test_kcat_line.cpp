#include "core/source/kcat_line.hpp"

#include <gtest/gtest.h>

using namespace dedupctl::core;

TEST(KcatLine, ParsesAFullEnvelope) {
  KcatLineParser parser;
  EventBatch batch;
  std::string error;
  ASSERT_TRUE(parser.parse(
      R"({"topic":"orders","partition":2,"offset":17,"tstype":"create","ts":1795161600000,"broker":1,)"
      R"("headers":["event_id","e-17","type","PaymentCharged","nullable",null],"key":"o-1","payload":"{\"a\":1}"})",
      batch, error))
      << error;
  ASSERT_TRUE(
      parser.parse(R"({"topic":"orders","partition":0,"offset":3,"ts":5,"key":null,"payload":null})", batch, error))
      << error;
  parser.seal(batch);
  ASSERT_EQ(batch.events.size(), 2u);
  const Event& e = batch.events[0];
  EXPECT_EQ(e.topic, "orders");
  EXPECT_EQ(e.partition, 2);
  EXPECT_EQ(e.offset, 17);
  EXPECT_EQ(e.timestamp_ms, 1'795'161'600'000LL);
  EXPECT_EQ(e.key, "o-1");
  EXPECT_EQ(e.payload, R"({"a":1})");
  ASSERT_EQ(e.headers.size(), 3u);
  EXPECT_EQ(e.headers[0].name, "event_id");
  EXPECT_EQ(e.headers[0].value, "e-17");
  EXPECT_EQ(e.headers[1].value, "PaymentCharged");
  EXPECT_FALSE(e.headers[2].value.has_value());
  EXPECT_FALSE(batch.events[1].key.has_value());
  EXPECT_FALSE(batch.events[1].payload.has_value());
  EXPECT_TRUE(batch.events[1].headers.empty());
}

TEST(KcatLine, FormattedEnvelopesParseBackToTheSameEvent) {
  KcatLineParser parser;
  EventBatch first;
  std::string error;
  ASSERT_TRUE(parser.parse(
      R"({"topic":"or\"ders","partition":2,"offset":17,"ts":1795161600000,)"
      R"("headers":["event_id","e-17","tab","a\tb\u0001","nullable",null],"key":null,"payload":"{\"a\":\"\\\"\"}"})",
      first, error))
      << error;
  parser.seal(first);
  std::string line = format_kcat_line(first.events[0]);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  EventBatch second;
  ASSERT_TRUE(parser.parse(line, second, error)) << error << "\n" << line;
  parser.seal(second);
  const Event& a = first.events[0];
  const Event& b = second.events[0];
  EXPECT_EQ(b.topic, a.topic);
  EXPECT_EQ(b.partition, 2);
  EXPECT_EQ(b.offset, 17);
  EXPECT_EQ(b.timestamp_ms, a.timestamp_ms);
  EXPECT_EQ(b.key, a.key);
  EXPECT_EQ(b.payload, a.payload);
  ASSERT_EQ(b.headers.size(), 3u);
  EXPECT_EQ(b.headers[1].value, "a\tb\x01");
  EXPECT_FALSE(b.headers[2].value.has_value());
}

TEST(KcatLine, EmptyStringsAreNotNull) {
  KcatLineParser parser;
  EventBatch batch;
  std::string error;
  ASSERT_TRUE(parser.parse(R"({"partition":0,"offset":1,"key":"","payload":""})", batch, error));
  parser.seal(batch);
  ASSERT_TRUE(batch.events[0].key.has_value());
  EXPECT_EQ(*batch.events[0].key, "");
  EXPECT_EQ(*batch.events[0].payload, "");
}

TEST(KcatLine, MalformedLinesSayWhatIsWrongAndAddNothing) {
  struct Case {
    const char* line;
    const char* error;
  };
  for (const auto& c :
       {Case{"not json", "not a JSON object (expected a kcat -J envelope)"},
        Case{R"({"partition":0,"offset":1,"key":)", "not JSON"},
        Case{"[1,2]", "not a JSON object (expected a kcat -J envelope)"},
        Case{R"({"offset":1})", "missing \"partition\""}, Case{R"({"partition":0})", "missing \"offset\""},
        Case{R"({"partition":"x","offset":1})", "\"partition\" is not a partition number"},
        Case{R"({"partition":0,"offset":-4})", "\"offset\" is not an offset"},
        Case{R"({"partition":0,"offset":1,"headers":["a"]})", "\"headers\" has a name without a value"},
        Case{R"({"partition":0,"offset":1,"headers":{"a":"b"}})",
             "\"headers\" is not kcat's flat [name, value, …] array"},
        Case{R"({"partition":0,"offset":1,"payload":5})", "\"payload\" is not a string or null"}}) {
    KcatLineParser parser;
    EventBatch batch;
    std::string error;
    EXPECT_FALSE(parser.parse(c.line, batch, error)) << c.line;
    EXPECT_EQ(error, c.error) << c.line;
    EXPECT_TRUE(batch.events.empty());
    EXPECT_TRUE(batch.headers.empty());
  }
}

#include "core/store/inbox_snapshot.hpp"

// kcat -J writes a binary key, payload or header (Avro, Protobuf) as its raw bytes inside the JSON
// string: such lines are read byte for byte, not refused as "not JSON".
TEST(KcatLine, RawBinaryBytesInStringsAreReadByteForByte) {
  KcatLineParser parser;
  EventBatch batch;
  std::string error;
  const std::string payload("\x00\x02\xff\xfe\x8a"
                            "abc\x01",
                            9);
  const std::string line =
      std::string(R"({"topic":"orders","partition":1,"offset":7,"ts":5,"broker":{"id":[1,2]},)") +
      "\"headers\":[\"event_id\",\"e-7\",\"schema\",\"\xc3\x28\\u00e9\\ud83d\\ude00\"],\"key\":\"k\xff\"," +
      "\"payload\":\"" + payload + "\",\"tstype\":\"create\"}";
  ASSERT_TRUE(parser.parse(line, batch, error)) << error;
  parser.seal(batch);
  ASSERT_EQ(batch.events.size(), 1u);
  const Event& e = batch.events[0];
  EXPECT_EQ(e.topic, "orders");
  EXPECT_EQ(e.partition, 1);
  EXPECT_EQ(e.offset, 7);
  EXPECT_EQ(e.timestamp_ms, 5);
  EXPECT_EQ(e.key, "k\xff");
  EXPECT_EQ(e.payload, payload);
  ASSERT_EQ(e.headers.size(), 2u);
  EXPECT_EQ(e.headers[0].value, "e-7");
  EXPECT_EQ(e.headers[1].value, "\xc3\x28\xc3\xa9\xf0\x9f\x98\x80"); // escapes decoded to UTF-8

  // What format_kcat_line writes for a binary event parses back to the same bytes.
  EventBatch again;
  ASSERT_TRUE(parser.parse(format_kcat_line(e), again, error)) << error;
  parser.seal(again);
  EXPECT_EQ(again.events[0].payload, payload);
  EXPECT_EQ(again.events[0].key, "k\xff");
}

TEST(KcatLine, MalformedLinesWithBinaryBytesAreStillRefused) {
  for (std::string line :
       {std::string("{\"partition\":0,\"offset\":1,\"payload\":\"\xff"),      // unterminated
        std::string("{\"partition\":0,\"offset\":1,\"payload\":\"\xff\"} x"), // trailing
        std::string("{\"partition\":0,\"payload\":\"\xff\"}"),                // no offset
        std::string("{\"partition\":0,\"offset\":1.5,\"payload\":\"\xff\"}"),
        std::string("{\"partition\":0,\"offset\":1,\"headers\":[\"a\"],\"key\":\"\xff\"}"), std::string("[\"\xff\"]"),
        std::string("{\"payload\":\"\xff\",\"offset\":")}) { // ends where a number starts
    KcatLineParser parser;
    EventBatch batch;
    std::string error;
    EXPECT_FALSE(parser.parse(line, batch, error)) << line;
    EXPECT_FALSE(error.empty());
    EXPECT_TRUE(batch.events.empty());
    EXPECT_TRUE(batch.headers.empty()) << line;
  }
}

// Mutations of a binary line (the raw reader's input): every one is either an event or an error,
// never a crash or a read past the line (the unit tier runs under ASan and UBSan).
TEST(KcatLine, MutatedBinaryLinesAreEventsOrErrors) {
  const std::string seed =
      "{\"topic\":\"t\",\"partition\":3,\"offset\":12,\"ts\":-1,\"broker\":{\"a\":[1,{\"b\":null}]},"
      "\"headers\":[\"event_id\",\"e\\u00e9\\ud83d\\ude00\",\"n\",null],\"key\":\"\xff\","
      "\"payload\":\"\x02\xfe\\\"\\\\\"}";
  std::uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>(state >> 33);
  };
  static constexpr std::string_view k_inserted = "\"\\{}[],:u0-9\xff";
  KcatLineParser parser;
  int parsed = 0;
  for (int round = 0; round < 20000; ++round) {
    std::string line = seed;
    for (std::size_t edits = 1 + next() % 4; edits > 0; --edits) {
      std::size_t at = next() % line.size();
      switch (next() % 3) {
      case 0:
        line[at] = static_cast<char>(next() % 256);
        break;
      case 1:
        line.erase(at, 1 + next() % 3);
        break;
      default:
        line.insert(at, 1, k_inserted[next() % k_inserted.size()]);
        break;
      }
      if (line.empty()) {
        line = "\xff";
      }
    }
    EventBatch batch;
    std::string error;
    bool ok = parser.parse(line, batch, error);
    parsed += ok ? 1 : 0;
    ASSERT_TRUE(ok || !error.empty()) << "a refusal says why: " << line;
    ASSERT_EQ(batch.events.size(), ok ? 1u : 0u);
    parser.seal(batch);
  }
  EXPECT_GT(parsed, 0); // some mutations stay valid (a changed payload byte)
}
