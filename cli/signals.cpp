#include "cli/signals.hpp"

#include <csignal>

namespace dedupctl::cli {

namespace {

std::atomic<bool>* g_stop = nullptr;
std::atomic<bool>* g_reload = nullptr;

extern "C" void on_reload_signal(int) {
  if (g_reload) {
    g_reload->store(true);
  }
}

extern "C" void on_stop_signal(int) {
  if (g_stop) {
    g_stop->store(true);
  }
}

} // namespace

void install_stop_handlers(std::atomic<bool>& stop) {
  static_assert(std::atomic<bool>::is_always_lock_free, "the stop flag is set from a signal handler");
  g_stop = &stop;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND; // the second signal takes the default action
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // A write to a socket the server closed (hiredis and OpenSSL write without MSG_NOSIGNAL, a Redis
  // connection killed mid-pipeline) or to a reader that went away fails with EPIPE and is reported
  // like any failed write (exit 3), as redis-cli does, instead of killing the run without a report.
  std::signal(SIGPIPE, SIG_IGN);
}

void install_reload_handler(std::atomic<bool>& reload) {
  g_reload = &reload;
  struct sigaction action {};
  action.sa_handler = on_reload_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGHUP, &action, nullptr);
}

} // namespace dedupctl::cli
