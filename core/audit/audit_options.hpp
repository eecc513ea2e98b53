#pragma once

#include "core/audit/coverage.hpp"
#include "core/audit/ttl.hpp"
#include "core/identity/key_template.hpp"
#include "core/side_effect.hpp"
#include "core/store/layout.hpp"

#include <cstddef>
#include <map>
#include <string>

namespace dedupctl::core {

// What an audit classifies with (parsed from the flags by commands/).
struct AuditOptions {
  CoveragePolicy policy;                          // policy.ttl is ignored: ttl decides
  TtlDecision ttl;                                // source None: estimated from the records
  std::map<std::string, SideEffect> side_effects; // unknown types are external
  KeyTemplate key_template = KeyTemplate::parse("{event_id}");
  std::size_t max_examples = 5;
  std::size_t expected_events = 1024;
  std::string window_label = "[from, to)"; // "[seek, committed)" with a seek
  // Partitions not announced with set_partition get a window of everything read (file sources).
  bool default_window = false;
  // Key collisions are looked for here (false: a merge of shards decides them over all shards'
  // keys and hands them in with add_key_collisions).
  bool check_collisions = true;
  // A one-key layout's collection (spring-hash, camel-set, zset), as named: its records share one
  // key, so records that never expire make that one key grow without bound.
  std::string collection;
  // Each event comes with its effect looked up (--effects): summary.effects, the lost and
  // unguarded findings, and the replay's split.
  bool effects = false;
  // Where the effects are read, as the effects-unmatched finding names it ("--effects postgres://… (t.c)").
  std::string effects_source;
  // The records are items of a DynamoDB table (a missing one was deleted, not flushed or evicted).
  bool dynamodb = false;
  // The records are an in-process window (memory:, kind set): the audit simulates it over the log
  // (core::WindowAnalyzer) beside the coverage, which a restart empties.
  WindowSpec window;
  // The records are a Bloom filter read live (redis-bloom): pending events it already holds, under a
  // key no consumed event carries, are false positives (core::BloomPending).
  bool bloom_filter = false;
  // The placement is the projection itself (--layout version-guard): the verdicts come from the version
  // walk (AuditAnalyzer::observe_guarded), the key is the entity's, and nothing expires.
  bool version_guard = false;
  bool state_guard = false; // with version_guard: --layout state-guard (the walk follows states, not versions)
  // The placement is a Kafka Streams store (kstreams://): the verdicts are its processor's over the fold of
  // its changelog (core::WindowStoreReplay, through observe_guarded), and the TTL is the store's retention.
  bool window_store = false;
};

} // namespace dedupctl::core
