#pragma once

#include "core/check/check_rules.hpp"
#include "core/discover/discover.hpp"
#include "core/replay/repair.hpp"
#include "core/replay/replay.hpp"
#include "core/store/dedup_store.hpp"
#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"
#include "core/util/time.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

// Redis through hiredis, which only connectors/redis/ includes (connection.hpp and the .cpp files).
namespace dedupctl::connectors::redis {

struct RedisSettings {
  core::StoreUri uri;
  // Where the password comes from when the URI has none: a file read again and a command run again
  // at every connection (a token that rotates: Azure Entra, ElastiCache IAM). At most one of them.
  std::string password_file;
  std::string password_command;
  std::int64_t timeout_ms = core::k_default_timeout_ms; // connect and every command
  // How the records are shaped (core/store/layout): a key per id read with PTTL and MGET (the whole
  // value for a JSON layout), or members of one collection read with HMGET, SMISMEMBER or ZMSCORE.
  core::RecordLayout layout;
  std::string collection; // one-key layouts: the key, as the server holds it
  const std::atomic<bool>* stop = nullptr;
  std::string flag = "--store"; // the flag that named the server, for the errors (--effects)
};

// Lookups in pipelined batches: a PTTL per key and one MGET of the batch (values cut at 64 bytes),
// one round trip a batch. A Redis Cluster (redis+cluster://, or a node given as redis://) gets a
// PTTL and a GET a key, routed by slot, a pipeline per master, all masters at once; the
// sentinels of redis+sentinel:// name the server.
// Connects (AUTH, SELECT) on creation. Every failure is an UnreachableError naming the server
// (password redacted) and the cause: refused, timed out, closed, wrong password, LOADING.
std::unique_ptr<core::DedupStore> open_store(const RedisSettings& settings);

// How a replay's claim asks. Auto sends SET key processing:<run> NX PX lease GET, one command a key
// that also answers what the key held (Redis 7 and later), and falls back to the pair below for
// good when the server refuses that form with a syntax error (which runs none of the batch).
// SetThenGet always sends SET … NX PX … and then GET key.
enum class ClaimForm { Auto, SetThenGet };

// The placement a replay routes through: a claim per key as above, a batch in one round trip; then
// SET key done PX ttl (no PX when the TTL is none) after delivery, or DEL after a failed one. A key
// holding another type than a string is a record that exists (Done).
// A JSON layout (settings.layout: Powertools) writes the library's own records instead: the claim
// {"status":"INPROGRESS","expiration":…,"in_progress_expiration":…} with SET NX PX ttl, judges a record
// found as the library does (core::claim_found), takes expired and orphaned records over as the library
// does (SET KEY:lock True EX min(10 s, ttl) NX, then SET KEY claim PX ttl), and settles with the
// completed record (SET PX ttl) or DEL. `now_ms` (the wall clock when empty) dates the records.
std::unique_ptr<core::ReplayPlacement> open_replay_placement(const RedisSettings& settings, const core::Span& ttl,
                                                             std::int64_t lease_ms,
                                                             std::vector<std::string> in_progress_values,
                                                             ClaimForm form = ClaimForm::Auto,
                                                             std::function<std::int64_t()> now_ms = {});

// replay --repair-lost's access to the records: each read whole (PTTL and GET a key, or HGET of a
// hash's field), and released with a script that deletes it only while it still holds that value
// (EVAL, one a key, routed by slot). String keys and fields of one hash (spring-hash).
std::unique_ptr<core::RecordRelease> open_record_release(const RedisSettings& settings);

struct SnapshotRecord {
  std::string key;
  std::optional<std::int64_t> pttl_ms; // nullopt: no expiry
  std::string value;                   // the first 64 bytes; a Bloom filter's chunk whole
};

// SCAN MATCH pattern COUNT n (never KEYS) on every master, with PTTL and the value's first bytes
// per key (a one-key layout: its collection's members; a Bloom filter: its BF.SCANDUMP chunks, each
// keyed by the iterator returned beside it); calls `each` per live record and `progress` with the keys seen so far.
// Returns the time the scan started (remaining TTLs are adjusted to it) and the nodes scanned.
struct ScanResult {
  std::int64_t started_ms = 0;
  std::vector<std::string> nodes;
};
ScanResult scan_records(const RedisSettings& settings, const std::string& match,
                        const std::function<void(const SnapshotRecord&)>& each,
                        const std::function<void(std::int64_t)>& progress);

// What BF.INFO says of the Bloom filter at settings.collection (RedisBloom, Redis 8, valkey-bloom), for
// the audit's note; nullopt when the key holds none (UsageError for a key of another type, as a
// lookup's).
struct BloomInfo {
  std::int64_t capacity = 0;
  std::int64_t items = 0;
  std::int64_t filters = 0;
  std::int64_t expansion = 0; // 0: a filter that does not scale (NONSCALING)
};
std::optional<BloomInfo> bloom_info(const RedisSettings& settings);

// Up to `limit` keys with their types, for discover: SCAN (COUNT 1000, never KEYS) on every master
// in turn, then a TYPE a key routed by slot, pipelined.
std::vector<core::SampledKey> sample_keys(const RedisSettings& settings, std::size_t limit);

// What `check --live` asks a Redis: every master's eviction policy and persistence (CONFIG GET;
// nullopt where a managed Redis refuses CONFIG), and a sample of up to `sample` keys matching
// `match` from each master.
struct ServerFacts {
  std::vector<core::RedisNodeFacts> nodes;
  std::int64_t sampled_keys = 0;
  std::int64_t sampled_without_expiry = 0;
  std::optional<std::int64_t> max_pttl_ms;
};
ServerFacts inspect_server(const RedisSettings& settings, const std::string& match, std::int64_t sample);

} // namespace dedupctl::connectors::redis
