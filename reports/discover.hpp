#pragma once

#include "core/discover/discover.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

// What dedupctl discover prints (dedupctl-discover(1)): its own document, not report-v1, which it
// writes only when it fails.
namespace dedupctl::reports {

struct DiscoverReport {
  struct Candidate {
    core::LayoutCandidate candidate;
    std::string command; // the audit command line that reads the store this way
  };
  std::vector<Candidate> candidates; // best first
  std::size_t sampled_ids = 0;
  std::int64_t sampled_keys = 0;
  std::vector<std::string> tried;
  std::vector<std::string> skipped; // candidates that could not read their table, and why
};

// A candidate a line (the share found, the layout, the collection) with its command below; or, as
// JSON, {"candidates": [{layout, key_template, key_prefix, collection, matched, found, sampled,
// command}], sampled_ids, sampled_keys, tried, skipped}; skipped candidates a "skipped" line each.
void render_discover_text(const DiscoverReport& report, std::FILE* out);
void render_discover_json(const DiscoverReport& report, std::FILE* out);

} // namespace dedupctl::reports
