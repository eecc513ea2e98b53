// The Bloom filters against the libraries' own answers: tests/unit/data/bloom/ was written by the
// Go bits-and-blooms filter and by Guava's (tests/support/window/vectors), each overfilled so that
// many probes are false positives. The same adds here must say "maybe" for exactly the same probes.
#include "core/window/bloom.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

using namespace dedupctl::core;

namespace {

// The probes a vector file lists (its comment and "m=… k=…" lines skipped).
std::set<std::string> listed(const std::string& name) {
  std::ifstream in(std::string(DEDUPCTL_TEST_DATA) + "/bloom/" + name);
  EXPECT_TRUE(in) << name;
  std::set<std::string> out;
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("probe-")) {
      out.insert(line);
    }
  }
  return out;
}

std::set<std::string> maybes(BloomImpl impl) {
  BloomFilter filter(bloom_with_estimates(impl, 100, 0.05));
  for (int i = 0; i < 200; ++i) {
    filter.add("id-" + std::to_string(i));
  }
  std::set<std::string> out;
  for (int i = 0; i < 2000; ++i) {
    std::string probe = "probe-" + std::to_string(i);
    if (filter.test(probe)) {
      out.insert(probe);
    }
  }
  return out;
}

} // namespace

TEST(Bloom, SizedAsTheLibrariesSizeThem) {
  // bits-and-blooms: m = ceil(-n ln p / ln²2), k = ceil(ln2 m / n); its vectors file says m=624 k=5.
  BloomShape go = bloom_with_estimates(BloomImpl::BitsAndBlooms, 100, 0.05);
  EXPECT_EQ(go.bits, 624u);
  EXPECT_EQ(go.hashes, 5u);
  BloomShape go_1k = bloom_with_estimates(BloomImpl::BitsAndBlooms, 1000, 0.01);
  EXPECT_EQ(go_1k.bits, 9586u); // window-consumer vectors --bloom-items 1000 --bloom-fp 0.01: m=9586 k=7
  EXPECT_EQ(go_1k.hashes, 7u);
  // Guava: (long)(-n ln p / ln²2) = 9585 bits, held in 150 longs, all of whose 9600 bits it indexes;
  // k = round(-ln p / ln 2).
  BloomShape guava = bloom_with_estimates(BloomImpl::Guava, 1000, 0.01);
  EXPECT_EQ(guava.bits, 9600u);
  EXPECT_EQ(guava.hashes, 7u);
}

TEST(Bloom, BitsAndBloomsSaysMaybeForTheProbesItsOwnFilterDoes) {
  auto expected = listed("bits-and-blooms.txt");
  EXPECT_GT(expected.size(), 100u); // overfilled: a vector that exercises false positives
  EXPECT_EQ(maybes(BloomImpl::BitsAndBlooms), expected);
}

TEST(Bloom, GuavaSaysMaybeForTheProbesItsOwnFilterDoes) {
  auto expected = listed("guava.txt");
  EXPECT_GT(expected.size(), 100u);
  EXPECT_EQ(maybes(BloomImpl::Guava), expected);
}

TEST(Bloom, NoFalseNegatives) {
  for (auto impl : {BloomImpl::BitsAndBlooms, BloomImpl::Guava}) {
    BloomFilter filter(bloom_with_estimates(impl, 10, 0.01));
    for (int i = 0; i < 1000; ++i) {
      filter.add("x" + std::to_string(i));
    }
    for (int i = 0; i < 1000; ++i) {
      EXPECT_TRUE(filter.test("x" + std::to_string(i)));
    }
  }
}
