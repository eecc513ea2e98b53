#pragma once

#include "reports/report.hpp"

#include <string>

// Pieces the human-readable renderers (text, markdown) share.
namespace dedupctl::reports::detail {

// "orders[3]"
std::string partition_name(const std::string& topic, std::int32_t partition);

// A summary counter's name as people read it: "log_duplicates" → "log duplicates".
std::string counter_label(const std::string& name);

// summary.effects as people read it: (report-v1 name, label, count), checked first.
struct EffectRow {
  std::string name; // "effects.lost"
  std::string label;
  std::int64_t count = 0;
};
std::vector<EffectRow> effect_rows(const core::EffectCounts& effects);

// An incomplete run says nothing of what a seek would re-apply or where it is safe from (report-v1:
// an incomplete report is never a clean verdict); this line stands in their place.
inline constexpr const char* k_replay_unknown =
    "not known: the run did not read everything, so it gives neither what a seek would re-apply nor an offset to "
    "seek to";

// "1 error, 2 warnings, 0 info"
std::string severity_tally(const Report& report);

// The closing sentence: the verdict, or why there is none.
std::string verdict_sentence(const Report& report);

// "e-17 orders[0]@17 2026-11-20T02:00:00.000Z" and the note, for one example.
std::string example_line(const core::Example& example);

// The coverage table's columns, in report-v1 order, and their headings.
inline constexpr core::Coverage k_coverage_columns[] = {
    core::Coverage::Covered, core::Coverage::Expiring,   core::Coverage::Expired,  core::Coverage::Missing,
    core::Coverage::Pending, core::Coverage::InProgress, core::Coverage::Orphaned, core::Coverage::NoId};

// A table as rows of cells, the first row its headings.
using Table = std::vector<std::vector<std::string>>;

// A chain's tiers in lookup order, each with what it alone holds: headings as report-v1 names
// ("tier", "store", "layout", "ttl", the counters, "held_elsewhere"), for each renderer to word.
Table tier_table(const std::vector<TierReport>& tiers);

// memory:'s window as simulated: its shape ("lru of 100 ids, one window a partition; Bloom …") and,
// as (label, count) rows, what it did; a bound is "L to H".
std::string window_shape(const core::WindowSummary& w);
Table window_rows(const core::WindowSummary& w);

// & < > " ' as entities, for XML (JUnit) and HTML text and attributes; a byte that is not part of
// whole UTF-8 as \xHH (an event id read as bytes), so that the document stays well-formed.
std::string xml_escape(std::string_view text);

} // namespace dedupctl::reports::detail
