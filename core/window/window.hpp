#pragma once

#include "core/store/layout.hpp"
#include "core/window/bloom.hpp"

#include <cstdint>
#include <deque>
#include <list>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

// An in-process window of ids as a consumer keeps it (docs/windows.md), deciding each delivery as
// the consumer's own code does:
// - lru: an id in the LRU is a duplicate and moves to the front (container/list's MoveToFront);
//   another is applied and pushed to the front, the back evicted past `capacity`;
// - lru-bloom: the LRU first; an id not in it is a duplicate when the Bloom says "maybe"; otherwise
//   applied, pushed to the LRU and added to the Bloom;
// - bloom-exact: an id the Bloom has not seen is applied and added to both; a "maybe" is a duplicate
//   when the bounded set holds the id (a repeat does not refresh it), else applied and inserted, the
//   oldest insert evicted past `capacity`.
namespace dedupctl::core {

class IdWindow {
public:
  explicit IdWindow(const WindowSpec& spec);

  // The consumer's answer for one delivery of `id`: true = skipped as seen, false = applied. The
  // window changes as the consumer's does.
  bool seen(std::string_view id);

  const std::optional<BloomShape>& bloom_shape() const { return m_bloom_shape; }

private:
  bool lru_seen(std::string_view id);
  void lru_push(std::string_view id);
  bool exact_holds(std::string_view id) const;
  void exact_insert(std::string_view id);

  WindowSpec m_spec;
  std::optional<BloomShape> m_bloom_shape;
  std::optional<BloomFilter> m_bloom;
  // The LRU: the ids, most recent at the front, and where each is in the list.
  std::list<std::string> m_order;
  std::unordered_map<std::string_view, std::list<std::string>::iterator> m_lru;
  // bloom-exact's bounded set: insertion order, oldest at the front.
  std::deque<std::string> m_inserted;
  std::unordered_set<std::string_view> m_exact;
};

} // namespace dedupctl::core
