#pragma once

#include "core/audit/retention.hpp"
#include "core/check/check_rules.hpp"
#include "core/check/declarations.hpp"
#include "reports/report.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace dedupctl::commands {

// The SCAN MATCH pattern of a template's records: its literal start (glob characters escaped) and *.
std::string key_pattern(const core::ConsumerDeclaration& consumer);

// Runs every static rule over the declarations and, with an inspector, the live ones. A live check
// that cannot run is a finding; only when none could run is the report incomplete (exit 3).
reports::Report run_check(const core::Declarations& declarations, const std::string& file, core::LiveInspector* live,
                          const core::FailOn& fail_on, const std::string& fail_on_text, std::int64_t now_ms);

} // namespace dedupctl::commands
