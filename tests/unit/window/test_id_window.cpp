// The window structures decide as the guides' code does: a true LRU (a repeat refreshes), and the
// bounded insertion-ordered set of bloom-exact (a repeat does not).
#include "core/util/fingerprint.hpp"
#include "core/window/window.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <list>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dedupctl::core;

namespace {

WindowSpec spec(WindowKind kind, std::uint64_t capacity) {
  WindowSpec s;
  s.kind = kind;
  s.capacity = capacity;
  s.bloom_items = 1'000'000; // a filter far from full: no false positive among a few ids
  s.bloom_fp = 1e-9;
  return s;
}

std::string decide(IdWindow window, const std::vector<std::string>& ids) {
  std::string out;
  for (const auto& id : ids) {
    out += window.seen(id, hash64(id)) ? 'S' : 'A';
  }
  return out;
}

} // namespace

TEST(IdWindow, AnLruRefreshesARepeatAndEvictsTheLeastRecent) {
  // a, b; a again moves to the front; c evicts b (the least recent), not a: a is still held; b comes
  // again: applied. (The insertion-ordered set of bloom-exact, below, gives AASAAA for the same ids.)
  EXPECT_EQ(decide(IdWindow(spec(WindowKind::Lru, 2)), {"a", "b", "a", "c", "a", "b"}), "AASASA");
}

TEST(IdWindow, TheExactSetOfBloomExactEvictsTheOldestInsertWhateverWasRepeated) {
  // a, b; a again (held, not refreshed); c evicts a, the oldest insert; a's "maybe" is not in the
  // set: applied again; b was evicted by a's re-insert: applied again.
  EXPECT_EQ(decide(IdWindow(spec(WindowKind::BloomExact, 2)), {"a", "b", "a", "c", "a", "b"}), "AASAAA");
}

TEST(IdWindow, AnLruBloomCatchesWhatTheLruForgotThroughTheFilter) {
  // a is evicted from the LRU of one by b, but the filter still holds it: skipped.
  EXPECT_EQ(decide(IdWindow(spec(WindowKind::LruBloom, 1)), {"a", "b", "a", "c", "b"}), "AASAS");
}

TEST(IdWindow, AnOverfullFilterSkipsIdsItNeverHad) {
  WindowSpec s = spec(WindowKind::LruBloom, 1);
  s.bloom_items = 1;
  s.bloom_fp = 0.5; // m = 2 bits: full after a few ids
  IdWindow window(s);
  int skipped = 0;
  for (int i = 0; i < 50; ++i) {
    std::string id = "id-" + std::to_string(i);
    skipped += window.seen(id, hash64(id)) ? 1 : 0;
  }
  EXPECT_GT(skipped, 40); // every id is distinct: each skip is a false positive
}

// The windows' fixed arrays against the plainest model of the guides' structures (a std::list
// moved to the front; a std::deque of inserts), over random ids from small alphabets so that hits,
// evictions and the index's deletions all happen often.
TEST(IdWindow, DecidesAsAPlainListAndDequeDoOverRandomIds) {
  std::mt19937 random(62);
  // (40 and 300 hold more ids than the index's first 16 entries: it doubles while ids come in.)
  for (std::uint64_t capacity : {1, 2, 3, 5, 8, 40, 300}) {
    for (int alphabet : {3, 7, 20, 500}) {
      IdWindow lru(spec(WindowKind::Lru, capacity));
      IdWindow exact(spec(WindowKind::BloomExact, capacity));
      std::list<std::string> model_lru;
      std::deque<std::string> model_set;
      for (int step = 0; step < 2000; ++step) {
        std::string id = "k" + std::to_string(random() % static_cast<unsigned>(alphabet));
        auto at = std::find(model_lru.begin(), model_lru.end(), id);
        bool lru_expected = at != model_lru.end();
        if (lru_expected) {
          model_lru.erase(at);
        } else if (model_lru.size() == capacity) {
          model_lru.pop_back();
        }
        model_lru.push_front(id);
        bool exact_expected = std::find(model_set.begin(), model_set.end(), id) != model_set.end();
        if (!exact_expected) {
          model_set.push_back(id);
          if (model_set.size() > capacity) {
            model_set.pop_front();
          }
        }
        ASSERT_EQ(lru.seen(id, hash64(id)), lru_expected) << "lru of " << capacity << ", step " << step;
        ASSERT_EQ(exact.seen(id, hash64(id)), exact_expected) << "bloom-exact of " << capacity << ", step " << step;
      }
    }
  }
}

// A window's arrays hold the ids it has met, not its capacity: a consumer's window of a billion ids
// in each of 64 partitions that meets a few ids in each is a few ids' memory, not 64 × 24 GB.
TEST(IdWindow, AWindowFarLargerThanTheIdsItMeetsHoldsOnlyThoseIds) {
  for (WindowKind kind : {WindowKind::Lru, WindowKind::BloomExact}) {
    WindowSpec s = spec(kind, 4'000'000'000ULL);
    s.bloom_items = 1000;
    IdWindow window(s);
    EXPECT_EQ(decide(window, {"a", "b", "a", "c", "b"}), "AASAS") << to_string(kind);
  }
}

// The index under the windows: against a map, through its growth, with fingerprints that share their
// high half (the tag an entry keeps, so that they share a home and a cluster) and ones that share
// their low half, erased from the middle of clusters as an LRU's victims are.
TEST(SlotIndex, FindsInsertsAndErasesAsAMapDoesThroughGrowthAndClusters) {
  std::mt19937_64 rng(7);
  auto draw = [&]() -> std::uint64_t {
    switch (rng() % 3) {
    case 0:
      return (std::uint64_t{0xABCD0000u + static_cast<std::uint32_t>(rng() % 4)} << 32) | (rng() & 0xFFFFFFFFu);
    case 1:
      return (rng() & 0xFFFFFFFF00000000ULL) | 0x1234u;
    default:
      return rng();
    }
  };
  SlotIndex index;
  std::vector<std::uint64_t> keys;
  std::vector<std::uint32_t> free_slots;
  std::unordered_map<std::uint64_t, std::uint32_t> model;
  std::vector<std::uint64_t> held;
  for (int step = 0; step < 20'000; ++step) {
    if (held.empty() || rng() % 5 < 3) {
      std::uint64_t key = draw();
      if (model.count(key) != 0) {
        continue;
      }
      std::uint32_t slot = 0;
      if (free_slots.empty()) {
        slot = static_cast<std::uint32_t>(keys.size());
        keys.push_back(key);
      } else {
        slot = free_slots.back();
        free_slots.pop_back();
        keys[slot] = key;
      }
      index.insert(key, slot);
      model[key] = slot;
      held.push_back(key);
    } else {
      std::size_t at = rng() % held.size();
      std::uint64_t key = held[at];
      held[at] = held.back();
      held.pop_back();
      std::uint32_t slot = model[key];
      index.erase(key, slot);
      model.erase(key);
      free_slots.push_back(slot);
      keys[slot] = 0; // an erased slot's old fingerprint is not what the index may rely on
    }
    if (step % 97 == 0) {
      for (const auto& [key, slot] : model) {
        ASSERT_EQ(index.find(key, keys), static_cast<std::int64_t>(slot)) << "step " << step;
      }
    }
    std::uint64_t other = draw();
    if (model.count(other) == 0) {
      ASSERT_EQ(index.find(other, keys), -1) << "step " << step;
    }
  }
  EXPECT_GT(model.size(), 3000u); // it grew well past its first 16 entries
}

// The same ids decided with fingerprints that collide in their high half: the window still tells
// them apart by the whole fingerprint, as a list of the ids does.
TEST(IdWindow, FingerprintsSharingTheirHighHalfAreStillDifferentIds) {
  IdWindow window(spec(WindowKind::Lru, 3));
  std::list<std::uint64_t> lru;
  std::mt19937_64 rng(11);
  for (int i = 0; i < 5'000; ++i) {
    std::uint64_t fingerprint = (std::uint64_t{0x5EED} << 32) | (rng() % 6);
    auto it = std::find(lru.begin(), lru.end(), fingerprint);
    bool seen = it != lru.end();
    if (seen) {
      lru.erase(it);
    } else if (lru.size() == 3) {
      lru.pop_back();
    }
    lru.push_front(fingerprint);
    ASSERT_EQ(window.seen("id", fingerprint), seen) << "delivery " << i;
  }
}
