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
