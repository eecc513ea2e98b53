#include "reports/discover.hpp"

#include "core/util/encoding.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace dedupctl::reports {

namespace {

double share(const core::LayoutCandidate& c, std::size_t sampled) {
  return static_cast<double>(c.found) / static_cast<double>(sampled);
}

nlohmann::json text_or_null(const std::string& text) {
  return text.empty() ? nlohmann::json() : nlohmann::json(core::printable(text));
}

} // namespace

void render_discover_text(const DiscoverReport& report, std::FILE* out) {
  for (const auto& [c, command] : report.candidates) {
    fmt::print(out, "{:5.1f} %  {} of {} sampled ids  --layout {}{}\n        {}\n",
               100.0 * share(c, report.sampled_ids), c.found, report.sampled_ids, c.layout.name,
               c.collection.empty() ? std::string() : "  collection " + core::printable(c.collection), command);
  }
}

void render_discover_json(const DiscoverReport& report, std::FILE* out) {
  nlohmann::json candidates = nlohmann::json::array();
  for (const auto& [c, command] : report.candidates) {
    candidates.push_back({{"layout", c.layout.name},
                          {"key_template", core::printable(c.lookup_template())},
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
                     {"tried", report.tried}};
  fmt::print(out, "{}\n", doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace));
}

} // namespace dedupctl::reports
