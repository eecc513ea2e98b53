#pragma once

#include <atomic>

namespace dedupctl::cli {

// SIGINT and SIGTERM raise `stop` (the readers check it between batches); a second SIGINT
// terminates at once, as in kcat.
void install_stop_handlers(std::atomic<bool>& stop);

} // namespace dedupctl::cli
