#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace dedupctl::core {

// A monotonic byte arena: copies are stable until reset(), and reset() keeps the blocks for
// reuse. Batches keep the bytes they own here (decoded kcat strings, ids unescaped from JSON) so
// that events can stay views.
class Arena {
public:
  explicit Arena(std::size_t block_size = 64 * 1024) : m_block_size(block_size) {}

  std::string_view copy(std::string_view bytes) {
    if (bytes.empty()) {
      return {};
    }
    char* dst = allocate(bytes.size());
    std::memcpy(dst, bytes.data(), bytes.size());
    return {dst, bytes.size()};
  }

  char* allocate(std::size_t size) {
    while (m_current < m_blocks.size() && m_used + size > m_blocks[m_current].size) {
      ++m_current;
      m_used = 0;
    }
    if (m_current == m_blocks.size()) {
      std::size_t block = std::max(m_block_size, size);
      m_blocks.push_back(Block{std::make_unique<char[]>(block), block});
      m_used = 0;
    }
    char* out = m_blocks[m_current].data.get() + m_used;
    m_used += size;
    return out;
  }

  void reset() {
    m_current = 0;
    m_used = 0;
  }

private:
  struct Block {
    std::unique_ptr<char[]> data;
    std::size_t size;
  };
  std::size_t m_block_size;
  std::vector<Block> m_blocks;
  std::size_t m_current = 0;
  std::size_t m_used = 0;
};

} // namespace dedupctl::core
