#pragma once

#include "core/discover/discover.hpp"
#include "core/event.hpp"
#include "core/identity/identify.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dedupctl::commands {

// What discover asks of a store. Abstract because the Redis connector answers it, and in unit tests
// a table of keys does (pipeline/test_discover.cpp).
class DiscoverStore {
public:
  virtual ~DiscoverStore() = default;
  // Up to `limit` keys with their types (SCAN with a bound, never KEYS).
  virtual std::vector<core::SampledKey> sample_keys(std::size_t limit) = 0;
  // How many of `keys` (members, for a one-key layout, of the collection as the server names it)
  // hold a record under `layout`.
  virtual std::int64_t count_found(const core::RecordLayout& layout, const std::string& collection,
                                   const std::vector<std::string>& keys) = 0;
};

// What discover asks of a PostgreSQL database. Abstract as above (pipeline/test_discover.cpp).
class InboxDiscoverStore {
public:
  virtual ~InboxDiscoverStore() = default;
  // Up to `limit` tables with their columns (the catalog, never the rows).
  virtual std::vector<core::TableColumns> tables(std::size_t limit) = 0;
  // How many of `ids` have a row in the candidate's table, read as an audit with its layout reads it;
  // `consumer` receives the consumer most of those rows are scoped to ("" without a consumer column).
  // Throws UsageError when the layout cannot read the table (a time column that is no time): the
  // candidate is skipped and the reason kept (DiscoverResult::skipped), not the whole run stopped.
  virtual std::int64_t count_found(const core::LayoutCandidate& candidate, const std::vector<std::string>& ids,
                                   std::string& consumer) = 0;
};

struct DiscoverRequest {
  core::IdentifyOptions identify = core::default_identify_options();
  std::size_t sample = 200;       // distinct event ids
  std::size_t scan_limit = 10000; // keys
};

struct DiscoverResult {
  std::vector<std::string> ids; // the sampled event ids, distinct, in log order
  std::int64_t keys_sampled = 0;
  std::vector<core::LayoutCandidate> candidates; // found > 0, most found first
  std::vector<std::string> tried;                // every candidate looked up, for "nothing matched"
  std::vector<std::string> skipped; // tables a candidate could not read (a column of another type), and why
};

// Reads distinct ids until `sample` (or the range's end), samples the store's keys, and looks every
// candidate's keys up: a candidate is kept when the store holds records for some sampled ids.
DiscoverResult run_discover(const DiscoverRequest& request, core::EventSource& source, DiscoverStore& store);
// The same over a database: the tables whose columns fit an inbox layout, each looked up with the
// sampled ids (scan_limit bounds the tables read from the catalog).
DiscoverResult run_discover(const DiscoverRequest& request, core::EventSource& source, InboxDiscoverStore& store);

} // namespace dedupctl::commands
