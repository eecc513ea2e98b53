#include "core/identify.hpp"
#include "core/log_analyzer.hpp"
#include "tests/unit/fakes.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace dedupctl;
using namespace dedupctl::core;
using dedupctl::testing::OwnedEvent;
using dedupctl::testing::with_header_id;

namespace {

constexpr std::int64_t k_minute = 60'000;

struct Run {
  LogCounters counters;
  std::vector<Finding> findings;
};

Run analyze(const std::vector<OwnedEvent>& events, LogAnalyzerOptions analyzer_options = {}) {
  Identifier identifier(default_identify_options());
  LogAnalyzer analyzer(analyzer_options);
  for (const auto& owned : events) {
    std::vector<Header> headers;
    Event e = dedupctl::testing::view(owned, headers);
    analyzer.observe(e, identifier.identify_one(e));
  }
  return {analyzer.counters(), analyzer.findings()};
}

const Finding* find(const Run& run, const std::string& id) {
  for (const auto& f : run.findings) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

OwnedEvent ev(std::int64_t offset, std::string id, std::string payload, std::int64_t ts = 0,
              std::int32_t partition = 0) {
  return with_header_id(partition, offset, ts, std::move(id), std::move(payload));
}

} // namespace

TEST(LogAnalyzer, SameIdSamePayloadIsALogDuplicate) {
  auto run = analyze({ev(0, "a", "x"), ev(1, "a", "x"), ev(2, "a", "x"), ev(3, "b", "y")});
  EXPECT_EQ(run.counters.events, 4);
  EXPECT_EQ(run.counters.log_duplicates, 2);
  EXPECT_EQ(run.counters.id_reuse, 0);
  const Finding* f = find(run, "log-duplicate");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Info);
  EXPECT_EQ(f->count, 2);
  ASSERT_EQ(f->examples.size(), 2u);
  EXPECT_EQ(f->examples[0].offset, 1);
  EXPECT_EQ(f->examples[0].event_id, "a");
}

TEST(LogAnalyzer, SameIdDifferentPayloadIsIdReuseWhateverTheOrder) {
  // Payloads A, A, B, A, B under one id: two distinct payloads → 1 reuse, 3 log duplicates.
  std::vector<OwnedEvent> events{ev(0, "a", "A"), ev(1, "a", "A"), ev(2, "a", "B"), ev(3, "a", "A"), ev(4, "a", "B")};
  auto run = analyze(events);
  EXPECT_EQ(run.counters.id_reuse, 1);
  EXPECT_EQ(run.counters.log_duplicates, 3);
  std::reverse(events.begin(), events.end());
  auto reversed = analyze(events);
  EXPECT_EQ(reversed.counters.id_reuse, 1);
  EXPECT_EQ(reversed.counters.log_duplicates, 3);
  const Finding* f = find(run, "id-reuse");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Error);
  EXPECT_EQ(f->examples[0].offset, 2);
  EXPECT_NE(f->examples[0].note.find("differs from the first payload"), std::string::npos);
}

TEST(LogAnalyzer, ANewIdForTheSameIntentWithinTheWindowIsASemanticDuplicate) {
  auto run = analyze({ev(0, "e-1", R"({"type":"Charge","order":"o-1","amount":5})", 0),
                      ev(1, "e-2", R"({"type":"Charge","order":"o-1","amount":5})", 4 * k_minute),
                      ev(2, "e-3", R"({"type":"Charge","order":"o-1","amount":5})", 10 * k_minute),
                      ev(3, "e-4", R"({"type":"Charge","order":"o-2","amount":5})", 10 * k_minute)});
  // e-2 is 4 min after e-1 (inside 5m); e-3 is 6 min after e-2 (outside); e-4 is another intent.
  EXPECT_EQ(run.counters.semantic_duplicates, 1);
  const Finding* f = find(run, "semantic-duplicate");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->examples[0].event_id, "e-2");
  EXPECT_EQ(f->examples[0].note, "same semantic key as an event with another id 4m earlier");
}

TEST(LogAnalyzer, TheWindowBoundaryIsInclusive) {
  LogAnalyzerOptions options;
  options.semantic_window_ms = 5 * k_minute;
  auto at_edge = analyze(
      {ev(0, "e-1", R"({"event_id":"e-1","v":1})", 0), ev(1, "e-2", R"({"event_id":"e-2","v":1})", 5 * k_minute)},
      options);
  EXPECT_EQ(at_edge.counters.semantic_duplicates, 1);
  auto past = analyze({ev(0, "e-1", R"({"v":1})", 0), ev(1, "e-2", R"({"v":1})", 5 * k_minute + 1)}, options);
  EXPECT_EQ(past.counters.semantic_duplicates, 0);
}

TEST(LogAnalyzer, ALogDuplicateIsNotAlsoASemanticDuplicate) {
  auto run = analyze({ev(0, "e-1", "same", 0), ev(1, "e-2", "same", 1000), ev(2, "e-1", "same", 2000)});
  EXPECT_EQ(run.counters.log_duplicates, 1);
  EXPECT_EQ(run.counters.semantic_duplicates, 1);
}

TEST(LogAnalyzer, EventsWithoutIdsAreCountedWithTheReason) {
  OwnedEvent no_id;
  no_id.offset = 9;
  no_id.partition = 4;
  no_id.payload = "not json";
  auto run = analyze({no_id, ev(1, "a", "x")});
  EXPECT_EQ(run.counters.no_id, 1);
  const Finding* f = find(run, "missing-event-id");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->severity, Severity::Warning);
  EXPECT_EQ(f->partitions, std::vector<std::int32_t>{4});
  EXPECT_EQ(f->examples[0].note, "no header event_id, payload is not JSON");
  EXPECT_EQ(f->examples[0].event_id, "");
}

TEST(LogAnalyzer, EventsWithBinaryPayloadsAreCountedApartWithWhatToDo) {
  OwnedEvent binary;
  binary.offset = 9;
  binary.payload = std::string("\x02\x0ae-17\xff", 6);
  OwnedEvent text = binary;
  text.offset = 10;
  text.payload = "not json";
  auto run = analyze({binary, text, binary, ev(1, "a", "x")});
  EXPECT_EQ(run.counters.no_id, 3);
  const Finding* f = find(run, "missing-event-id");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "3 events carry no event id (2 of them have a binary payload that json: specs cannot read)");
  EXPECT_NE(f->advice.find("--id header:event_id"), std::string::npos) << f->advice;
  EXPECT_EQ(f->examples[0].note, "no header event_id, payload is binary, not JSON (Avro or Protobuf?)");
  auto plain = analyze({text});
  EXPECT_EQ(find(plain, "missing-event-id")->title, "1 events carry no event id");
}

TEST(LogAnalyzer, ExamplesAreBoundedButCountsAreExact) {
  std::vector<OwnedEvent> events;
  for (int i = 0; i < 100; ++i) {
    events.push_back(ev(i, "same", "same", i, i % 7));
  }
  LogAnalyzerOptions options;
  options.max_examples = 3;
  auto run = analyze(events, options);
  const Finding* f = find(run, "log-duplicate");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->count, 99);
  EXPECT_EQ(f->examples.size(), 3u);
  EXPECT_EQ(f->partitions.size(), 7u);
}

TEST(LogAnalyzer, ACleanLogHasNoFindings) {
  auto run = analyze({ev(0, "a", R"({"v":1})", 0), ev(1, "b", R"({"v":2})", 0)});
  EXPECT_TRUE(run.findings.empty());
  EXPECT_EQ(run.counters.events, 2);
}

TEST(LogAnalyzer, AMillionDistinctIdsAreAllDistinct) {
  // The flat tables must neither lose nor merge ids as they grow.
  LogAnalyzer analyzer(LogAnalyzerOptions{});
  Event e;
  e.topic = "t";
  for (std::uint64_t i = 0; i < 1'000'000; ++i) {
    Identity id;
    id.has_id = true;
    id.id_hash = i * 0x9e3779b97f4a7c15ULL;
    id.payload_fingerprint = i;
    id.semantic_hash = (i + 1) * 0xc2b2ae3d27d4eb4fULL; // hash-like; 0 and 1 share a slot by design
    analyzer.observe(e, id);
  }
  EXPECT_EQ(analyzer.counters().events, 1'000'000);
  EXPECT_EQ(analyzer.counters().log_duplicates + analyzer.counters().id_reuse + analyzer.counters().semantic_duplicates,
            0);
}
