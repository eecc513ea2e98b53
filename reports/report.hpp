#pragma once

#include "core/audit/audit_result.hpp"
#include "core/audit/coverage.hpp"
#include "core/audit/effects.hpp"
#include "core/audit/ttl.hpp"
#include "core/finding.hpp"
#include "core/source/source_info.hpp"
#include "core/trace/trace.hpp"
#include "core/window/window_analyzer.hpp"

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dedupctl::reports {

// The placement an audit looked at (report-v1 "placement").
// Where the consumer's effects were looked up (--effects): report-v1 placement.effects.
// Where --effects reads the consumer's effects: a table's rows, Redis keys, an output topic's records.
enum class EffectsKind { Postgres, Redis, Kafka };
std::string_view to_string(EffectsKind kind); // postgres, redis, kafka: as report-v1 names it

struct EffectsPlacement {
  EffectsKind kind = EffectsKind::Postgres;
  std::string store; // the URI, password redacted
  std::string table; // postgres
  std::string column;
  std::string key_template; // redis
  std::string topic;        // kafka
};

struct PlacementInfo {
  std::string kind;  // redis, file, postgres
  std::string store; // the URI, password redacted
  std::string key_template;
  std::string layout = "plain"; // the record layout (core/store/layout)
  std::string collection;       // a one-key layout's key, as given (readable; "" for the others)
  std::string consumer;
  core::TtlDecision ttl;
  std::optional<core::RetentionDecision> retention; // nullopt where it is not the command's concern (replay)
  std::optional<EffectsPlacement> effects;
};

// One tier of a chain (audit with --store repeated, docs/windows.md "Tiers"): where it is, and what
// it alone holds.
struct TierReport {
  PlacementInfo placement;      // kind, store (redacted), layout, key template, consumer, its TTL
  bool survives_restart = true; // false: a window in memory
  // covered … orphaned and no_expiry, as summary names them, of this tier's records alone.
  std::vector<std::pair<std::string, std::int64_t>> counts;
  std::int64_t held_by_others = 0; // events it lacks or lets lapse that another tier holds
  std::int64_t key_collisions = 0; // of its keys (summary.key_collisions adds the tiers')
};

// One invocation's result, whatever the format: the model every renderer reads.
struct Report {
  std::string command;
  std::int64_t generated_at_ms = 0;
  bool complete = true;
  int exit_code = 0;
  std::optional<std::string> error; // why the report is incomplete, or the usage error
  std::optional<core::SourceInfo> source;
  // In report-v1 order; each command fills the counters it knows.
  std::vector<std::pair<std::string, std::int64_t>> summary;
  std::optional<core::EffectCounts> effects; // summary.effects, with --effects
  std::optional<core::WindowSummary> window; // summary.window: memory: with a window layout
  std::vector<core::Finding> findings;
  std::optional<PlacementInfo> placement;
  std::vector<TierReport> tiers; // placement.tiers and summary.tiers: a chain of two or more
  std::optional<core::ReplaySummary> replay;
  std::vector<core::PartitionCoverage> coverage; // per partition, audit only
  std::vector<std::string> subjects;             // what was checked (check: the consumers), for JUnit
  std::vector<core::Trace> traces;               // trace: one per requested id, in request order
  // What the run used (id specs, window, fail-on …), for people reading text or markdown.
  std::vector<std::pair<std::string, std::string>> settings;
  // Of the settings an option sets: where its value came from ("flag", "config", "environment",
  // "default"), by setting name.
  std::map<std::string, std::string> settings_origin;
  std::string fail_on = "error";

  // Where a setting's value came from, "" when no option sets it.
  std::string_view setting_origin(const std::string& name) const {
    auto it = settings_origin.find(name);
    return it == settings_origin.end() ? std::string_view{} : std::string_view(it->second);
  }
};

enum class Format { Text, Json, Markdown, Sarif, Junit, Github, Gitlab, Html };

// Throws UsageError for an unknown name.
Format parse_format(std::string_view name);
std::string_view to_string(Format format);

struct RenderOptions {
  bool color = false;
};

// Writes the report to `out`. Throws UsageError for a format the command does not offer.
void render(const Report& report, Format format, std::FILE* out, const RenderOptions& options = {});
// The same, as a string (rendered into memory).
std::string render_to_string(const Report& report, Format format, const RenderOptions& options = {});

void render_json(const Report& report, std::FILE* out);
void render_text(const Report& report, std::FILE* out, const RenderOptions& options);
void render_markdown(const Report& report, std::FILE* out);
void render_sarif(const Report& report, std::FILE* out);
void render_junit(const Report& report, std::FILE* out);
void render_github(const Report& report, std::FILE* out);
void render_gitlab(const Report& report, std::FILE* out);
void render_html(const Report& report, std::FILE* out);

} // namespace dedupctl::reports
