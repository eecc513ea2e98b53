#include "connectors/file/bloom_file_store.hpp"

#include "connectors/file/text.hpp"
#include "core/util/errors.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

namespace dedupctl::connectors::file {

namespace {

constexpr std::string_view k_layout = "redis-bloom";

// Every key present, with `pttl_ms`, where the filter says maybe; absent (exact) where it does not.
template <typename Maybe>
void lookup_filter(const std::vector<std::string>& keys, std::vector<core::RecordState>& out,
                   std::optional<std::int64_t> pttl_ms, const Maybe& maybe) {
  out.assign(keys.size(), core::RecordState{});
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (maybe(keys[i])) {
      out[i] = core::present_record(pttl_ms, "");
    }
  }
}

} // namespace

bool BloomSnapshotStore::is_bloom_snapshot(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  core::SnapshotHeader header;
  std::string error;
  return in && std::getline(in, line) && core::parse_snapshot_header(line, header, error) && header.layout == k_layout;
}

BloomSnapshotStore::BloomSnapshotStore(const std::string& path) {
  std::ifstream in;
  open_snapshot(in, path, m_header, core::parse_snapshot_header);
  std::string line;
  std::string error;
  core::SnapshotEntry entry;
  for (std::size_t number = 2; std::getline(in, line); ++number) {
    std::string where = fmt::format("{}:{}", path, number);
    if (!core::parse_snapshot_entry(line, entry, error)) {
      throw UsageError(fmt::format("{}: {}", where, error));
    }
    std::int64_t iterator = 0;
    auto [end, ec] = std::from_chars(entry.key.data(), entry.key.data() + entry.key.size(), iterator);
    if (ec != std::errc{} || end != entry.key.data() + entry.key.size()) {
      throw UsageError(fmt::format("{}: '{}' is not a BF.SCANDUMP iterator; a filter's snapshot keys each chunk by "
                                   "its iterator",
                                   where, entry.key));
    }
    if (!m_chain) {
      m_chain.emplace(entry.value, where);
      m_pttl_ms = entry.pttl_ms;
    } else {
      m_chain->load_chunk(iterator, entry.value, where);
    }
  }
  if (in.bad()) {
    throw UsageError(fmt::format("cannot read snapshot {}: {}", path, std::strerror(errno)));
  }
  if (!m_chain || !m_chain->complete()) {
    throw UsageError(fmt::format("{}: the filter's snapshot is cut short ({}); take it again with dedupctl snapshot",
                                 path, m_chain ? "chunks are missing" : "no header chunk"));
  }
}

void BloomSnapshotStore::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  lookup_filter(keys, out, m_pttl_ms, [&](const std::string& key) { return m_chain->contains(key); });
}

BloomDumpStore::BloomDumpStore(const std::string& path, core::BloomImpl impl) {
  m_filter.emplace(core::read_bloom_dump(impl, read_text_file(path, "--store file:"), path));
  m_written_at_ms = mtime_ms(path);
}

void BloomDumpStore::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  lookup_filter(keys, out, std::nullopt, [&](const std::string& key) { return m_filter->test(key); });
}

} // namespace dedupctl::connectors::file
