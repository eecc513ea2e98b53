#pragma once

#include "core/source/partition.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

// The offset/time SPEC grammar of dedupctl(1) and its resolution against one partition's facts.
// Pure: the connector asks the broker for the facts, this file decides.
namespace dedupctl::core {

enum class SpecKind {
  Earliest,  // log start
  Latest,    // log end
  Committed, // the group's committed offset
  Absolute,  // N
  Relative,  // -N: N records before the end (--from/--to) or before committed (--seek)
  Timestamp, // @TIME, s@MS, e@MS: first offset whose timestamp >= TIME
  Ago,       // -DURATION: @(now - DURATION)
};

struct OffsetSpec {
  SpecKind kind = SpecKind::Earliest;
  std::int64_t value = 0; // the offset, the count, the epoch ms or the duration, by kind
  std::string text;       // as the user wrote it, for messages
};

// Throws UsageError naming `what` (e.g. "--from") when the text is not a SPEC.
OffsetSpec parse_offset_spec(std::string_view text, std::string_view what);

// The timestamp a SPEC asks for, if it asks for one (Ago is resolved against now).
std::optional<std::int64_t> spec_timestamp(const OffsetSpec& spec, std::int64_t now_ms);

// Why [from, to) is empty whatever the log holds (from after to, both offsets, both counts from the
// end, or both times), for a usage error; nullopt when only the broker can tell.
std::optional<std::string> inverted_range(const OffsetSpec& from, const OffsetSpec& to, std::int64_t now_ms);

enum class SpecRole { From, To, Seek };

struct ResolvedOffset {
  std::int64_t offset = 0;
  // A requested start before the log start was clamped to it (a range-clamped finding).
  bool clamped = false;
  std::int64_t requested = 0;
  // The broker could not answer the timestamp lookup although the partition holds data: read from
  // `offset` and skip events until the first whose timestamp >= this (For To: stop there).
  std::optional<std::int64_t> timestamp_filter;
  // Committed was asked for but the group has no committed offset here.
  bool no_committed = false;
};

// Resolves a SPEC for one partition. `now_ms` is only used by Ago specs.
// Throws UsageError for `committed` without a group (committed facts absent and has_group false).
ResolvedOffset resolve_offset(const OffsetSpec& spec, SpecRole role, const PartitionFacts& facts, bool has_group,
                              std::int64_t now_ms);

} // namespace dedupctl::core
