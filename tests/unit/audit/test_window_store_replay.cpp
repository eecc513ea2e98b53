// A Kafka Streams dedup store's verdicts: the events of a seek's window run through the guides' processor
// over the store the changelog folds to, partition by partition, as the restarted application runs them.
#include "core/audit/ttl.hpp"
#include "core/audit/window_store_replay.hpp"
#include "tests/support/events.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace dedupctl::core;
using dedupctl::testing::window_store_key;

namespace {

constexpr std::int64_t k_min = 60'000;
constexpr std::int64_t k_base = 1'699'999'200'000; // a multiple of 30 minutes: segments start at minute 0

struct Input {
  std::string id;
  std::int64_t minute;
  std::int32_t partition = 0;
};

// The changelog of the application that processed `inputs` (every forwarded event's put; a hit's put
// again), in offset order a partition.
struct Changelog {
  std::vector<std::string> keys;
  std::vector<Event> records;
  void put(std::int32_t partition, std::string_view id, std::int64_t start) {
    keys.push_back(window_store_key(id, start));
    Event e;
    e.topic = "app-store-changelog";
    e.partition = partition;
    e.offset = static_cast<std::int64_t>(records.size());
    records.push_back(e);
  }
  void fill(WindowStoreChangelog& out) {
    for (std::size_t i = 0; i < records.size(); ++i) {
      records[i].key = keys[i];
      records[i].payload = std::string_view("v");
    }
    out.restore(records);
  }
};

struct Audit {
  AuditAnalyzer analyzer;
  WindowStoreReplay replay;
  Audit(WindowStoreReading reading, std::optional<std::int64_t> committed, WindowBounds window)
      : analyzer(options()), replay(reading) {
    for (std::int32_t p = 0; p < 2; ++p) {
      analyzer.set_partition("orders", p, committed, window);
      replay.set_partition("orders", p, committed, window);
    }
  }
  static AuditOptions options() {
    AuditOptions o;
    o.ttl = declared_ttl(Span::finite(60 * k_min));
    o.policy.now_ms = k_base + 1000 * k_min;
    o.max_examples = 20;
    o.window_label = "[seek, committed)";
    o.window_store = true;
    return o;
  }
  void observe(const std::vector<Input>& inputs) {
    std::vector<std::int64_t> offsets(2, 0);
    for (const auto& in : inputs) {
      Event e;
      e.topic = "orders";
      e.partition = in.partition;
      e.offset = offsets[static_cast<std::size_t>(in.partition)]++;
      e.timestamp_ms = k_base + in.minute * k_min;
      Identity id;
      id.has_id = !in.id.empty();
      id.id = in.id;
      id.type = "OrderPaid";
      replay.observe(e, id, in.id);
    }
  }
};

std::int64_t state(const AuditResult& r, Coverage c) { return r.states[static_cast<std::size_t>(c)]; }

const Finding* finding(const AuditResult& r, const std::string& id) {
  for (const auto& f : r.findings) {
    if (f.id == id) {
      return &f;
    }
  }
  return nullptr;
}

std::vector<std::string> reapplied(const AuditResult& r) {
  std::vector<std::string> out;
  if (const Finding* risk = finding(r, "replay-risk")) {
    for (const auto& ex : risk->examples) {
      out.push_back(ex.event_id + "@" + std::to_string(ex.offset));
    }
  }
  return out;
}

WindowStoreReading reading(std::int64_t window_ms) {
  WindowStoreReading r;
  r.processor = processor_for_window(window_ms);
  return r;
}

} // namespace

// The store keeps an hour behind its stream time (minute 200): a seek to 0 forwards what is older again,
// drops what it still holds inside the lookup window, and the events past the committed offset are
// first deliveries.
TEST(WindowStoreReplay, ASeekForwardsWhatTheStoreNoLongerHoldsAndDropsWhatItDoes) {
  const std::vector<Input> inputs{{"a", 0},   {"b", 10},  {"a", 12}, {"c", 100}, {"d", 170},
                                  {"c", 190}, {"e", 200}, {"", 200}, {"f", 201}, {"c", 202}};
  Changelog log;
  for (auto [id, minute] : std::vector<std::pair<std::string, std::int64_t>>{
           {"a", 0}, {"b", 10}, {"a", 12}, {"c", 100}, {"d", 170}, {"c", 190}, {"e", 200}}) {
    log.put(0, id, k_base + minute * k_min);
  }
  WindowStoreChangelog changelog(60 * k_min);
  log.fill(changelog);
  Audit audit(reading(10 * k_min), 8, WindowBounds{0, 8, std::nullopt});
  audit.observe(inputs);
  audit.replay.decide(changelog, audit.analyzer);
  AuditResult r = audit.analyzer.finish();
  // a, b, a: older than the hour (expired); c at 100 too: its record at 190 is held, but outside the
  // lookup window [95, 105], where its own put is below the bound (expired, not missing); d, c@5 and e
  // are held; the event without an id is re-applied.
  EXPECT_EQ(state(r, Coverage::Expired), 4) << "a@0 b@1 a@2 c@3";
  EXPECT_EQ(state(r, Coverage::Covered), 3) << "d c e";
  EXPECT_EQ(state(r, Coverage::NoId), 1);
  EXPECT_EQ(state(r, Coverage::Pending), 2) << "f and c past the committed offset";
  EXPECT_EQ(r.replay.events, 8);
  EXPECT_EQ(r.replay.would_reapply, 5);
  EXPECT_EQ(r.replay.would_skip, 3);
  EXPECT_EQ(r.replay.first_delivery, 0) << "past the window [0, 8)";
  EXPECT_EQ(reapplied(r), (std::vector<std::string>{"a@0", "b@1", "a@2", "c@3", "@7"}));
  ASSERT_EQ(r.replay.safe_from.size(), 2u) << "a partition each, the second empty";
  EXPECT_EQ(r.replay.safe_from[0].partition, 0);
  EXPECT_EQ(r.replay.safe_from[0].offset, 8);
  const Finding* expired = finding(r, "ttl-gap");
  ASSERT_NE(expired, nullptr);
  EXPECT_EQ(expired->count, 4);
  EXPECT_NE(expired->title.find("the window store no longer returns their records"), std::string::npos)
      << expired->title;
  ASSERT_FALSE(expired->examples.empty());
  EXPECT_NE(expired->examples[0].note.find("older than the store keeps"), std::string::npos)
      << expired->examples[0].note;
}

// The first a of the replay is forwarded (its record expired), and puts a again: the a twelve minutes
// later is then dropped by that put, which the restored store alone did not hold.
TEST(WindowStoreReplay, TheReplaysOwnPutsSuppressItsLaterDuplicates) {
  const std::vector<Input> inputs{{"a", 0}, {"a", 3}, {"z", 200}};
  Changelog log;
  log.put(0, "a", k_base);
  log.put(0, "z", k_base + 200 * k_min);
  WindowStoreChangelog changelog(60 * k_min);
  log.fill(changelog);
  Audit audit(reading(10 * k_min), 3, WindowBounds{0, 3, std::nullopt});
  audit.observe(inputs);
  audit.replay.decide(changelog, audit.analyzer);
  AuditResult r = audit.analyzer.finish();
  EXPECT_EQ(reapplied(r), (std::vector<std::string>{"a@0", "a@1"}))
      << "the replay's put at minute 0 is below the store's bound too: both forwarded";
  // With a store that keeps a day, the first a is held, so is the second.
  WindowStoreChangelog day(24 * 60 * k_min);
  log.fill(day);
  Audit kept(reading(10 * k_min), 3, WindowBounds{0, 3, std::nullopt});
  kept.observe(inputs);
  kept.replay.decide(day, kept.analyzer);
  EXPECT_TRUE(reapplied(kept.analyzer.finish()).empty());
}

// Before the seek nothing is delivered again: an event there has the state a lookup at its own time
// finds, and puts nothing; partitions are stores of their own.
TEST(WindowStoreReplay, EventsBeforeTheSeekAreJudgedUnreplayedAndPartitionsAreApart) {
  const std::vector<Input> inputs{{"a", 100}, {"x", 101, 1}, {"b", 102}, {"x", 103}};
  Changelog log;
  log.put(0, "a", k_base + 100 * k_min);
  log.put(0, "b", k_base + 102 * k_min);
  log.put(1, "x", k_base + 101 * k_min);
  WindowStoreChangelog changelog(60 * k_min);
  log.fill(changelog);
  Audit audit(reading(10 * k_min), 3, WindowBounds{1, 3, std::nullopt}); // each partition's window: [1, 3)
  audit.observe(inputs);
  audit.replay.decide(changelog, audit.analyzer);
  AuditResult r = audit.analyzer.finish();
  EXPECT_EQ(state(r, Coverage::Covered), 3) << "a and partition 1's x before the window, b in it";
  EXPECT_EQ(state(r, Coverage::Missing), 1) << "partition 0 never held x";
  EXPECT_EQ(r.replay.events, 2);
  EXPECT_EQ(reapplied(r), (std::vector<std::string>{"x@2"}));
}

// By stream time, the lookup is around the largest timestamp the task has processed since it started
// again: a late event is looked up at a later time than its own.
TEST(WindowStoreReplay, ByStreamTimeALateEventIsLookedUpAtTheTasksTime) {
  const std::vector<Input> inputs{{"x", 200}, {"h", 100}, {"h", 101}};
  Changelog log;
  log.put(0, "x", k_base + 200 * k_min);
  WindowStoreChangelog by_record(60 * k_min), by_stream(60 * k_min);
  log.fill(by_record);
  log.fill(by_stream);
  Audit record(reading(10 * k_min), 3, WindowBounds{0, 3, std::nullopt});
  record.observe(inputs);
  record.replay.decide(by_record, record.analyzer);
  EXPECT_EQ(reapplied(record.analyzer.finish()), (std::vector<std::string>{"h@1", "h@2"}))
      << "by record time, h's puts are below the bound";
  WindowStoreReading stream = reading(10 * k_min);
  stream.stream_time = true;
  Audit streamed(stream, 3, WindowBounds{0, 3, std::nullopt});
  streamed.observe(inputs);
  streamed.replay.decide(by_stream, streamed.analyzer);
  EXPECT_EQ(reapplied(streamed.analyzer.finish()), (std::vector<std::string>{"h@1"}))
      << "by stream time, both at minute 200: the second finds the first's put";
}

// On kept local state the live segments stay whole, so a put just below the restored bound still
// suppresses; a key-value store holds every id its compacted changelog holds, and nothing expires.
TEST(WindowStoreReplay, KeptStateAndAKeyValueStoreReadTheirOwnWay) {
  const std::vector<Input> inputs{{"edge", 135}, {"new", 200}};
  Changelog log;
  log.put(0, "edge", k_base + 135 * k_min);
  log.put(0, "new", k_base + 200 * k_min);
  WindowStoreChangelog restored(60 * k_min), local(60 * k_min);
  log.fill(restored);
  log.fill(local);
  Audit a(reading(10 * k_min), 2, WindowBounds{0, 2, std::nullopt});
  a.observe(inputs);
  a.replay.decide(restored, a.analyzer);
  EXPECT_EQ(reapplied(a.analyzer.finish()), (std::vector<std::string>{"edge@0"}));
  WindowStoreReading kept = reading(10 * k_min);
  kept.kept_state = true;
  kept.segment_interval_ms = default_segment_interval(60 * k_min);
  Audit b(kept, 2, WindowBounds{0, 2, std::nullopt});
  b.observe(inputs);
  b.replay.decide(local, b.analyzer);
  EXPECT_TRUE(reapplied(b.analyzer.finish()).empty()) << "segment 135 min / 30 = 4 >= (200 - 60) / 30 = 4";

  WindowStoreChangelog kv(0, true);
  Changelog kv_log;
  kv_log.put(0, "k", 0);
  kv_log.keys.back() = "edge";
  kv_log.fill(kv);
  WindowStoreReading kv_reading;
  kv_reading.key_value = true;
  Audit c(kv_reading, 2, WindowBounds{0, 2, std::nullopt});
  c.observe(inputs);
  c.replay.decide(kv, c.analyzer);
  EXPECT_EQ(reapplied(c.analyzer.finish()), (std::vector<std::string>{"new@1"})) << "never put";
}

// An id the key serde cannot hold (a long serde's non-number) matches no record: forwarded again, said so.
TEST(WindowStoreReplay, AnIdTheSerdeCannotHoldMatchesNothing) {
  WindowStoreChangelog changelog(60 * k_min);
  WindowStoreReading r = reading(10 * k_min);
  r.serde = KeySerde::Long;
  Audit audit(r, 1, WindowBounds{0, 1, std::nullopt});
  audit.observe({{"order-7", 0}});
  audit.replay.decide(changelog, audit.analyzer);
  AuditResult result = audit.analyzer.finish();
  const Finding* missing = finding(result, "missing-record");
  ASSERT_NE(missing, nullptr);
  ASSERT_FALSE(missing->examples.empty());
  EXPECT_EQ(missing->examples[0].note, "the id is no long key: no record of the store can hold it");
}
