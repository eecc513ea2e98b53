#pragma once

#include "core/store/dedup_store.hpp"
#include "core/store/layout.hpp"
#include "core/store/snapshot_line.hpp"
#include "core/util/flat_map.hpp"

#include <climits>
#include <cstdint>
#include <fstream>
#include <future>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dedupctl::connectors::file {

// A snapshot file as a dedup store: the records as they were when it was taken, so an audit
// against it must use header().taken_at_ms as now. Loads the whole file (keys and value prefixes)
// into a flat index: a record is 16 bytes and its key in one arena, so that a lookup costs two
// cache misses (the index slot, the record with its key), and every hit compares the key. Lookups
// and loads go in groups whose slots and records are prefetched before they are probed. A key
// given twice takes its last line.
//
// The records load on a thread of their own, beside whatever the caller does next (an offline
// audit reads the log meanwhile): the constructor reads and checks the header only, and the first
// lookup() or size() waits for the rest.
class SnapshotStore final : public core::DedupStore {
public:
  // Throws UsageError naming the file when it cannot be opened or its header is not a snapshot's.
  explicit SnapshotStore(const std::string& path);
  ~SnapshotStore() override;
  SnapshotStore(const SnapshotStore&) = delete;
  SnapshotStore& operator=(const SnapshotStore&) = delete;

  // Both throw UsageError naming the file and line when a record cannot be parsed (every time).
  void lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) override;
  std::size_t size() const;
  void ready() override { m_loaded.get(); }
  std::string kind() const override { return "file"; }
  const core::SnapshotHeader& header() const { return m_header; }
  // How lookups read the values: the layout the snapshot was taken with (header().layout), which
  // the caller checks against its own --layout.
  void read_with(core::RecordLayout layout) { m_layout = std::move(layout); }

private:
  // The head of a record in m_arena, its key's bytes right after it, the next record at the next
  // multiple of 8 bytes. Values repeat ("done"), so a record names its value in m_values.
  struct Head {
    std::int64_t pttl_ms = k_no_expiry;
    std::uint32_t value = 0;
    std::uint32_t key_size = 0;
  };
  static constexpr std::int64_t k_no_expiry = INT64_MIN;
  static constexpr std::size_t k_align = 8;
  // Records are named by their offset in m_arena / k_align, plus 1 (0: none) in the index.
  using Ref = std::uint32_t;

  // The open file, its buffer declared first so that it outlives the stream.
  struct Source {
    std::unique_ptr<char[]> buffer;
    std::ifstream in;
  };
  // Reads the records after the header (on the loading thread).
  void load(std::unique_ptr<Source> source, const std::string& path);
  void add(const core::SnapshotEntry& entry, std::uint64_t hash);
  // The record of `key` whose hash found `slot`: that one, or none when the slot holds another key.
  Ref confirm(Ref slot, std::string_view key) const;
  Head head(Ref ref) const;
  void set_head(Ref ref, const Head& head);
  std::string_view key_of(Ref ref) const;
  const char* record(Ref ref) const { return m_arena.data() + (ref - 1) * k_align; }

  core::SnapshotHeader m_header;
  std::string m_arena;
  std::size_t m_count = 0;
  std::vector<std::string> m_values;
  std::unordered_map<std::string, std::uint32_t> m_value_index;
  std::uint32_t m_last_value = 0;
  // Key hash → Ref; keys whose hash another key took (2^-64 each) go to m_collided.
  core::FlatHashMap<Ref> m_index;
  std::unordered_map<std::string, Ref> m_collided;
  // Ready once the records are loaded; holds the UsageError of a bad line.
  std::shared_future<void> m_loaded;
  core::RecordLayout m_layout;
};

} // namespace dedupctl::connectors::file
