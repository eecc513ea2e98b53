#pragma once

#include <atomic>

namespace dedupctl::cli {

// SIGINT and SIGTERM raise `stop` (the readers check it between batches); a second SIGINT
// terminates at once, as in kcat. SIGPIPE is ignored: a broken pipe or socket is a failed write.
void install_stop_handlers(std::atomic<bool>& stop);
// SIGHUP raises `reload` (watch re-reads its config file); until then it is ignored, as a daemon does.
void install_reload_handler(std::atomic<bool>& reload);

} // namespace dedupctl::cli
