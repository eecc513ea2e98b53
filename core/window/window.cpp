#include "core/window/window.hpp"

namespace dedupctl::core {

IdWindow::IdWindow(const WindowSpec& spec) : m_spec(spec) {
  if (spec.has_bloom()) {
    m_bloom_shape = bloom_with_estimates(spec.bloom_impl, spec.bloom_items, spec.bloom_fp);
    m_bloom.emplace(*m_bloom_shape);
  }
}

bool IdWindow::lru_seen(std::string_view id) {
  auto it = m_lru.find(id);
  if (it == m_lru.end()) {
    return false;
  }
  m_order.splice(m_order.begin(), m_order, it->second);
  return true;
}

void IdWindow::lru_push(std::string_view id) {
  m_order.emplace_front(id);
  m_lru.emplace(m_order.front(), m_order.begin());
  if (m_order.size() > m_spec.capacity) {
    m_lru.erase(m_order.back());
    m_order.pop_back();
  }
}

bool IdWindow::exact_holds(std::string_view id) const { return m_exact.count(id) != 0; }

void IdWindow::exact_insert(std::string_view id) {
  m_inserted.emplace_back(id);
  m_exact.insert(m_inserted.back());
  if (m_inserted.size() > m_spec.capacity) {
    m_exact.erase(m_inserted.front());
    m_inserted.pop_front();
  }
}

bool IdWindow::seen(std::string_view id) {
  switch (m_spec.kind) {
  case WindowKind::Lru:
    if (lru_seen(id)) {
      return true;
    }
    lru_push(id);
    return false;
  case WindowKind::LruBloom: {
    if (lru_seen(id)) {
      return true;
    }
    BloomHashes hashes = m_bloom->hash(id);
    if (m_bloom->test(hashes)) {
      return true; // "probably seen": skipped
    }
    lru_push(id);
    m_bloom->add(hashes);
    return false;
  }
  case WindowKind::BloomExact: {
    BloomHashes hashes = m_bloom->hash(id);
    if (m_bloom->test(hashes) && exact_holds(id)) {
      return true;
    }
    m_bloom->add(hashes);
    exact_insert(id);
    return false;
  }
  case WindowKind::None:
    break;
  }
  return false;
}

} // namespace dedupctl::core
