#pragma once

#include "core/audit/audit_analyzer.hpp"
#include "core/audit/coverage.hpp"
#include "core/store/layout.hpp"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// The [[consumer]] declarations `dedupctl check` reads (man dedupctl-check).
namespace dedupctl::core {

struct SourcePosition {
  int line = 0;
  int column = 0;
};

enum class Placement { Redis, Postgres, Memory, Design, Dynamodb, Kstreams };
std::string_view to_string(Placement placement);

struct ConsumerDeclaration {
  std::string name;
  SourcePosition at;                            // the [[consumer]] header
  std::map<std::string, SourcePosition> fields; // where each key was written
  std::string topic;
  std::string group;
  Placement placement = Placement::Redis;
  std::string store;
  std::string key_template;
  std::optional<Span> ttl;
  std::optional<Span> retention;
  std::int64_t max_lag_ms = 0;
  SideEffect side_effects = SideEffect::External;
  std::string inbox_table;
  std::string inbox_id_column;
  std::string inbox_consumer_column;
  std::string inbox_time_column;
  std::string inbox_status_column;
  std::optional<Span> inbox_retention;
  // `layout` (default plain), with `key_prefix` and `collection`: the key template, the inbox's table
  // and columns, and the TTL come from the library's layout where they are not written.
  RecordLayout layout;
  std::string key_prefix;
  std::string collection;
  // The ttl is the library's default (Powertools' expires_after_seconds, 1h): none was written.
  bool ttl_from_layout = false;
  // kstreams: the processor's lookup window and time base (lookup_time = "record" or "stream"), and the
  // seeks the team declares it makes (`seeks`, how far back each reaches), checked against the store's
  // retention (`ttl`).
  std::optional<std::int64_t> lookup_window_ms;
  bool lookup_stream_time = false;
  std::vector<std::int64_t> seeks_ms;
  // dynamodb: the read units an audit or snapshot of the table may cost before check --live warns.
  std::optional<double> max_read_units;
  // One tier of a chain ([[consumer.tier]] tables, in lookup order): `name` is then "NAME (tier K)",
  // `chain` the consumer's own name, `tier` K (from 1) and `tiers` the chain's length; 0 for a
  // consumer of one placement.
  std::string chain;
  int tier = 0;
  int tiers = 0;

  // The line of a field when it was written, else the consumer's header.
  SourcePosition position_of(const std::string& field) const;
};

struct DeclarationError {
  SourcePosition at;
  std::string message;
};

struct Declarations {
  std::vector<ConsumerDeclaration> consumers;
  std::vector<DeclarationError> errors; // every error of the file, in order
};

// Parses the text of a declarations file; never throws for bad content (errors are collected). A
// consumer with [[consumer.tier]] tables is one declaration a tier, in lookup order, each with the
// consumer's name, topic, group, retention, max lag and side effects, and its own placement.
Declarations parse_declarations(std::string_view text, std::string_view path);

} // namespace dedupctl::core
