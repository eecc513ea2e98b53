#include "reports/discover.hpp"

#include "core/util/encoding.hpp"
#include "reports/printable.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dedupctl::reports {

namespace {

double share(const core::LayoutCandidate& c, std::size_t sampled) {
  return static_cast<double>(c.found) / static_cast<double>(sampled);
}

nlohmann::json text_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json() : nlohmann::json(core::escape_non_utf8(text));
}

} // namespace

// Text for a terminal: what came from the store (a collection's name, a prefix in the command) with
// its control bytes escaped, as every human format does (reports/printable).
void render_discover_text(const DiscoverReport& report, std::FILE* out) {
  for (const auto& [c, command] : report.candidates) {
    std::string collection = c.collection.empty() ? "" : "  collection " + core::escape_non_utf8(c.collection);
    std::string lines = fmt::format("{:5.1f} %  {} of {} sampled ids  --layout {}{}\n        {}\n",
                                    100.0 * share(c, report.sampled_ids), c.found, report.sampled_ids, c.layout.name,
                                    collection, command);
    fmt::print(out, "{}", printable(lines, true));
  }
  for (const auto& why : report.skipped) {
    fmt::print(out, "skipped  {}\n", printable(why));
  }
}

void render_discover_json(const DiscoverReport& report, std::FILE* out) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& [c, command] : report.candidates) {
    candidates.push_back({{"layout", c.layout.name},
                          {"key_template", core::escape_non_utf8(c.lookup_template())},
                          {"key_prefix", text_or_null(c.key_prefix)},
                          {"collection", text_or_null(c.collection)},
                          {"matched", share(c, report.sampled_ids)},
                          {"found", c.found},
                          {"sampled", report.sampled_ids},
                          {"command", command}});
  }
  nlohmann::json doc{{"candidates", candidates},
                     {"sampled_ids", report.sampled_ids},
                     {"sampled_keys", report.sampled_keys},
                     {"tried", report.tried},
                     {"skipped", report.skipped}};
  fmt::print(out, "{}\n", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace dedupctl::reports
