#pragma once

#include "core/store/layout.hpp"
#include "core/store/store_uri.hpp"

namespace dedupctl::core {

// Whether a store of `kind` holds records of `layout` (its LayoutHome): the one place that says which
// layout fits which store. Throws UsageError naming the layout, where its records live, and the
// store given. A file (a snapshot, a scan or export) holds what its store held: every home fits it.
void check_layout_home(const RecordLayout& layout, StoreUri::Kind kind);

} // namespace dedupctl::core
