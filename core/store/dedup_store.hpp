#pragma once

#include "core/store/record_state.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dedupctl::core {

// Where dedup records live, as an audit or a trace reads them. Abstract because the same audit
// runs against Redis (connectors/redis), a PostgreSQL inbox (connectors/postgres) and a snapshot
// file of either (connectors/file); in unit tests FakeDedupStore (tests/unit/fakes.hpp) stands in.
// What a store says of its keyspace as a whole, for a watcher to notice that records may have gone
// without a lookup telling it: a server that restarted or failed over (another run_id or role), or
// keys that went faster than expiry and eviction explain.
struct KeyspaceProbe {
  std::string incarnation;  // run_id and role of every master, in a fixed order
  std::int64_t keys = 0;    // DBSIZE, summed over masters
  std::int64_t expired = 0; // expired_keys so far
  std::int64_t evicted = 0; // evicted_keys so far
};

class DedupStore {
public:
  virtual ~DedupStore() = default;
  // The record state of every key, in order, with one round trip per call. Values point into
  // storage the store keeps until the next call. Throws UnreachableError when the store fails.
  virtual void lookup(const std::vector<std::string>& keys, std::vector<RecordState>& out) = 0;
  // "redis", "file", … for the report.
  virtual std::string kind() const = 0;
  // The servers behind it when that is more than the URI says (a cluster's masters, the master a
  // sentinel named); empty otherwise.
  virtual std::string topology() const { return ""; }
  // The keyspace as a whole (one round trip a master); nullopt where the store cannot tell (an
  // inbox, a file). Throws UnreachableError when the store fails.
  virtual std::optional<KeyspaceProbe> probe() { return std::nullopt; }
  // Waits until every record can be answered (a snapshot file loads beside the reading) and throws
  // UsageError for a file found bad meanwhile: a command calls it before its report goes out, so
  // that a bad file is exit 2 however few keys were looked up.
  virtual void ready() {}
};

// An inbox table as a DedupStore: the keys looked up are event ids; a present row carries its
// processed_at (the coverage rules count the inbox retention from it) and its status (if any) as
// the value. Abstract because an audit reads the live table (connectors/postgres) or an inbox
// snapshot file (connectors/file) the same way, with the same findings of its schema and contents.
class InboxStore : public DedupStore {
public:
  // now - the oldest processed_at of the consumer's rows: what the cleanup job keeps at least.
  virtual std::optional<std::int64_t> oldest_row_age_ms(std::int64_t now_ms) = 0;
  // Whether a primary key or unique index covers (id) or (consumer, id); nullopt when not known
  // (a snapshot file).
  virtual std::optional<bool> has_unique_constraint() = 0;
  // Event ids with rows under several consumers (only meaningful without --consumer).
  virtual std::int64_t ids_under_several_consumers() = 0;
  // How the lookups are done, for the report's settings ("batched = ANY", "COPY into memory", "file").
  virtual std::string lookup_method() const = 0;
  // What the lookups cost so far, for -v and the benchmark: rows loaded and ids looked up, with the
  // wall time of each (the load runs beside the log read; lookups are what the audit waited for).
  virtual std::string lookup_stats() const { return ""; }
  // The row of `id` (the consumer's, with --consumer) as the library wrote it, each column as text,
  // for trace's record.fields; empty where only the rules' columns are known (a snapshot file).
  virtual std::vector<std::pair<std::string, std::string>> row_fields(const std::string& id) {
    (void)id;
    return {};
  }
};

} // namespace dedupctl::core
