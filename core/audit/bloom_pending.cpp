#include "core/audit/bloom_pending.hpp"

#include <fmt/format.h>

namespace dedupctl::core {

std::optional<Finding> BloomPending::finish() const {
  FindingBuilder builder(m_max_examples);
  for (const auto& held : m_held) {
    if (m_consumed.find(held.key_hash) == nullptr) {
      builder.add(held.example.partition, [&] {
        Example e = held.example;
        e.note = "the filter already says seen; no consumed event of the range carries this key: it will be "
                 "dropped when the consumer reaches it";
        return e;
      });
    }
  }
  return builder.build(
      "bloom-false-positive", Severity::Error,
      fmt::format("{} events the group has not consumed yet are already in the Bloom filter although their ids "
                  "were never applied: the consumer will drop them",
                  builder.count()),
      "A Bloom filter's \"maybe\" is not \"seen\". Size the filter for the ids it really holds (BF.INFO gives its "
      "capacity and error rate), or decide a \"maybe\" with an exact lookup before skipping.");
}

} // namespace dedupctl::core
