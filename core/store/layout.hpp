#pragma once

#include "core/store/inbox_schema.hpp"
#include "core/store/kstreams_window.hpp"
#include "core/store/record_state.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// How the library that writes the dedup records shapes them (docs/design.md, "Record layouts"): how
// a key is derived from the id, whether each id has a key of its own or is a member of one hash, set
// or sorted set, where the record's state lives, when it lapses, and what the library does when the
// event comes again. Data plus small rules; the connectors send the commands a shape needs.
namespace dedupctl::core {

// Where a record lives.
enum class RecordShape {
  Key,          // a string key per id (plain, Powertools, camel-string)
  HashField,    // a field of one hash (spring-hash): HMGET
  SetMember,    // a member of one set (camel-set): SMISMEMBER
  ScoredMember, // a member of one sorted set whose score is its expiry in epoch seconds: ZMSCORE
  BloomMember,  // an id added to one Bloom filter (RedisBloom, Redis 8, valkey-bloom): BF.MEXISTS; "maybe" is present
};

// What a record's value says.
enum class RecordValue {
  Marker,        // anything; a claim marker ("processing", "INPROGRESS") while in progress
  Json,          // JSON fields: a status, the library's own expiry, a claim's lease (Powertools)
  TimeMs,        // the time the id was seen, in epoch milliseconds, as text (Spring's metadata store)
  Membership,    // nothing: being there is the record
  ExpirySeconds, // the sorted set's score
};

// How the library reads its JSON record (json.loads and Python's comparisons, or JSON.parse and
// JavaScript's): which values are expired, which claims lapsed, and which records it takes over or
// fails on (tests/real-kafka's differential test runs each library over a table of values).
enum class JsonReader {
  // Powertools for Python: expired when bool(expiration and int(now) > expiration) (0, null, "" never
  // expire; a non-empty string fails); a claim lapses when in_progress_expiration <= now in ms (none:
  // never); a value json.loads cannot read is taken over; a record that is not an object, lacks its
  // status, or has one it does not know fails.
  Python,
  // Powertools for TypeScript: expired when Date.now() / 1000 > Number(expiration) (null is 0, text is
  // converted, NaN never expires); a claim lapses unless its lease is truthy and above now (none: at
  // once); a value JSON.parse cannot read, or null, is taken over; an unknown or missing status fails.
  JavaScript,
};

// The JSON fields of a Json layout, with the time units the library writes them in.
struct JsonRecordFields {
  std::string status = "status";
  std::string expiration = "expiration"; // "" when the library writes none
  bool expiration_ms = false;            // epoch milliseconds rather than seconds
  std::string in_progress_expiration = "in_progress_expiration";
  bool in_progress_expiration_ms = true;
  std::vector<std::string> in_progress{"INPROGRESS"};
  std::vector<std::string> completed{"COMPLETED"};
  std::vector<std::string> taken_over{"EXPIRED"}; // statuses the library takes over and applies again
  // A status in none of the lists: the library fails on the record (Powertools' InvalidStatusError:
  // no delivery applies the event) rather than taking it over (the generic json layout).
  bool unknown_status_fails = true;
  JsonReader reader = JsonReader::Python;
  // The records are DynamoDB items (core::as_dynamodb_layout): the library claims with a conditional
  // PutItem (`expiration < :now`, or an INPROGRESS claim's `in_progress_expiration < :now_in_millis`,
  // in DynamoDB's numbers) and reads the item only when that fails, so that any number decides the
  // takeover (0 included), a claim without a lease blocks, and a status EXPIRED or unknown fails.
  bool conditional_put = false;
};

// Where a record lives in a DynamoDB table: the key the layout derives is the partition key's value,
// or, with a sort key, the sort key's under one static partition key (Powertools' static_pk_value).
struct DynamoKeySchema {
  std::string partition = "id";
  std::string sort;             // "" : the table has a partition key only
  std::string static_partition; // with `sort`: the partition key's one value
};

// Which stores hold a layout's records: the one answer to "does this layout fit this store"
// (check_layout_home), where each store kind's family asks it. Any: plain, a key per id with any
// value, read from every store (a key, an inbox's generic row, an item). Redis: a library's records in
// Redis keys, hashes or sets (a DynamoDB table too, for the JSON ones). Inbox: a library's rows in a
// PostgreSQL table. Dynamodb: a library that writes its records to DynamoDB alone (Powertools for
// Java). A snapshot file holds what its store held, so it takes every home.
// Window: an in-process window of ids (memory:), simulated against the log rather than read.
// Dump: a Bloom filter a library wrote to a file itself (bits-and-blooms' WriteTo, Guava's writeTo),
// read from file: alone.
// Projection: no dedup record at all; the handler's own table (or Redis key) per entity, whose version
// a guard compares (--layout version-guard): PostgreSQL or Redis.
// Changelog: a Kafka Streams state store, read from its changelog topic (kstreams://).
enum class LayoutHome { Any, Redis, Inbox, Dynamodb, Window, Dump, Projection, Changelog };

// A version guard's projection (--layout version-guard): the entity's row and its version column in
// PostgreSQL (--inbox-table), or a Redis key per entity (--key-template) holding the version, or a
// hash of it with the version in a field.
// A state guard's (--layout state-guard) is the same with the entity's state in place of its version
// (state-column, state-field) and the table of its transitions (a TOML file, read by the command).
struct ProjectionSpec {
  std::string entity_column = "id";
  std::string version_column = "version"; // a state guard's: its state column ("status")
  std::string version_field; // Redis: the hash field holding the version (or state); "": the key's string value
  bool states = false;       // --layout state-guard
  std::string transitions;   // its --layout-option transitions=FILE
};

// An in-process window's structure (docs/windows.md): an LRU of the last `capacity` ids; the LRU
// with a Bloom filter behind it whose "maybe" means skip; a Bloom filter whose "maybe" is decided by a
// bounded insertion-ordered set of `capacity` ids (an id not in it is treated as new).
enum class WindowKind { None, Lru, LruBloom, BloomExact };
// Whose hashing the Bloom filter uses: bits-and-blooms/bloom v3 (Go) or Guava's BloomFilter (Java).
enum class BloomImpl { BitsAndBlooms, Guava };
// Whether one window serves one partition, or all the partitions one consumer is assigned.
enum class WindowScope { Partition, Consumer };

std::string_view to_string(WindowKind kind);   // "lru", "lru-bloom", "bloom-exact" ("" for None)
std::string_view to_string(BloomImpl impl);    // "bits-and-blooms", "guava"
std::string_view to_string(WindowScope scope); // "partition", "consumer"

struct WindowSpec {
  WindowKind kind = WindowKind::None;
  std::uint64_t capacity = 0;    // the LRU's entries, or the exact set's ids
  std::uint64_t bloom_items = 0; // the Bloom's expected ids, as the consumer sized it
  double bloom_fp = 0;           // its false-positive rate, as the consumer sized it
  BloomImpl bloom_impl = BloomImpl::BitsAndBlooms;
  bool bloom_impl_named = false; // given by --layout-option bloom-impl (a dump's reader needs it)
  WindowScope scope = WindowScope::Partition;

  bool has_bloom() const { return kind == WindowKind::LruBloom || kind == WindowKind::BloomExact; }
};

// A Kafka Streams dedup store (--layout kstreams-window, kstreams-kv; docs/kafka-streams.md): how the
// processor keys it, how far around an event it looks, by which time, and which reading of the store the
// verdicts take (a restored instance's, or one restarted on its local state).
struct ChangelogSpec {
  bool key_value = false; // kstreams-kv: a key-value store, compacted; a record never lapses
  KeySerde serde = KeySerde::String;
  std::optional<std::int64_t> lookup_window_ms; // W: fetch(id, t - W/2, t + W/2)
  bool stream_time = false;                     // the lookup is around the task's stream time, not the record's
  bool kept_state = false;                      // state=kept: the instance restarts on its local state
  std::string changelog_topic;                  // "": APPLICATION_ID-STORE-changelog
};

struct RecordLayout {
  std::string name = "plain";
  LayoutHome home = LayoutHome::Any;
  std::string library; // who writes it, for --help and the man page
  RecordShape shape = RecordShape::Key;
  RecordValue value = RecordValue::Marker;
  JsonRecordFields json;
  // The key (or the member/field) the library derives from the id; "{prefix}" stands for
  // --key-prefix (or --collection, for camel-string's repository name).
  std::string key_template = "{event_id}";
  bool needs_prefix = false;
  // One-key shapes: the hash, set or sorted set, as named (the default when --collection is not given).
  std::string collection;
  bool java_collection = false; // written through Java's serialization (camel-set): the name on the wire is
                                // Java's serialized String, not the text
  bool java_key = false;        // the whole key so (camel-string through Spring's default RedisTemplate):
                                // its lookup template is KeyTemplate::serialize_as_java()
  // Keys that live beside the records and are not records (Powertools' "KEY:lock"): a snapshot
  // leaves them out.
  std::string not_a_record_suffix;
  // What the library does with a claim whose own lease (claim_until_ms) passed: takes it over and
  // applies the event again (Powertools), where a plain claim is skipped by every delivery.
  bool orphans_reapplied = false;
  // An inbox layout (home Inbox): the library's table, columns, time column type and in-progress
  // rule; its scope column is filled by --consumer, or `default_consumer` (Spring's REGION).
  InboxSchema inbox_schema;
  std::string default_consumer;
  std::vector<std::string> in_progress_statuses; // status values that mean in progress (Wolverine's Incoming)
  // The TTL the library gives its records unless told otherwise (Powertools' expires_after_seconds,
  // 3600 s); 0 when it has none, or none is known.
  std::int64_t default_ttl_ms = 0;
  std::string default_ttl_source; // where that TTL comes from, for a finding's title
  // The records never expire: every id stays in the one hash or set (spring-hash, camel-set).
  bool never_expires = false;
  // In a DynamoDB table (Json layouts only): its key attributes; the record's value is the item's
  // scalar attributes as a JSON object.
  DynamoKeySchema dynamodb;
  // A window layout (home Window): its structure and sizes, from --layout-option.
  WindowSpec window;
  // A version guard (home Projection): where the projection keeps each entity's version.
  ProjectionSpec projection;
  // A Kafka Streams store (home Changelog): its processor's keys, window and time.
  ChangelogSpec changelog;

  bool inbox() const { return home == LayoutHome::Inbox; }
  bool version_guard() const { return home == LayoutHome::Projection; }
};

// Every layout's name, in the order --help lists them.
std::vector<std::string_view> layout_names();
std::string layout_names_text(); // the same, comma-separated
// The layout named; throws UsageError naming it and listing the layouts.
RecordLayout find_layout(std::string_view name);
// The window layouts (lru, lru-bloom, bloom-exact: home Window), and one --layout-option of theirs
// applied to `spec` (UsageError naming the option and listing the names); window_layout.cpp.
std::vector<RecordLayout> window_layouts();
void apply_window_option(WindowSpec& spec, std::string_view option);
// A window layout's options all given (capacity; bloom-items and bloom-fp for a Bloom): throws
// UsageError naming what is missing.
void check_window_options(const RecordLayout& layout);
// The Kafka Streams layouts (kstreams-window, kstreams-kv: home Changelog), one --layout-option of theirs
// applied to `spec` (key-serde, lookup-window, time, state, changelog-topic; UsageError naming the option
// and listing the names), and their options checked whole (a window store's lookup-window given);
// changelog_layout.cpp.
std::vector<RecordLayout> changelog_layouts();
void apply_changelog_option(RecordLayout& layout, std::string_view option);
void check_changelog_options(const RecordLayout& layout);
// --layout-option NAME=VALUE for a window layout (capacity, bloom-items, bloom-fp, bloom-impl,
// scope), a library's dump (bloom-impl), or for the generic json layout (status-field, expiration-field,
// expiration-unit, in-progress-expiration-field, in-progress-expiration-unit, in-progress,
// completed, orphans; for DynamoDB partition-key, sort-key, static-partition-key); throws UsageError
// naming the option and listing the names.
void apply_layout_option(RecordLayout& layout, std::string_view option);

// The key template an audit renders: `explicit_template` (--key-template) when given, else the
// layout's with "{prefix}" replaced by `prefix` (braces in it doubled, so that they stay literal).
// Throws UsageError when the layout needs a prefix and neither is given.
std::string layout_key_template(const RecordLayout& layout, std::string_view prefix,
                                std::string_view explicit_template);
// The one key a one-key shape keeps its records under, as the server holds it (camel-set's name
// Java-serialized); `collection` is --collection or "" for the layout's own.
std::string collection_key(const RecordLayout& layout, std::string_view collection);
bool one_key(const RecordLayout& layout);

// Whether the layout reads anything from a record's value (JSON fields, a time, a score), not only
// whether the record is there (a claim marker aside).
bool reads_value(const RecordLayout& layout);

// Reads a present record's value (the whole of it for Json layouts; a hash field's value; a score
// as text) into `state` as the layout says: claim, claim_until_ms, expires_at_ms, unreadable,
// layout_read, and for Json layouts what the library does with a record it cannot use (taken_over,
// fails).
// `spare`: how many bytes past the value's end may be read (its buffer's spare capacity). With
// k_record_padding of them a JSON record is parsed where it lies; with fewer it is copied first.
void read_record_value(const RecordLayout& layout, std::string_view value, RecordState& state, std::size_t spare = 0);

// The spare bytes a JSON record's buffer keeps past its end to be parsed in place (the JSON
// parser's padding): a lookup of a kilobyte-sized record a key saves a copy of every value.
inline constexpr std::size_t k_record_padding = 64;

// A record as the library wrote it, for trace's record.fields: the JSON fields the rules read (and
// every other scalar field but data, which holds the handler's response), the hash field's time,
// the score as an expiry. Empty for Marker and Membership layouts.
std::vector<std::pair<std::string, std::string>> record_fields(const RecordLayout& layout, std::string_view value);
// The scalar fields of a JSON object, each as text (strings as they are, numbers and the rest as
// JSON writes them), in order, but `skip` and nested objects and arrays; empty for what is not an
// object. An inbox row as row_to_json gives it goes through here too.
std::vector<std::pair<std::string, std::string>> json_scalar_fields(std::string_view json, std::string_view skip = "");

// The value a snapshot keeps of a record: for Json layouts the fields the rules read, as compact
// JSON (a Powertools record's `data` can be kilobytes), otherwise the value as read.
std::string snapshot_value(const RecordLayout& layout, std::string_view value);

// The records a JSON layout's library writes, for replay --via: its claim while the event is
// published (status in progress, the record's expiration and the claim's lease in the layout's units,
// and this run's id in a field of its own, "dedupctl_run", which the libraries ignore, so that a rerun
// knows its own claims), then its completed record. Powertools for Python writes the expiration as
// int(now) + expires_after_seconds: whole seconds, rounded down.
std::string json_claim_record(const RecordLayout& layout, std::int64_t expires_at_ms, std::int64_t lease_until_ms,
                              std::string_view run_id);
std::string json_completed_record(const RecordLayout& layout, std::int64_t expires_at_ms);
// Whether a value is the claim json_claim_record wrote for `run_id`.
bool is_own_json_claim(std::string_view value, std::string_view run_id);

} // namespace dedupctl::core
