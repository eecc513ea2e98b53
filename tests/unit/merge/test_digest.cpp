// Sharding and the merge of shards (core/merge/digest.hpp): which shard owns a partition, the canonical
// order, and the merge of the analyses that span partitions against LogAnalyzer itself over the
// same events in canonical order.
#include "core/merge/digest.hpp"
#include "core/scan/log_analyzer.hpp"
#include "core/source/range.hpp"
#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

using namespace dedupctl;
using namespace dedupctl::core;

namespace {

// A digest section from memory.
template <typename Base, typename Item> class VectorStream final : public Base {
public:
  explicit VectorStream(std::vector<Item> items) : m_items(std::move(items)) {}
  bool next(Item& item) override {
    if (m_at == m_items.size()) {
      return false;
    }
    item = m_items[m_at++];
    return true;
  }

private:
  std::vector<Item> m_items;
  std::size_t m_at = 0;
};
using VectorRecords = VectorStream<DigestRecords, DigestRecord>;
using VectorEvents = VectorStream<DigestEvents, DigestEvent>;

// One generated event with its identity's inputs.
struct Generated {
  std::int32_t partition;
  std::int64_t offset;
  std::int64_t ts;
  bool has_id;
  std::string id;
  std::uint64_t payload;
  std::uint64_t semantic;
  std::string key;
};

Event event_of(const Generated& g, std::uint64_t seq) {
  Event e;
  e.topic = "t";
  e.partition = g.partition;
  e.offset = g.offset;
  e.timestamp_ms = g.ts;
  e.seq = seq;
  return e;
}

Identity identity_of(const Generated& g) {
  Identity identity;
  identity.has_id = g.has_id;
  identity.id = g.id;
  identity.id_hash = g.has_id ? hash64(g.id, 7) : 0;
  identity.payload_fingerprint = g.payload;
  identity.semantic_hash = g.semantic;
  identity.no_id_reason = "no id";
  return identity;
}

// A sink that keeps what it is given, per shard.
class KeepingSink final : public DigestSink {
public:
  void add_event(const Event& event, const Identity& identity, std::string_view dedup_key,
                 const RecordState*) override {
    DigestEvent e;
    e.seq = event.seq;
    e.topic = std::string(event.topic);
    e.partition = event.partition;
    e.offset = event.offset;
    e.timestamp_ms = event.timestamp_ms;
    e.has_id = identity.has_id;
    e.event_id = std::string(identity.id);
    e.dedup_key = std::string(dedup_key);
    events.push_back(std::move(e));
  }
  void add_record(const DigestRecord& record) override { records.push_back(record); }
  std::vector<DigestEvent> events;
  std::vector<DigestRecord> records;
};

void expect_same_builder(const FindingBuilder& merged, const FindingBuilder& truth, const std::string& what) {
  EXPECT_EQ(merged.count(), truth.count()) << what;
  EXPECT_EQ(merged.partitions(), truth.partitions()) << what;
  ASSERT_EQ(merged.examples().size(), truth.examples().size()) << what;
  for (std::size_t i = 0; i < truth.examples().size(); ++i) {
    const auto& m = merged.examples()[i];
    const auto& t = truth.examples()[i];
    EXPECT_EQ(m.seq, t.seq) << what << " example " << i;
    EXPECT_EQ(m.event_id, t.event_id) << what << " example " << i;
    EXPECT_EQ(m.partition, t.partition) << what << " example " << i;
    EXPECT_EQ(m.offset, t.offset) << what << " example " << i;
    EXPECT_EQ(m.timestamp_ms, t.timestamp_ms) << what << " example " << i;
    EXPECT_EQ(m.note, t.note) << what << " example " << i;
  }
}

} // namespace

TEST(Shard, EveryPartitionBelongsToExactlyOneShard) {
  for (std::uint32_t n = 1; n <= 9; ++n) {
    for (std::int32_t p = 0; p < 200; ++p) {
      int owners = 0;
      for (std::uint32_t k = 0; k < n; ++k) {
        owners += ShardSpec{k, n}.owns(p) ? 1 : 0;
      }
      EXPECT_EQ(owners, 1) << "partition " << p << " of " << n << " shards";
      EXPECT_TRUE((ShardSpec{static_cast<std::uint32_t>(p) % n, n}.owns(p)));
    }
  }
}

TEST(Shard, KOfNIsParsedAndAnythingElseIsAUsageErrorNamingIt) {
  EXPECT_EQ(parse_shard("0/1").count, 1u);
  EXPECT_EQ(parse_shard("3/4").index, 3u);
  EXPECT_EQ(parse_shard("3/4").count, 4u);
  EXPECT_EQ(parse_shard("127/128").index, 127u);
  for (const char* bad : {"4/4", "1", "-1/2", "a/2", "1/0", "1/", "/2", "1/2/3", " 1/2", "0/129"}) {
    try {
      parse_shard(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("invalid --shard '") + bad + "'"), std::string::npos)
          << e.what();
    }
  }
}

// The merge of N shards' records decides log duplicates, id reuse and semantic duplicates, with
// their partitions and examples, exactly as LogAnalyzer over all events in canonical order: random
// logs with few ids, payloads and semantic keys, so that every rule fires across shards.
TEST(MergeCrossPartition, EqualsLogAnalyzerOverTheWholeLogForAnyNumberOfShards) {
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 40; ++trial) {
    const int partitions = 1 + static_cast<int>(rng() % 6);
    std::vector<Generated> log;
    std::vector<std::int64_t> offsets(partitions, 0);
    for (int i = 0; i < 300; ++i) {
      Generated g;
      g.partition = static_cast<std::int32_t>(rng() % partitions);
      g.offset = offsets[g.partition]++;
      g.ts = 1'700'000'000'000 + static_cast<std::int64_t>(rng() % (20 * 60'000));
      g.has_id = rng() % 12 != 0;
      g.id = "id-" + std::to_string(rng() % 80);
      g.payload = rng() % 3;
      g.semantic = rng() % 25;
      g.key = "key-" + std::to_string(rng() % 90);
      log.push_back(g);
    }
    LogAnalyzerOptions options;
    options.max_examples = 3;
    options.semantic_window_ms = 5 * 60'000;
    LogAnalyzer truth(options);
    for (std::size_t i = 0; i < log.size(); ++i) {
      truth.observe(event_of(log[i], i + 1), identity_of(log[i]));
    }
    for (std::uint32_t n = 1; n <= 4; ++n) {
      std::vector<KeepingSink> sinks(n);
      std::vector<DigestRecorder> recorders;
      for (auto& sink : sinks) {
        recorders.emplace_back(sink);
        recorders.back().set_check_keys(KeyTemplate::Injectivity::No);
      }
      for (std::size_t i = 0; i < log.size(); ++i) {
        auto k = static_cast<std::uint32_t>(log[i].partition) % n;
        recorders[k].observe(event_of(log[i], i + 1), identity_of(log[i]), log[i].key);
      }
      std::vector<std::unique_ptr<DigestRecords>> owned;
      std::vector<std::unique_ptr<DigestEvents>> owned_events;
      std::vector<DigestRecords*> by_id, by_semantic, by_key;
      std::vector<DigestEvents*> events;
      for (std::uint32_t k = 0; k < n; ++k) {
        for (auto [order, list] : {std::pair{DigestOrder::Id, &by_id}, std::pair{DigestOrder::Semantic, &by_semantic},
                                   std::pair{DigestOrder::Key, &by_key}}) {
          auto records = sinks[k].records;
          std::sort(records.begin(), records.end(),
                    [order](const DigestRecord& a, const DigestRecord& b) { return digest_before(a, b, order); });
          owned.push_back(std::make_unique<VectorRecords>(std::move(records)));
          list->push_back(owned.back().get());
        }
        owned_events.push_back(std::make_unique<VectorEvents>(sinks[k].events));
        events.push_back(owned_events.back().get());
      }
      CrossPartitionTally merged = merge_cross_partition(by_id, by_semantic, by_key, events, options);
      std::string what = "trial " + std::to_string(trial) + ", " + std::to_string(n) + " shards: ";
      expect_same_builder(merged.log_duplicate, truth.tally().log_duplicate, what + "log duplicates");
      expect_same_builder(merged.id_reuse, truth.tally().id_reuse, what + "id reuse");
      expect_same_builder(merged.semantic_duplicate, truth.tally().semantic_duplicate, what + "semantic duplicates");
      // Key collisions: the first id rendered to a key owns it; every later event of another id collides.
      std::map<std::string, std::string> owner;
      std::int64_t collisions = 0;
      std::set<std::int32_t> collided;
      for (const auto& g : log) {
        if (!g.has_id) {
          continue;
        }
        auto [it, inserted] = owner.emplace(g.key, g.id);
        if (!inserted && it->second != g.id) {
          ++collisions;
          collided.insert(g.partition);
        }
      }
      EXPECT_EQ(merged.key_collision.count(), collisions) << what;
      EXPECT_EQ(merged.key_collision.partitions(), std::vector<std::int32_t>(collided.begin(), collided.end())) << what;
      if (HasFailure()) {
        return;
      }
    }
  }
}
