#pragma once

#include "core/store/dedup_store.hpp"
#include "core/store/layout.hpp"
#include "core/store/snapshot_line.hpp"
#include "core/window/bloom.hpp"
#include "core/window/redis_bloom.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dedupctl::connectors::file {

// A Bloom filter's snapshot (dedupctl snapshot --layout redis-bloom: its BF.SCANDUMP chunks, one a
// line keyed by the iterator) as a dedup store: the filter rebuilt with RedisBloom's own layout and
// hashing (core::RedisBloomChain), so that each lookup answers as BF.MEXISTS did when the snapshot
// was taken. A "maybe" is present, with the filter key's remaining TTL; absent is exact.
class BloomSnapshotStore final : public core::DedupStore {
public:
  // Whether `path` is a snapshot taken with --layout redis-bloom (its header says so).
  static bool is_bloom_snapshot(const std::string& path);
  // Reads and rebuilds the whole filter; throws UsageError naming the file and line when it cannot
  // be read, a chunk is bad, or a chunk is missing.
  explicit BloomSnapshotStore(const std::string& path);

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override;
  std::string kind() const override { return "file"; }
  const core::SnapshotHeader& header() const { return m_header; }
  const core::RedisBloomChain& filter() const { return *m_chain; }

private:
  core::SnapshotHeader m_header;
  std::optional<core::RedisBloomChain> m_chain;
  std::optional<std::int64_t> m_pttl_ms; // the filter key's, as of the snapshot
};

// A Bloom filter a library wrote to a file (bits-and-blooms' WriteTo, Guava's writeTo: --layout
// bloom) as a dedup store: "maybe" is present, absent is exact; no record expires.
class BloomDumpStore final : public core::DedupStore {
public:
  // Reads the whole file; throws UsageError naming it when it cannot be read or is not `impl`'s dump.
  BloomDumpStore(const std::string& path, core::BloomImpl impl);

  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override;
  std::string kind() const override { return "file"; }
  const core::BloomFilter& filter() const { return *m_filter; }
  std::int64_t written_at_ms() const { return m_written_at_ms; } // the file's modification time

private:
  std::optional<core::BloomFilter> m_filter;
  std::int64_t m_written_at_ms = 0;
};

} // namespace dedupctl::connectors::file
