#pragma once

#include "core/store/dedup_store.hpp"

// An in-process window as the audit's store (memory: with a window layout): it holds nothing once the
// consumer restarts, rebalances or seeks, so every lookup is absent; what the window did while it
// ran is core::WindowAnalyzer's, over the log.
namespace dedupctl::core {

class WindowStore final : public DedupStore {
public:
  void lookup(const std::vector<std::string>& keys, std::vector<RecordState>& out) override {
    out.assign(keys.size(), RecordState{});
  }
  std::string kind() const override { return "memory"; }
};

} // namespace dedupctl::core
