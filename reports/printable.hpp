#pragma once

#include "reports/report.hpp"

#include <functional>
#include <string>
#include <string_view>

// What a terminal or a markdown viewer must never obey: an event id, key or type from the log may
// carry ESC, OSC or C1 bytes that recolour or retitle the operator's terminal. The human formats
// (text, markdown, github) render a copy of the report with every such byte escaped; the machine
// formats escape by their own rules (JSON \u001b, XML and HTML entities).
namespace dedupctl::reports {

// C0 controls and DEL as \xHH (newlines too, unless kept), UTF-8 C1 controls as \u00HH; everything
// else as it is.
std::string printable(std::string_view text, bool keep_newlines = false);

// Changes a string of the report in place; `multiline` for a finding's title and advice.
using StringFix = std::function<void(std::string& text, bool multiline)>;

// The report with `fix` applied to every string that came from outside or may echo it (ids, keys,
// types, topics, values, notes, titles, settings, the error): the one walk over a report's strings.
Report with_strings_fixed(Report report, const StringFix& fix);

// The report with every string that came from outside (ids, keys, types, topics, values, notes,
// titles, settings) made printable.
Report printable(Report report);

} // namespace dedupctl::reports
