#pragma once

#include "connectors/postgres/inbox_store.hpp"
#include "core/scan/version_analyzer.hpp"
#include "core/store/dedup_store.hpp"

#include <memory>
#include <string>

// A version guard's projection (--layout version-guard): the handler's own table, a row per entity,
// read for each entity's version. No dedup record is involved: the guard compares the event's version
// with this one.
namespace dedupctl::connectors::postgres {

struct ProjectionSettings {
  InboxSettings session;      // conninfo, timeout, stop; schema.table is the projection's table
  std::string entity_column;  // the row's entity (--layout-option entity-column)
  std::string version_column; // its version (--layout-option version-column), or its state
  bool states = false;        // a state guard's (--layout-option state-column): text or an enum
  core::VersionOrder order = core::VersionOrder::Numeric;
};

// Connects (read-only) and checks the table, both columns, and that the version column's type is one
// the order compares (numbers for numeric, text for lexical, times for rfc3339): a UsageError names
// the column, its type and what fits. The keys looked up are entities; a present row's value is its
// version as text (a time in RFC 3339, UTC, milliseconds).
std::unique_ptr<core::DedupStore> open_projection_store(const ProjectionSettings& settings);

} // namespace dedupctl::connectors::postgres
