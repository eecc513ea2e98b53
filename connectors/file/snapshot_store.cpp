#include "connectors/file/snapshot_store.hpp"

#include "connectors/file/text.hpp"
#include "core/util/errors.hpp"
#include "core/util/fingerprint.hpp"

#include <fmt/format.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

namespace dedupctl::connectors::file {

namespace {

// Keys looked up or loaded at once: their index slots, then their records, are prefetched before
// any is probed.
constexpr std::size_t k_group = 32;

} // namespace

SnapshotStore::SnapshotStore(const std::string& path) {
  constexpr std::size_t k_buffer = 1 << 20;
  auto source = std::make_unique<Source>();
  source->buffer = std::make_unique<char[]>(k_buffer);
  auto& in = source->in;
  in.rdbuf()->pubsetbuf(source->buffer.get(), static_cast<std::streamsize>(k_buffer));
  open_snapshot(in, path, m_header, core::parse_snapshot_header);
  m_loaded = std::async(std::launch::async, &SnapshotStore::load, this, std::move(source), path).share();
}

SnapshotStore::~SnapshotStore() {
  if (m_loaded.valid()) {
    m_loaded.wait(); // it writes to this object's members
  }
}

std::size_t SnapshotStore::size() const {
  m_loaded.get();
  return m_count;
}

void SnapshotStore::load(std::unique_ptr<Source> source, const std::string& path) {
  auto& in = source->in;
  std::error_code size_error;
  if (auto size = std::filesystem::file_size(path, size_error); !size_error) {
    m_arena.reserve(size + size / 2);            // a line's tabs and digits against a record's 16 bytes and padding
    m_index = core::FlatHashMap<Ref>(size / 32); // a line is rarely shorter
  }
  std::string line;
  std::string error;
  std::vector<core::SnapshotEntry> entries(k_group);
  std::array<std::uint64_t, k_group> hashes{};
  bool more = true;
  for (std::int64_t number = 1; more;) {
    std::size_t n = 0;
    while (n < k_group && (more = static_cast<bool>(std::getline(in, line)))) {
      ++number;
      if (line.empty()) {
        continue;
      }
      if (!core::parse_snapshot_entry(line, entries[n], error)) {
        throw UsageError(fmt::format("{}:{}: {}", path, number, error));
      }
      hashes[n] = core::hash64(entries[n].key);
      m_index.prefetch(hashes[n]);
      ++n;
    }
    for (std::size_t k = 0; k < n; ++k) {
      if (m_arena.size() / k_align + 1 >= std::numeric_limits<Ref>::max()) {
        throw UsageError(fmt::format("snapshot {} holds more than {} GiB of keys, more than one audit reads; split "
                                     "it with --match",
                                     path, (std::uint64_t{std::numeric_limits<Ref>::max()} * k_align) >> 30));
      }
      add(entries[k], hashes[k]);
    }
  }
  if (in.bad()) {
    throw UsageError(fmt::format("cannot read snapshot {}: {}; check --store file:PATH", path, std::strerror(errno)));
  }
}

SnapshotStore::Head SnapshotStore::head(Ref ref) const {
  Head out;
  std::memcpy(&out, record(ref), sizeof out);
  return out;
}

void SnapshotStore::set_head(Ref ref, const Head& head) {
  std::memcpy(m_arena.data() + (ref - 1) * k_align, &head, sizeof head);
}

std::string_view SnapshotStore::key_of(Ref ref) const { return {record(ref) + sizeof(Head), head(ref).key_size}; }

void SnapshotStore::add(const core::SnapshotEntry& entry, std::uint64_t hash) {
  // Values repeat line after line ("done"): the last one is checked before the index.
  if (m_values.empty() || m_values[m_last_value] != entry.value) {
    auto [value, new_value] = m_value_index.try_emplace(entry.value, static_cast<std::uint32_t>(m_values.size()));
    if (new_value) {
      m_values.push_back(entry.value);
    }
    m_last_value = value->second;
  }
  Head head{entry.pttl_ms.value_or(k_no_expiry), m_last_value, static_cast<std::uint32_t>(entry.key.size())};
  // The constructor refuses a file past Ref's range before it gets here.
  auto ref = static_cast<Ref>(m_arena.size() / k_align + 1);
  bool inserted = false;
  Ref& slot = m_index.find_or_insert(hash, inserted);
  Ref existing = 0;
  if (inserted) {
    slot = ref;
  } else if (key_of(slot) == entry.key) {
    existing = slot;
  } else if (auto [it, new_key] = m_collided.try_emplace(entry.key, ref); !new_key) {
    existing = it->second; // another key has its hash (2^-64)
  }
  if (existing) {
    set_head(existing, Head{head.pttl_ms, head.value, this->head(existing).key_size}); // the later line wins
    return;
  }
  m_arena.append(reinterpret_cast<const char*>(&head), sizeof head);
  m_arena.append(entry.key);
  m_arena.resize((m_arena.size() + k_align - 1) / k_align * k_align, '\0');
  ++m_count;
}

SnapshotStore::Ref SnapshotStore::confirm(Ref slot, std::string_view key) const {
  if (key_of(slot) == key) {
    return slot;
  }
  auto it = m_collided.find(std::string(key)); // another key took this hash (2^-64)
  return it == m_collided.end() ? 0 : it->second;
}

void SnapshotStore::lookup(const std::vector<std::string>& keys, std::vector<core::RecordState>& out) {
  m_loaded.get();
  out.assign(keys.size(), core::RecordState{});
  std::array<std::uint64_t, k_group> hashes{};
  std::array<Ref, k_group> slots{};
  for (std::size_t base = 0; base < keys.size(); base += k_group) {
    std::size_t n = std::min(k_group, keys.size() - base);
    for (std::size_t k = 0; k < n; ++k) {
      hashes[k] = core::hash64(keys[base + k]);
      m_index.prefetch(hashes[k]);
    }
    for (std::size_t k = 0; k < n; ++k) {
      const Ref* slot = m_index.find(hashes[k]);
      slots[k] = slot ? *slot : 0;
      if (slots[k]) {
        __builtin_prefetch(record(slots[k]));
      }
    }
    for (std::size_t k = 0; k < n; ++k) {
      if (!slots[k]) {
        continue;
      }
      Ref found = confirm(slots[k], keys[base + k]);
      if (!found) {
        continue;
      }
      Head record = head(found);
      auto& state = out[base + k];
      state.kind = core::RecordState::Kind::Present;
      if (record.pttl_ms != k_no_expiry) {
        state.pttl_ms = record.pttl_ms;
      }
      state.value = m_values[record.value];
      core::read_record_value(m_layout, state.value, state);
    }
  }
}

} // namespace dedupctl::connectors::file
