#include "commands/pipeline/discover.hpp"

#include "core/identity/key_template.hpp"
#include "core/util/encoding.hpp"
#include "core/util/errors.hpp"
#include "reports/printable.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_set>

namespace dedupctl::commands {

namespace {

std::vector<std::string> sample_ids(const DiscoverRequest& request, core::EventSource& source) {
  core::Identifier identifier(request.identify);
  core::EventBatch batch;
  std::vector<core::Identity> identities;
  std::vector<std::string> ids;
  std::unordered_set<std::string> seen;
  while (ids.size() < request.sample && source.next_batch(batch)) {
    identifier.identify(batch, identities);
    for (const auto& identity : identities) {
      if (identity.has_id && ids.size() < request.sample && seen.emplace(identity.id).second) {
        ids.emplace_back(identity.id);
      }
    }
  }
  return ids;
}

std::string describe(const core::LayoutCandidate& c) {
  std::string what;
  for (const auto& [flag, value] : core::audit_flags(c)) {
    what += fmt::format("{}{} {}", what.empty() ? "" : " ", flag, reports::printable(core::escape_non_utf8(value)));
  }
  return what;
}

// Keeps what a lookup found (the tried list names every candidate), most found first.
void keep_found(DiscoverResult& result, core::LayoutCandidate&& candidate) {
  result.tried.push_back(fmt::format("{}: {} of {}", describe(candidate), candidate.found, result.ids.size()));
  if (candidate.found > 0) {
    result.candidates.push_back(std::move(candidate));
  }
}

void order_found(DiscoverResult& result) {
  std::stable_sort(result.candidates.begin(), result.candidates.end(),
                   [](const auto& a, const auto& b) { return a.found > b.found; });
}

} // namespace

DiscoverResult run_discover(const DiscoverRequest& request, core::EventSource& source, InboxDiscoverStore& store) {
  DiscoverResult result;
  result.ids = sample_ids(request, source);
  if (result.ids.empty()) {
    return result;
  }
  auto tables = store.tables(request.scan_limit);
  result.keys_sampled = static_cast<std::int64_t>(tables.size());
  for (auto& candidate : core::inbox_candidates(tables)) {
    try {
      candidate.found = store.count_found(candidate, result.ids, candidate.consumer);
    } catch (const UsageError& e) {
      result.skipped.push_back(fmt::format("--layout {}: {}", candidate.layout.name, e.what()));
      continue;
    }
    keep_found(result, std::move(candidate));
  }
  order_found(result);
  return result;
}

DiscoverResult run_discover(const DiscoverRequest& request, core::EventSource& source, DiscoverStore& store) {
  DiscoverResult result;
  result.ids = sample_ids(request, source);
  if (result.ids.empty()) {
    return result;
  }
  auto keys = store.sample_keys(request.scan_limit);
  result.keys_sampled = static_cast<std::int64_t>(keys.size());
  std::vector<std::string> rendered;
  for (auto& candidate : core::layout_candidates(result.ids, keys)) {
    auto tmpl = core::KeyTemplate::parse(candidate.lookup_template());
    if (candidate.layout.java_key) {
      tmpl.serialize_as_java();
    }
    rendered.clear();
    for (const auto& id : result.ids) {
      std::string key;
      core::render_key(tmpl, core::KeyValues{id, "", "", "", 0, 0, "", "", nullptr}, key);
      rendered.push_back(std::move(key));
    }
    std::string collection =
        core::one_key(candidate.layout) ? core::collection_key(candidate.layout, candidate.collection) : "";
    candidate.found = store.count_found(candidate.layout, collection, rendered);
    keep_found(result, std::move(candidate));
  }
  order_found(result);
  return result;
}

} // namespace dedupctl::commands
