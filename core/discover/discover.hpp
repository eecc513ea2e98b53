#pragma once

#include "core/store/layout.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// dedupctl discover: which record layout, key template and collection a store's records follow,
// found from a sample of event ids and a bounded sample of the store's keys. Pure: the command
// samples, this file guesses, the store verifies each guess with real lookups.
namespace dedupctl::core {

// A key SCAN returned, with its type (string, hash, set, zset, …).
struct SampledKey {
  std::string key;
  std::string type;
};

// One way the store may hold the sampled ids.
struct LayoutCandidate {
  RecordLayout layout;
  std::string key_template; // as --key-template takes it; "" where the layout derives it from key_prefix
  std::string key_prefix;
  std::string collection;  // a one-key layout's key, readable (a Java-serialized name decoded)
  std::int64_t hinted = 0; // sampled ids whose key or member the sample of keys showed
  std::int64_t found = 0;  // sampled ids a lookup found under this candidate
  // An inbox layout's: the table as --inbox-table takes it (layout.inbox_schema.table too), the
  // consumer most of the found rows are scoped to, and the generic inbox's flags its columns need.
  std::string inbox_table;
  std::string consumer;
  std::vector<std::pair<std::string, std::string>> inbox_flags;
  // The template lookups render: the layout's with the prefix, or key_template.
  std::string lookup_template() const;
};

// The flags an audit takes to read the store as `candidate` says: --layout, and --key-prefix,
// --collection and --key-template where they are set.
std::vector<std::pair<std::string, std::string>> audit_flags(const LayoutCandidate& candidate);

// The derivations tried on every id (the filters of a placeholder), with the layout a match means.
struct Derivation {
  std::string filters; // "" (the id as it is), "json-ascii|md5", …
  std::string layout;  // "plain", "powertools-python", "powertools-typescript"
};
const std::vector<Derivation>& derivations();

// Key-per-id candidates: every string key that holds a sampled id's derivation (a prefix and suffix
// around it) gives a template; one candidate per template, with the ids it showed. Collections
// (hash, set, zset keys) give one candidate per one-key layout that fits their type; their members
// are verified by lookups only. Ordered by `hinted`, most first.
std::vector<LayoutCandidate> layout_candidates(const std::vector<std::string>& ids,
                                               const std::vector<SampledKey>& keys);

// A table of a PostgreSQL database with its columns, as the catalog names them.
struct TableColumns {
  std::string schema;
  std::string table;
  std::vector<std::string> columns;
};

// The table as --inbox-table takes it: schema-qualified outside public, each name quoted where
// PostgreSQL would otherwise fold it to lower case ("InboxState").
std::string inbox_table_name(const TableColumns& table);

// Inbox candidates: every table whose columns fit an inbox layout: the id and time columns and, where
// the layout has them, its consumer, status and in-progress columns, as the library names them (the
// table's own name may differ: NServiceBus names it after the endpoint). The generic inbox (plain)
// fits a table with event_id and processed_at. In the order of `tables`.
std::vector<LayoutCandidate> inbox_candidates(const std::vector<TableColumns>& tables);

// A Java-serialized String's text (Camel's set names), or nullopt when `bytes` is not one.
std::optional<std::string> java_string_text(std::string_view bytes);

} // namespace dedupctl::core
