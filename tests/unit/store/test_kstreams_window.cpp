// A Kafka Streams window store as its changelog holds it and as the guides' dedup processor uses it:
// the key's layout (WindowKeySchema), the store's visibility bound (T - retention + 1) and the
// processor's fetch around an event's time.
#include "core/store/kstreams_window.hpp"
#include "core/util/errors.hpp"
#include "tests/support/events.hpp"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace dedupctl::core;
using dedupctl::testing::window_store_key;

namespace {} // namespace

TEST(KstreamsWindowKey, SplitsTheIdFromTheWindowSuffixFromTheRight) {
  std::string bytes = window_store_key("order-7", 1'700'000'000'123, 5);
  auto key = parse_window_store_key(bytes);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->key, "order-7");
  EXPECT_EQ(key->window_start, 1'700'000'000'123);
  EXPECT_EQ(key->seqnum, 5);
  // An id whose own bytes end like a suffix is still the bytes before the last twelve.
  std::string tricky = window_store_key(window_store_key("a", 1), 2);
  key = parse_window_store_key(tricky);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->key, window_store_key("a", 1));
  EXPECT_EQ(key->window_start, 2);
  // Negative starts and the highest seqnum (a store retaining duplicates wraps at 2^31 - 1).
  key = parse_window_store_key(window_store_key("x", -1, 0x7FFFFFFF));
  ASSERT_TRUE(key);
  EXPECT_EQ(key->window_start, -1);
  EXPECT_EQ(key->seqnum, 0x7FFFFFFF);
}

TEST(KstreamsWindowKey, AKeyShorterThanTheSuffixIsNoWindowKey) {
  EXPECT_FALSE(parse_window_store_key(""));
  EXPECT_FALSE(parse_window_store_key(std::string(11, '\0')));
  auto empty_id = parse_window_store_key(std::string(12, '\0'));
  ASSERT_TRUE(empty_id);
  EXPECT_EQ(empty_id->key, "");
  EXPECT_EQ(empty_id->window_start, 0);
}

TEST(KstreamsWindowKey, AnIdBecomesTheStoreKeyAsItsSerdeWritesIt) {
  EXPECT_EQ(store_key("evt-1", KeySerde::String), "evt-1");
  EXPECT_EQ(store_key("evt-1", KeySerde::Bytes), "evt-1");
  EXPECT_EQ(store_key("42", KeySerde::Long), std::string("\0\0\0\0\0\0\0\x2a", 8));
  EXPECT_EQ(store_key("-1", KeySerde::Long), std::string(8, '\xff'));
  EXPECT_EQ(store_key("9223372036854775807", KeySerde::Long), std::string("\x7f\xff\xff\xff\xff\xff\xff\xff", 8));
  EXPECT_FALSE(store_key("9223372036854775808", KeySerde::Long)); // beyond a Java long
  EXPECT_FALSE(store_key("42x", KeySerde::Long));
  EXPECT_FALSE(store_key("", KeySerde::Long));
  EXPECT_EQ(store_key("4FF3CB44-ABCB-46E3-8F9A-AFB7CC74FBB8", KeySerde::Uuid), "4ff3cb44-abcb-46e3-8f9a-afb7cc74fbb8");
  EXPECT_FALSE(store_key("4ff3cb44abcb46e38f9aafb7cc74fbb8", KeySerde::Uuid));
  EXPECT_FALSE(store_key("4ff3cb44-abcb-46e3-8f9a-afb7cc74fbbg", KeySerde::Uuid));
  EXPECT_EQ(store_key_text(*store_key("-42", KeySerde::Long), KeySerde::Long), "-42");
  EXPECT_EQ(store_key_text("\x01\xfe", KeySerde::Bytes), "01fe");
  EXPECT_EQ(store_key_text("evt-1", KeySerde::String), "evt-1");
}

TEST(KstreamsWindowKey, ASerdeIsNamedOrRefused) {
  EXPECT_EQ(parse_key_serde("uuid"), KeySerde::Uuid);
  EXPECT_EQ(parse_key_serde("long"), KeySerde::Long);
  try {
    parse_key_serde("avro");
    FAIL() << "no throw";
  } catch (const dedupctl::UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("key-serde=avro"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("string, bytes, long, uuid or json"), std::string::npos) << e.what();
  }
}

// Jackson's writeValueAsString of a String: its own short escapes, \u00XX upper-case for the other control
// characters, and UTF-8 bytes as they are (not \u-escaped).
TEST(KstreamsWindowKey, AJsonSerdeQuotesTheIdAsJacksonWritesIt) {
  EXPECT_EQ(store_key("evt-1", KeySerde::Json), "\"evt-1\"");
  EXPECT_EQ(store_key("a\"b\\c", KeySerde::Json), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(store_key("t\tn\nr\rb\bf\f", KeySerde::Json), "\"t\\tn\\nr\\rb\\bf\\f\"");
  EXPECT_EQ(store_key(std::string("\x01\x1f", 2), KeySerde::Json), "\"\\u0001\\u001F\"");
  EXPECT_EQ(store_key("caf\xc3\xa9/x", KeySerde::Json), "\"caf\xc3\xa9/x\"");
  EXPECT_EQ(parse_key_serde("json"), KeySerde::Json);
  EXPECT_EQ(store_key_text("\"evt-1\"", KeySerde::Json), "\"evt-1\"");
}

TEST(KstreamsWindowStore, AFetchReturnsOnlyRecordsAtOrAboveStreamTimeLessRetentionPlusOne) {
  WindowStorePartition store(100);
  EXPECT_EQ(store.stream_time(), -1);
  store.restore(*parse_window_store_key(window_store_key("a", 0)), false);
  store.restore(*parse_window_store_key(window_store_key("c", 51)), false);
  EXPECT_TRUE(store.fetch_any("a", -1000, 1000)); // T = 51: a at 0 is still live (0 >= -48)
  store.restore(*parse_window_store_key(window_store_key("b", 150)), false);
  EXPECT_EQ(store.stream_time(), 150);
  EXPECT_EQ(store.live_from(), 51);
  EXPECT_FALSE(store.fetch_any("a", -1000, 1000)); // 0 < 51
  EXPECT_TRUE(store.held_expired("a"));
  EXPECT_TRUE(store.fetch_any("c", 0, 51)); // exactly at the bound: visible
  EXPECT_FALSE(store.held_expired("c"));
  EXPECT_FALSE(store.fetch_any("c", 52, 1000)); // outside the fetch's own range
  EXPECT_FALSE(store.fetch_any("never", -1000, 1000));
  EXPECT_FALSE(store.held_expired("never"));
  // A put below the bound is dropped on arrival and does not move T back.
  store.put("d", 50);
  EXPECT_FALSE(store.fetch_any("d", 0, 1000));
  EXPECT_TRUE(store.held_expired("d"));
  EXPECT_EQ(store.stream_time(), 150);
}

TEST(KstreamsWindowStore, ATombstoneDeletesItsRecordAndStillAdvancesStreamTime) {
  WindowStorePartition store(100);
  store.restore(*parse_window_store_key(window_store_key("a", 10)), false);
  store.restore(*parse_window_store_key(window_store_key("a", 20)), false);
  store.restore(*parse_window_store_key(window_store_key("a", 10)), true);
  EXPECT_FALSE(store.fetch_any("a", 0, 15));
  EXPECT_TRUE(store.fetch_any("a", 15, 25));
  store.restore(*parse_window_store_key(window_store_key("a", 20)), true);
  EXPECT_FALSE(store.fetch_any("a", 0, 1000));
  EXPECT_FALSE(store.held_expired("a")) << "deleted while live: gone, not expired";
  store.restore(*parse_window_store_key(window_store_key("z", 500)), true);
  EXPECT_EQ(store.stream_time(), 500);
  EXPECT_TRUE(store.held_expired("a")); // its newest record, at 20, would be below 401 now
}

TEST(KstreamsWindowProcessor, TheExamplesProcessorRefreshesADuplicateAndForwardsOneOutsideItsWindow) {
  WindowDedupProcessor processor = processor_for_window(10); // fetch [t - 5, t + 5]
  WindowStorePartition store(1000);
  EXPECT_FALSE(process_event(processor, store, "x", 100)); // new: forwarded, put at 100
  EXPECT_TRUE(process_event(processor, store, "x", 104));  // 100 in [99, 109]: dropped, put at 104
  EXPECT_TRUE(process_event(processor, store, "x", 109));  // 104 in [104, 114]: the refresh caught it
  EXPECT_FALSE(process_event(processor, store, "x", 120)); // 109 < 115: forwarded again
  // A record ahead of the event's time suppresses it too: the fetch reaches t + right.
  EXPECT_FALSE(process_event(processor, store, "y", 200));
  EXPECT_TRUE(process_event(processor, store, "y", 195));
}

TEST(KstreamsWindowProcessor, WithoutARefreshOnAHitTheFirstRecordAloneDecides) {
  WindowDedupProcessor processor = processor_for_window(10);
  processor.put_on_hit = false; // kstreamplify's DedupKeyProcessor
  WindowStorePartition store(1000);
  EXPECT_FALSE(process_event(processor, store, "x", 100));
  EXPECT_TRUE(process_event(processor, store, "x", 104));
  EXPECT_FALSE(process_event(processor, store, "x", 109)); // 100 < 104: the record at 100 alone
}

TEST(KstreamsWindowProcessor, AReplayOlderThanTheStoresRetentionIsForwardedAgain) {
  WindowDedupProcessor processor = processor_for_window(10);
  WindowStorePartition store(50);
  EXPECT_FALSE(process_event(processor, store, "x", 100));
  EXPECT_FALSE(process_event(processor, store, "z", 200)); // T = 200: the store keeps [151, ...]
  EXPECT_FALSE(process_event(processor, store, "x", 100)) << "replayed: its record expired";
  EXPECT_TRUE(store.held_expired("x"));
  EXPECT_TRUE(process_event(processor, store, "z", 200)) << "within retention: dropped";
}

TEST(KstreamsWindowProcessor, ALookupWindowSplitsAsTheJavaCodeDoes) {
  WindowDedupProcessor odd = processor_for_window(7);
  EXPECT_EQ(odd.left_ms, 3); // maintainDurationPerEventInMs / 2
  EXPECT_EQ(odd.right_ms, 4);
  EXPECT_TRUE(odd.put_on_hit);
}

namespace {

struct ChangelogRecord {
  std::int32_t partition = 0;
  std::string key;
  bool tombstone = false;
};

std::vector<Event> as_events(const std::vector<ChangelogRecord>& records, std::vector<std::string_view>& payloads) {
  std::vector<Event> events;
  payloads.assign(records.size(), "value"); // a Long in a real changelog; only its presence counts here
  for (std::size_t i = 0; i < records.size(); ++i) {
    Event e;
    e.topic = "app-eventId-store-changelog";
    e.partition = records[i].partition;
    e.offset = static_cast<std::int64_t>(i);
    e.key = records[i].key;
    if (!records[i].tombstone) {
      e.payload = payloads[i];
    }
    events.push_back(e);
  }
  return events;
}

} // namespace

TEST(KstreamsWindowChangelog, EachPartitionFoldsIntoItsOwnStore) {
  std::vector<ChangelogRecord> records{{0, window_store_key("a", 100)},
                                       {1, window_store_key("a", 500)},
                                       {0, window_store_key("b", 300)},
                                       {1, window_store_key("a", 500), true}};
  std::vector<std::string_view> payloads;
  auto events = as_events(records, payloads);
  WindowStoreChangelog changelog(1000);
  changelog.restore(events);
  EXPECT_EQ(changelog.records(), 4u);
  EXPECT_EQ(changelog.partition(0).stream_time(), 300); // T is the partition's own
  EXPECT_TRUE(changelog.partition(0).fetch_any("a", 0, 200));
  EXPECT_EQ(changelog.partition(1).stream_time(), 500);
  EXPECT_FALSE(changelog.partition(1).fetch_any("a", 0, 1000)) << "deleted by its tombstone";
  EXPECT_EQ(changelog.partition(7).stream_time(), -1) << "a partition with no record: an empty store";
}

TEST(KstreamsWindowChangelog, AKeyThatIsNoWindowKeyIsAnErrorNamingTheRecord) {
  std::vector<ChangelogRecord> records{{0, window_store_key("a", 100)}, {2, "order-7"}};
  std::vector<std::string_view> payloads;
  auto events = as_events(records, payloads);
  WindowStoreChangelog changelog(1000);
  try {
    changelog.restore(events);
    FAIL() << "no throw";
  } catch (const dedupctl::UsageError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("app-eventId-store-changelog partition 2 offset 1"), std::string::npos) << what;
    EXPECT_NE(what.find("a key of 7 bytes"), std::string::npos) << what;
    EXPECT_NE(what.find("window store's changelog"), std::string::npos) << what;
  }
  Event null_key;
  null_key.topic = "t";
  WindowStoreChangelog other(1000);
  EXPECT_THROW(other.restore(std::span<const Event>(&null_key, 1)), dedupctl::UsageError);
}

// An instance restarted on its kept RocksDB state: the segments live at its stream time stay whole (a record
// below T - retention + 1 in a live segment included), the older ones are gone, and its stream time is back
// at -1, so that a fetch returns every record kept.
TEST(KstreamsWindowStore, KeptLocalStateHoldsTheLiveSegmentsWholeFromAStreamTimeOfMinusOne) {
  const std::int64_t retention = 60'000 * 60;                        // an hour
  const std::int64_t interval = default_segment_interval(retention); // 30 minutes
  EXPECT_EQ(interval, 60'000 * 30);
  EXPECT_EQ(default_segment_interval(1000), 60'000) << "at least a minute";
  WindowStorePartition store(retention);
  const std::int64_t m = 60'000;
  store.put("old", 10 * m);  // segment 0
  store.put("edge", 35 * m); // segment 1: below T - R + 1 but in a live segment
  store.put("new", 100 * m); // segment 3, T = 100 min; min live segment (100 - 60) / 30 = 1
  EXPECT_FALSE(store.fetch_any("edge", 0, 200 * m)) << "restored: below the bound";
  EXPECT_TRUE(store.held_expired("edge"));
  store.keep_local_state(interval);
  EXPECT_EQ(store.stream_time(), -1);
  EXPECT_TRUE(store.fetch_any("edge", 30 * m, 40 * m)) << "kept: its segment is live";
  EXPECT_FALSE(store.held_expired("edge"));
  EXPECT_FALSE(store.fetch_any("old", 0, 200 * m)) << "kept: its segment was removed";
  EXPECT_TRUE(store.held_expired("old")) << "put, and gone with its segment";
  EXPECT_FALSE(store.held_expired("never"));
  // The replay's own puts move stream time again, and with it the bound.
  store.put("other", 99 * m);
  EXPECT_FALSE(store.fetch_any("edge", 30 * m, 40 * m));
  store.put("old", 95 * m);
  EXPECT_FALSE(store.held_expired("old")) << "put again: held";
}

// A key-value store: the whole key is the id, each key's last record is the store, a tombstone deletes it,
// and nothing expires.
TEST(KstreamsWindowChangelog, AKeyValueStoresChangelogFoldsByKey) {
  std::vector<ChangelogRecord> records{{0, "a"}, {0, "b"},     {0, "a", true},
                                       {1, "c"}, {0, "short"}, {0, window_store_key("w", 5)}};
  std::vector<std::string_view> payloads;
  auto events = as_events(records, payloads);
  WindowStoreChangelog changelog(1000, true);
  EXPECT_TRUE(changelog.key_value());
  changelog.restore(events);
  EXPECT_FALSE(changelog.partition(0).fetch_any("a", 0, 0)) << "deleted";
  EXPECT_TRUE(changelog.partition(0).fetch_any("b", 0, 0));
  EXPECT_TRUE(changelog.partition(0).fetch_any("short", 0, 0)) << "no suffix needed";
  EXPECT_TRUE(changelog.partition(0).fetch_any(window_store_key("w", 5), 0, 0)) << "the whole key";
  EXPECT_FALSE(changelog.partition(0).fetch_any("c", 0, 0)) << "another partition's";
  EXPECT_TRUE(changelog.partition(1).fetch_any("c", 0, 0));
  changelog.keep_local_state(60'000);
  EXPECT_TRUE(changelog.partition(0).fetch_any("b", 0, 0)) << "kept or restored, the same";
  Event null_key;
  null_key.topic = "t";
  WindowStoreChangelog other(1000, true);
  EXPECT_THROW(other.restore(std::span<const Event>(&null_key, 1)), dedupctl::UsageError);
}

// The log cleaner keeps the last record of each key (an id at a window start): the fold of the
// compacted changelog answers every fetch as the whole one does.
TEST(KstreamsWindowChangelog, ACompactedChangelogFoldsIntoTheSameStore) {
  std::mt19937_64 rng(5);
  std::vector<ChangelogRecord> whole;
  for (int i = 0; i < 3000; ++i) {
    std::string id = "id-" + std::to_string(rng() % 200);
    auto start = static_cast<std::int64_t>(i * 10 + static_cast<int>(rng() % 50)); // a little out of order
    whole.push_back({0, window_store_key(id, start)});
    if (rng() % 5 == 0) {
      whole.push_back({0, window_store_key(id, start)}); // a put again at the same start (a refresh)
    }
    if (rng() % 17 == 0) {
      whole.push_back({0, window_store_key(id, start), true}); // deleted: compaction keeps the tombstone alone
    }
  }
  std::vector<ChangelogRecord> compacted;
  std::map<std::string, std::size_t> last;
  for (std::size_t i = 0; i < whole.size(); ++i) {
    last[whole[i].key] = i;
  }
  for (std::size_t i = 0; i < whole.size(); ++i) {
    if (last[whole[i].key] == i) {
      compacted.push_back(whole[i]);
    }
  }
  ASSERT_LT(compacted.size(), whole.size());
  std::vector<std::string_view> p1, p2;
  auto e1 = as_events(whole, p1);
  auto e2 = as_events(compacted, p2);
  WindowStoreChangelog a(2000), b(2000);
  a.restore(e1);
  b.restore(e2);
  EXPECT_EQ(a.partition(0).stream_time(), b.partition(0).stream_time());
  for (int id = 0; id < 200; ++id) {
    std::string key = "id-" + std::to_string(id);
    for (std::int64_t t = 26'000; t <= 31'000; t += 250) {
      ASSERT_EQ(a.partition(0).fetch_any(key, t - 300, t + 300), b.partition(0).fetch_any(key, t - 300, t + 300))
          << key << " at " << t;
    }
    for (std::int64_t t = 0; t <= 31'000; t += 500) {
      ASSERT_EQ(a.partition(0).expired_in(key, t - 300, t + 300), b.partition(0).expired_in(key, t - 300, t + 300))
          << key << " at " << t;
    }
    ASSERT_EQ(a.partition(0).held_expired(key), b.partition(0).held_expired(key)) << key;
  }
}
