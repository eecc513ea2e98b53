// The Bloom filters against the libraries' own answers: tests/unit/data/bloom/ was written by the
// Go bits-and-blooms filter and by Guava's (tests/support/window/vectors), each overfilled so that
// many probes are false positives. The same adds here must say "maybe" for exactly the same probes.
#include "core/util/errors.hpp"
#include "core/window/bloom.hpp"
#include "tests/unit/test_data.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
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

std::set<std::string> probed(const BloomFilter& filter) {
  std::set<std::string> out;
  for (int i = 0; i < 2000; ++i) {
    std::string probe = "probe-" + std::to_string(i);
    if (filter.test(probe)) {
      out.insert(probe);
    }
  }
  return out;
}

std::set<std::string> maybes(BloomImpl impl) {
  BloomFilter filter(bloom_with_estimates(impl, 100, 0.05));
  for (int i = 0; i < 200; ++i) {
    filter.add("id-" + std::to_string(i));
  }
  return probed(filter);
}

// The library's own dump of the same filter (tests/support/window/vectors: WriteTo, writeTo).
std::string dump(const std::string& name) {
  std::ifstream in(std::string(DEDUPCTL_TEST_DATA) + "/bloom/" + name, std::ios::binary);
  EXPECT_TRUE(in) << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
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

// Read from the library's own dump, the filter says maybe for the probes the library's does, and has
// the shape the library gave it.
TEST(Bloom, EachLibrarysDumpReadsAsTheFilterItWrote) {
  BloomFilter go = read_bloom_dump(BloomImpl::BitsAndBlooms, dump("bits-and-blooms.dump"), "go.dump");
  EXPECT_EQ(go.shape().bits, 624u);
  EXPECT_EQ(go.shape().hashes, 5u);
  EXPECT_EQ(probed(go), listed("bits-and-blooms.txt"));
  BloomFilter guava = read_bloom_dump(BloomImpl::Guava, dump("guava.dump"), "guava.dump");
  EXPECT_EQ(guava.shape().bits, bloom_with_estimates(BloomImpl::Guava, 100, 0.05).bits);
  EXPECT_EQ(probed(guava), listed("guava.txt"));
}

TEST(Bloom, ADumpOfAnotherLibraryOrCutShortIsAUsageErrorNamingIt) {
  std::string go = dump("bits-and-blooms.dump");
  std::string guava = dump("guava.dump");
  struct Case {
    BloomImpl impl;
    std::string bytes;
    const char* said;
  };
  std::string mitz32 = guava;
  mitz32[0] = 0;
  const Case cases[] = {
      {BloomImpl::Guava, go, "f.dump: not a Guava BloomFilter.writeTo filter's dump"},
      {BloomImpl::BitsAndBlooms, guava, "f.dump: not a bits-and-blooms WriteTo filter's dump"},
      {BloomImpl::BitsAndBlooms, go.substr(0, go.size() - 1), "not a bits-and-blooms WriteTo filter's dump"},
      {BloomImpl::Guava, guava + "x", "not a Guava BloomFilter.writeTo filter's dump"},
      {BloomImpl::Guava, "", "(0 bytes)"},
      {BloomImpl::Guava, mitz32, "MURMUR128_MITZ_32"},
  };
  for (const auto& c : cases) {
    try {
      read_bloom_dump(c.impl, c.bytes, "f.dump");
      ADD_FAILURE() << "read " << c.said;
    } catch (const dedupctl::UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(c.said), std::string::npos) << e.what();
    }
  }
}
