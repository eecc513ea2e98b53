#pragma once

#include "core/coverage.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace dedupctl::core {

// Where dedup records live. Abstract so that audits run against Redis, a snapshot file, or an
// in-memory fake in unit tests.
class DedupStore {
public:
  virtual ~DedupStore() = default;
  // The record state of every key, in order, with one round trip per call. Values point into
  // storage the store keeps until the next call. Throws UnreachableError when the store fails.
  virtual void lookup(const std::vector<std::string>& keys, std::vector<RecordState>& out) = 0;
  // "redis", "file", … for the report.
  virtual std::string kind() const = 0;
};

} // namespace dedupctl::core
