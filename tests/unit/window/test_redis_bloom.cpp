// RedisBloom's filter rebuilt from its BF.SCANDUMP against RedisBloom's own answers:
// tests/unit/data/bloom/redisbloom.txt was written by the module (tests/support/redisbloom/vectors):
// a filter of three links, 400 ids, and BF.MEXISTS's answer for them and for 2200 probes never
// added, of 2 to 20 bytes (every tail length of MurmurHash64A's 8-byte words). The rebuilt filter
// must answer each exactly so, false positives included.
#include "core/util/errors.hpp"
#include "core/window/redis_bloom.hpp"
#include "tests/unit/test_data.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

using namespace dedupctl;
using namespace dedupctl::core;

namespace {

struct Vectors {
  std::vector<std::pair<std::int64_t, std::string>> chunks; // the header first
  std::vector<std::pair<std::string, bool>> answers;
};

std::string unhex(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  }
  return out;
}

Vectors vectors() {
  std::ifstream in(std::string(DEDUPCTL_TEST_DATA) + "/bloom/redisbloom.txt");
  EXPECT_TRUE(in);
  Vectors out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first == "chunk") {
      std::int64_t iterator = 0;
      std::string hex;
      fields >> iterator >> hex;
      out.chunks.emplace_back(iterator, unhex(hex));
    } else if (!first.empty() && first[0] != '#') {
      int answer = 0;
      fields >> answer;
      out.answers.emplace_back(first, answer == 1);
    }
  }
  return out;
}

RedisBloomChain rebuilt(const Vectors& v) {
  RedisBloomChain chain(v.chunks.at(0).second, "f");
  for (std::size_t i = 1; i < v.chunks.size(); ++i) {
    chain.load_chunk(v.chunks[i].first, v.chunks[i].second, "f");
  }
  return chain;
}

} // namespace

TEST(RedisBloom, ARebuiltFilterAnswersEveryProbeAsRedisBloomDid) {
  Vectors v = vectors();
  ASSERT_GT(v.chunks.size(), 1U);
  RedisBloomChain chain = rebuilt(v);
  EXPECT_TRUE(chain.complete());
  EXPECT_EQ(chain.links(), 3U);
  EXPECT_EQ(chain.items(), 389U);    // BF.INFO's "items inserted" (the file's header): 11 of the 400 were maybes
  EXPECT_EQ(chain.capacity(), 700U); // and its capacity
  int maybes = 0;
  int mismatches = 0;
  for (const auto& [id, answer] : v.answers) {
    bool got = chain.contains(id);
    mismatches += got != answer ? 1 : 0;
    maybes += !id.starts_with("id-") && answer ? 1 : 0;
    if (id.starts_with("id-")) {
      EXPECT_TRUE(got) << id; // no false negatives
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_GT(maybes, 0) << "the vectors hold no false positive: they test nothing of the hashing";
}

TEST(RedisBloom, AChunkMissingLeavesTheFilterIncomplete) {
  Vectors v = vectors();
  RedisBloomChain chain(v.chunks.at(0).second, "f");
  EXPECT_FALSE(chain.complete());
}

TEST(RedisBloom, AChunkOutOfOrderOrPastTheLinksIsAUsageError) {
  Vectors v = vectors();
  ASSERT_GT(v.chunks.size(), 1U);
  RedisBloomChain chain(v.chunks.at(0).second, "snap.txt");
  const auto& [iterator, data] = v.chunks.back();
  if (v.chunks.size() > 2) {
    EXPECT_THROW(chain.load_chunk(iterator, data, "snap.txt"), UsageError); // the first link is not in yet
  }
  EXPECT_THROW(chain.load_chunk(iterator + 1'000'000, data, "snap.txt"), UsageError);
  EXPECT_THROW(chain.load_chunk(0, data, "snap.txt"), UsageError);
}

TEST(RedisBloom, AHeaderThatIsNotRedisBloomsIsAUsageErrorNamingTheInput) {
  Vectors v = vectors();
  std::string header = v.chunks.at(0).second;
  for (std::string bad : {std::string("short"), header.substr(0, header.size() - 1), header + "x"}) {
    try {
      RedisBloomChain chain(bad, "snap.txt");
      ADD_FAILURE() << "accepted a header of " << bad.size() << " bytes";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("snap.txt: not a RedisBloom filter's BF.SCANDUMP header"), std::string::npos)
          << e.what();
    }
  }
  std::string no_force64 = header;
  no_force64[12] = static_cast<char>(no_force64[12] & ~4); // options without BLOOM_OPT_FORCE64
  try {
    RedisBloomChain chain(no_force64, "snap.txt");
    ADD_FAILURE() << "accepted a filter hashed with 32-bit MurmurHash2";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("32-bit MurmurHash2"), std::string::npos) << e.what();
  }
}
