// The window structures decide as the guides' code does: a true LRU (a repeat refreshes), and the
// bounded insertion-ordered set of bloom-exact (a repeat does not).
#include "core/window/window.hpp"

#include <gtest/gtest.h>

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
    out += window.seen(id) ? 'S' : 'A';
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
    skipped += window.seen("id-" + std::to_string(i)) ? 1 : 0;
  }
  EXPECT_GT(skipped, 40); // every id is distinct: each skip is a false positive
}
