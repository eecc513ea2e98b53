#include "core/window/window.hpp"

#include <bit>

namespace dedupctl::core {

namespace {

constexpr std::uint32_t k_none = UINT32_MAX;

std::uint64_t entry(std::uint64_t key, std::uint32_t slot) { return (key & 0xFFFFFFFF00000000ULL) | (slot + 1ULL); }
std::uint32_t slot_of(std::uint64_t entry) { return static_cast<std::uint32_t>(entry) - 1; }
bool tag_matches(std::uint64_t entry, std::uint64_t key) { return (entry ^ key) >> 32 == 0; }

} // namespace

SlotIndex::SlotIndex() {
  m_entries.assign(16, 0);
  m_mask = 15;
}

void SlotIndex::grow() {
  std::vector<std::uint64_t> old(m_entries.size() * 2, 0);
  old.swap(m_entries);
  m_mask = m_entries.size() - 1;
  for (std::uint64_t e : old) {
    if (e != 0) {
      std::size_t i = home(e);
      while (m_entries[i] != 0) {
        i = (i + 1) & m_mask;
      }
      m_entries[i] = e;
    }
  }
}

std::int64_t SlotIndex::find(std::uint64_t key, const std::vector<std::uint64_t>& keys) const {
  for (std::size_t i = home(key);; i = (i + 1) & m_mask) {
    std::uint64_t e = m_entries[i];
    if (e == 0) {
      return -1;
    }
    if (tag_matches(e, key) && keys[slot_of(e)] == key) {
      return slot_of(e);
    }
  }
}

void SlotIndex::insert(std::uint64_t key, std::uint32_t slot) {
  if ((m_count + 1) * 2 > m_entries.size()) {
    grow();
  }
  ++m_count;
  std::size_t i = home(key);
  while (m_entries[i] != 0) {
    i = (i + 1) & m_mask;
  }
  m_entries[i] = entry(key, slot);
}

void SlotIndex::erase(std::uint64_t key, std::uint32_t slot) {
  const std::uint64_t wanted = entry(key, slot); // a slot holds one id: its entry is unique
  std::size_t i = home(key);
  for (;; i = (i + 1) & m_mask) {
    std::uint64_t e = m_entries[i];
    if (e == 0) {
      return;
    }
    if (e == wanted) {
      break;
    }
  }
  --m_count;
  // Backward shift: each entry after the hole that may move into it does, until an empty slot.
  for (std::size_t j = (i + 1) & m_mask; m_entries[j] != 0; j = (j + 1) & m_mask) {
    std::size_t h = home(m_entries[j]);
    bool movable = i <= j ? (h <= i || h > j) : (h <= i && h > j);
    if (movable) {
      m_entries[i] = m_entries[j];
      i = j;
    }
  }
  m_entries[i] = 0;
}

IdWindow::IdWindow(const WindowSpec& spec) : m_spec(spec) {
  if (spec.has_bloom()) {
    m_bloom_shape = bloom_with_estimates(spec.bloom_impl, spec.bloom_items, spec.bloom_fp);
    m_bloom.emplace(*m_bloom_shape);
  }
}

bool IdWindow::lru_seen(std::uint64_t key) {
  std::int64_t found = m_index.find(key, m_keys);
  if (found < 0) {
    return false;
  }
  auto slot = static_cast<std::uint32_t>(found);
  if (slot != m_head) { // unlink, then push at the head
    m_next[m_prev[slot]] = m_next[slot];
    if (slot == m_tail) {
      m_tail = m_prev[slot];
    } else {
      m_prev[m_next[slot]] = m_prev[slot];
    }
    m_prev[slot] = k_none;
    m_next[slot] = m_head;
    m_prev[m_head] = slot;
    m_head = slot;
  }
  return true;
}

std::uint32_t IdWindow::take_slot(std::uint32_t victim) {
  if (m_size < m_spec.capacity) { // the arrays grow with the ids held, up to the capacity
    m_keys.push_back(0);
    m_prev.push_back(k_none);
    m_next.push_back(k_none);
    return m_size++;
  }
  m_index.erase(m_keys[victim], victim); // the victim goes; its slot takes the new id
  return victim;
}

void IdWindow::lru_push(std::uint64_t key) {
  bool full = m_size == m_spec.capacity;
  std::uint32_t slot = take_slot(m_tail); // the least recent
  if (full) {
    m_tail = m_prev[slot];
    if (m_tail == k_none) {
      m_head = k_none; // a window of one
    } else {
      m_next[m_tail] = k_none;
    }
  }
  m_keys[slot] = key;
  m_prev[slot] = k_none;
  m_next[slot] = m_head;
  if (m_head == k_none) {
    m_tail = slot;
  } else {
    m_prev[m_head] = slot;
  }
  m_head = slot;
  m_index.insert(key, slot);
}

void IdWindow::exact_insert(std::uint64_t key) {
  bool full = m_size == m_spec.capacity;
  std::uint32_t slot = take_slot(m_oldest); // the oldest insert
  if (full) {
    m_oldest = static_cast<std::uint32_t>((m_oldest + 1) % m_spec.capacity);
  }
  m_keys[slot] = key;
  m_index.insert(key, slot);
}

bool IdWindow::seen(std::string_view id, std::uint64_t fingerprint) {
  if (m_size == m_spec.capacity) { // a new id evicts: its index entry is read beside this one's
    m_index.prefetch(m_keys[m_spec.kind == WindowKind::BloomExact ? m_oldest : m_tail]);
  }
  switch (m_spec.kind) {
  case WindowKind::Lru:
    if (lru_seen(fingerprint)) {
      return true;
    }
    lru_push(fingerprint);
    return false;
  case WindowKind::LruBloom: {
    if (lru_seen(fingerprint)) {
      return true;
    }
    BloomHashes hashes = m_bloom->hash(id);
    if (m_bloom->test(hashes)) {
      return true; // "probably seen": skipped
    }
    lru_push(fingerprint);
    m_bloom->add(hashes);
    return false;
  }
  case WindowKind::BloomExact: {
    BloomHashes hashes = m_bloom->hash(id);
    if (m_bloom->test(hashes) && m_index.find(fingerprint, m_keys) >= 0) {
      return true;
    }
    m_bloom->add(hashes);
    exact_insert(fingerprint);
    return false;
  }
  case WindowKind::None:
    break;
  }
  return false;
}

} // namespace dedupctl::core
